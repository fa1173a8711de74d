// Reductions over a team: TEAM consecutive invocations (by local_invocation_index) that share
// one row. Put before a kernel by the host (`Shader::source`), with team_workgroup.wgsl or
// team_subgroups.wgsl after it; the kernel declares TEAM and WORKGROUP.
//
// Every function here and in those files holds barriers: call it in workgroup-uniform control
// flow, from every invocation of the workgroup, with no invocation returned early.

// An invocation's place for the team reductions: its local index, and whether its workgroup's
// teams lie in subgroups it can shuffle across (see team_subgroups.wgsl).
struct Team {
    li: u32,
    by_subgroup: bool,
}

// The members' values, one per invocation, for the reductions through workgroup memory.
var<workgroup> team_scratch: array<vec4<f32>, WORKGROUP>;

// The sum of `x` over the team, through workgroup memory.
fn team_sum4_in_workgroup(team: Team, x: vec4<f32>) -> vec4<f32> {
    workgroupBarrier();
    team_scratch[team.li] = x;
    workgroupBarrier();
    let first = team.li / TEAM * TEAM;
    var total = vec4<f32>(0.0);
    for (var j = 0u; j < TEAM; j++) {
        total += team_scratch[first + j];
    }
    return total;
}

// The largest `x` of the team, through workgroup memory.
fn team_max_in_workgroup(team: Team, x: f32) -> f32 {
    workgroupBarrier();
    team_scratch[team.li].x = x;
    workgroupBarrier();
    let first = team.li / TEAM * TEAM;
    var largest = team_scratch[first].x;
    for (var j = 1u; j < TEAM; j++) {
        largest = max(largest, team_scratch[first + j].x);
    }
    return largest;
}
