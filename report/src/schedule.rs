//! The 1F1B pipeline schedule of one step, simulated from per-stage times.

use megagraph_planner::{StageTime, one_forward_one_backward};

/// What a stage does in a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Forward of a micro-batch.
    Forward,
    /// Backward of a micro-batch.
    Backward,
    /// Gradient all-reduce and optimizer step, after the last backward.
    Update,
}

/// One busy interval of one stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Slot {
    pub stage: usize,
    /// The micro-batch (0 for [`Pass::Update`]).
    pub micro: usize,
    pub pass: Pass,
    pub start: f64,
    pub end: f64,
}

/// The order in which stage `stage` of `stages` runs `micro_batches` micro-batches: the
/// planner's 1F1B order, which the engine runs too.
fn order(stage: usize, stages: usize, micro_batches: usize) -> Vec<(Pass, usize)> {
    one_forward_one_backward(stage, stages, micro_batches)
        .into_iter()
        .map(|pass| match pass {
            megagraph_planner::Pass::Forward(i) => (Pass::Forward, i),
            megagraph_planner::Pass::Backward(i) => (Pass::Backward, i),
        })
        .collect()
}

/// Every slot of one step: each stage runs its 1F1B order as soon as its input is there (a
/// forward after the previous stage's forward of the same micro-batch, a backward after the
/// next stage's backward), then its update. Slots are in order of scheduling.
pub(crate) fn one_f_one_b(times: &[StageTime], micro_batches: usize) -> Vec<Slot> {
    let stages = times.len();
    let orders: Vec<_> = (0..stages)
        .map(|s| order(s, stages, micro_batches))
        .collect();
    let mut next = vec![0; stages];
    let mut free = vec![0.0; stages];
    let mut forward_end = vec![vec![None; micro_batches]; stages];
    let mut backward_end = vec![vec![None; micro_batches]; stages];
    let mut slots = Vec::with_capacity(stages * (2 * micro_batches + 1));
    loop {
        let mut progressed = false;
        for s in 0..stages {
            let Some(&(pass, i)) = orders[s].get(next[s]) else {
                continue;
            };
            let ready = match pass {
                Pass::Forward if s > 0 => forward_end[s - 1][i],
                Pass::Backward if s + 1 < stages => backward_end[s + 1][i],
                _ => Some(0.0),
            };
            let Some(ready) = ready else { continue };
            let start = f64::max(free[s], ready);
            let (end, done) = match pass {
                Pass::Forward => (start + times[s].forward_seconds, &mut forward_end),
                _ => (start + times[s].backward_seconds, &mut backward_end),
            };
            done[s][i] = Some(end);
            free[s] = end;
            next[s] += 1;
            progressed = true;
            slots.push(Slot {
                stage: s,
                micro: i,
                pass,
                start,
                end,
            });
        }
        if !progressed {
            break;
        }
    }
    assert!(
        next.iter().zip(&orders).all(|(n, o)| *n == o.len()),
        "a 1F1B order never deadlocks"
    );
    for (s, time) in times.iter().enumerate() {
        slots.push(Slot {
            stage: s,
            micro: 0,
            pass: Pass::Update,
            start: free[s],
            end: free[s] + time.post_seconds,
        });
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(forward: f64, post: f64) -> StageTime {
        StageTime {
            forward_seconds: forward,
            backward_seconds: 2.0 * forward,
            post_seconds: post,
        }
    }

    fn makespan(slots: &[Slot]) -> f64 {
        slots.iter().map(|s| s.end).fold(0.0, f64::max)
    }

    #[test]
    fn equal_stages_take_m_plus_p_minus_one_slots() {
        for (stages, micro) in [(1, 1), (1, 5), (2, 4), (4, 4), (4, 8), (3, 2)] {
            let times = vec![stage(1.0, 0.5); stages];
            let slots = one_f_one_b(&times, micro);
            assert_eq!(slots.len(), stages * (2 * micro + 1));
            let expected = (micro + stages - 1) as f64 * 3.0 + 0.5;
            assert_eq!(makespan(&slots), expected, "pp {stages}, m {micro}");
        }
    }

    #[test]
    fn slots_respect_dependencies_and_never_overlap_on_a_stage() {
        let times = vec![stage(1.0, 0.1), stage(2.5, 0.2), stage(0.5, 0.1)];
        let micro = 5;
        let slots = one_f_one_b(&times, micro);
        let end = |s: usize, i: usize, pass: Pass| {
            slots
                .iter()
                .find(|x| x.stage == s && x.micro == i && x.pass == pass)
                .map(|x| x.end)
        };
        for slot in &slots {
            let dependency = match slot.pass {
                Pass::Forward if slot.stage > 0 => end(slot.stage - 1, slot.micro, Pass::Forward),
                Pass::Backward if slot.stage < 2 => end(slot.stage + 1, slot.micro, Pass::Backward),
                Pass::Backward => end(slot.stage, slot.micro, Pass::Forward),
                _ => None,
            };
            if let Some(dependency) = dependency {
                assert!(slot.start >= dependency, "{slot:?}");
            }
        }
        for s in 0..3 {
            let mut own: Vec<&Slot> = slots.iter().filter(|x| x.stage == s).collect();
            own.sort_by(|a, b| a.start.total_cmp(&b.start));
            assert!(own.windows(2).all(|w| w[0].end <= w[1].start), "stage {s}");
        }
        // No later than the planner's bound (m + pp − 1) · t_max + max post.
        assert!(makespan(&slots) <= (micro + 2) as f64 * 7.5 + 0.2);
    }
}
