// The team reductions of team.wgsl by subgroup shuffles where the workgroup's subgroups allow
// them, else through workgroup memory. The host takes this file only on adapters with
// Features::SUBGROUP (naga 29 takes the subgroup built-ins without `enable subgroups;`, and
// refuses that directive as not yet implemented).
//
// Shuffles need every team inside one subgroup at lanes that differ only in their low bits:
// WGSL does not promise how invocations map to lanes, so team_setup checks, per workgroup,
// that each subgroup holds consecutive invocations from a multiple of TEAM, in lane order, in
// a multiple of TEAM lanes. One failing invocation sends the whole workgroup through memory.

// Whether every invocation of the workgroup passed the check (1) or not (0).
var<workgroup> lanes_fit: atomic<u32>;
// `lanes_fit`, read once by invocation 0 for the workgroup-uniform load.
var<workgroup> lanes_fit_once: u32;

// The team place of invocation `li`.
fn team_setup(li: u32) -> Team {
    if (TEAM == 1u) {
        return Team(li, false);
    }
    let lane = subgroupExclusiveAdd(1u);
    let first = subgroupMin(li);
    let lanes = subgroupAdd(1u);
    let fits = li == first + lane && first % TEAM == 0u && lanes % TEAM == 0u;
    if (li == 0u) {
        atomicStore(&lanes_fit, 1u);
    }
    workgroupBarrier();
    if (!fits) {
        atomicStore(&lanes_fit, 0u);
    }
    workgroupBarrier();
    if (li == 0u) {
        lanes_fit_once = atomicLoad(&lanes_fit);
    }
    return Team(li, workgroupUniformLoad(&lanes_fit_once) == 1u);
}

// The sum of `x` over the team (a butterfly: every member gets the same bits).
fn team_sum4(team: Team, x: vec4<f32>) -> vec4<f32> {
    if (TEAM == 1u) {
        return x;
    }
    if (team.by_subgroup) {
        var total = x;
        for (var mask = 1u; mask < TEAM; mask <<= 1u) {
            total += subgroupShuffleXor(total, mask);
        }
        return total;
    }
    return team_sum4_in_workgroup(team, x);
}

// The largest `x` of the team.
fn team_max(team: Team, x: f32) -> f32 {
    if (TEAM == 1u) {
        return x;
    }
    if (team.by_subgroup) {
        var largest = x;
        for (var mask = 1u; mask < TEAM; mask <<= 1u) {
            largest = max(largest, subgroupShuffleXor(largest, mask));
        }
        return largest;
    }
    return team_max_in_workgroup(team, x);
}
