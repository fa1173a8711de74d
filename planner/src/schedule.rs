//! The 1F1B pipeline schedule of one stage: the one order that the engine runs and the report
//! draws.

/// One pass of one micro-batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Forward of the micro-batch.
    Forward(usize),
    /// Backward of the micro-batch.
    Backward(usize),
}

/// The passes of `stage` (of `stages`) over `micro` micro-batches in the 1F1B order:
/// `stages - stage - 1` warm-up forwards, then alternating one forward and one backward, then
/// the remaining backwards. At most `stages - stage` forwards are in flight, which bounds the
/// activations a stage keeps.
pub fn one_forward_one_backward(stage: usize, stages: usize, micro: usize) -> Vec<Pass> {
    let warmup = (stages - stage - 1).min(micro);
    let mut passes: Vec<Pass> = (0..warmup).map(Pass::Forward).collect();
    let mut next_forward = warmup;
    for backward in 0..micro {
        if next_forward < micro {
            passes.push(Pass::Forward(next_forward));
            next_forward += 1;
        }
        passes.push(Pass::Backward(backward));
    }
    passes
}

#[cfg(test)]
mod tests {
    use super::{Pass::*, one_forward_one_backward};

    #[test]
    fn last_stage_alternates_and_first_stage_warms_up() {
        assert_eq!(
            one_forward_one_backward(1, 2, 3),
            vec![
                Forward(0),
                Backward(0),
                Forward(1),
                Backward(1),
                Forward(2),
                Backward(2)
            ]
        );
        assert_eq!(
            one_forward_one_backward(0, 3, 3),
            vec![
                Forward(0),
                Forward(1),
                Forward(2),
                Backward(0),
                Backward(1),
                Backward(2)
            ]
        );
    }

    #[test]
    fn every_micro_batch_runs_forward_then_backward_once() {
        for stages in 1..5 {
            for stage in 0..stages {
                for micro in 1..6 {
                    let passes = one_forward_one_backward(stage, stages, micro);
                    assert_eq!(passes.len(), 2 * micro);
                    for m in 0..micro {
                        let f = passes.iter().position(|p| *p == Forward(m));
                        let b = passes.iter().position(|p| *p == Backward(m));
                        assert!(
                            f.is_some() && b.is_some() && f < b,
                            "{stage}/{stages} {micro}: {passes:?}"
                        );
                    }
                    let in_flight = passes
                        .iter()
                        .scan(0i32, |n, p| {
                            *n += if matches!(p, Forward(_)) { 1 } else { -1 };
                            Some(*n)
                        })
                        .max()
                        .unwrap_or(0);
                    assert!(in_flight as usize <= stages - stage, "{passes:?}");
                }
            }
        }
    }
}
