//! Per-stage times of one micro-batch: what a 1F1B pipeline timeline is drawn from.

use serde::Serialize;

use crate::cost::{CostModel, PASSES};
use crate::{ClusterSpec, ModelSpec, ParallelConfig};

/// Predicted times of one pipeline stage, on its slowest device (over replicas and shards).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StageTime {
    /// Forward of one micro-batch, seconds: a third of its forward + backward (the cost
    /// model charges the backward twice the forward), transfers to the neighbours included.
    pub forward_seconds: f64,
    /// Backward of one micro-batch, seconds: the other two thirds.
    pub backward_seconds: f64,
    /// Gradient all-reduce plus optimizer step after the last backward, seconds.
    pub post_seconds: f64,
}

/// The times of each stage of `config`, in stage order.
///
/// The predicted step is `(m + pp − 1) · max_s (forward_s + backward_s) + max_s post_s`
/// (see [`crate::predict`]); a 1F1B schedule of these times finishes no later.
///
/// # Panics
/// If `config` does not pass [`ParallelConfig::validate`] for this cluster and model.
pub fn stage_times(
    cluster: &ClusterSpec,
    model: &ModelSpec,
    config: &ParallelConfig,
) -> Vec<StageTime> {
    let cost = CostModel::new(cluster, model);
    let mut times = vec![
        StageTime {
            forward_seconds: 0.0,
            backward_seconds: 0.0,
            post_seconds: 0.0,
        };
        config.stages.len()
    ];
    for place in cost.places(config) {
        let share = config.node_shares[place.cell.device];
        let both = cost.micro_batch_time(&place, share).total();
        let (allreduce, optimizer) = cost.post_time(&place);
        let stage = &mut times[place.cell.stage];
        if both > stage.forward_seconds + stage.backward_seconds {
            stage.forward_seconds = both / PASSES;
            stage.backward_seconds = both - both / PASSES;
        }
        stage.post_seconds = stage.post_seconds.max(allreduce + optimizer);
    }
    times
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::uniform_config;
    use crate::testing::{cluster, device, model};
    use crate::{Degrees, PlannerError, predict, search};

    /// The step time the 1F1B formula gives for `times` and `micro_batches`.
    fn formula(times: &[StageTime], micro_batches: usize) -> f64 {
        let slowest = times
            .iter()
            .map(|t| t.forward_seconds + t.backward_seconds)
            .fold(0.0, f64::max);
        let post = times.iter().map(|t| t.post_seconds).fold(0.0, f64::max);
        (micro_batches + times.len() - 1) as f64 * slowest + post
    }

    #[test]
    fn stage_times_give_back_the_predicted_step() -> Result<(), PlannerError> {
        let devices = vec![
            device("fast", 4e9, 4e13, 1e12),
            device("slow", 4e9, 1e13, 5e11),
            device("mid", 4e9, 2e13, 5e11),
        ];
        let spec = cluster(devices, (2e10, 1e-5), vec![]);
        let model = model(6, 2048, 8);
        let degrees = Degrees {
            dp: 1,
            pp: 3,
            cp: 1,
        };
        let config = uniform_config(3, &model, degrees, 4);
        let times = stage_times(&spec, &model, &config);
        assert_eq!(times.len(), 3);
        for t in &times {
            assert!((t.backward_seconds / t.forward_seconds - 2.0).abs() < 1e-12);
            assert!(t.post_seconds > 0.0);
        }
        // The first stage has the embedding and the slowest device second: uneven stages.
        assert!(times[1].forward_seconds > times[0].forward_seconds);
        let step = predict(&spec, &model, &config).step_seconds;
        assert!((formula(&times, 4) / step - 1.0).abs() < 1e-12);

        let plan = search(&spec, &model)?;
        let times = stage_times(&spec, &model, &plan.config);
        let step = plan.prediction.step_seconds;
        let again = formula(&times, plan.config.micro_batches);
        assert!((again / step - 1.0).abs() < 1e-12, "{again} vs {step}");
        Ok(())
    }
}
