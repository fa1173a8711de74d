// The team reductions of team.wgsl through workgroup memory only: for adapters without
// subgroup operations (GL, or wgpu without Features::SUBGROUP).

// The team place of invocation `li`.
fn team_setup(li: u32) -> Team {
    return Team(li, false);
}

// The sum of `x` over the team.
fn team_sum4(team: Team, x: vec4<f32>) -> vec4<f32> {
    if (TEAM == 1u) {
        return x;
    }
    return team_sum4_in_workgroup(team, x);
}

// The largest `x` of the team.
fn team_max(team: Team, x: f32) -> f32 {
    if (TEAM == 1u) {
        return x;
    }
    return team_max_in_workgroup(team, x);
}
