//! Training a Graph Transformer on one device: sequences, the optimisation loop, evaluation and
//! early stopping.

mod metrics;
mod options;
mod sequences;

pub use metrics::{EpochMetrics, TrainReport};
pub use options::TrainOptions;
pub use sequences::{LabelledSequence, Role};

use std::time::Instant;

use burn::{
    module::AutodiffModule,
    nn::loss::CrossEntropyLossConfig,
    optim::{AdamConfig, GradientsParams, Optimizer, decay::WeightDecayConfig},
    tensor::{ElementConversion, Int, Tensor, backend::AutodiffBackend},
};
use rand::{SeedableRng, rngs::StdRng, seq::SliceRandom};

use crate::{
    EngineError,
    device::MemoryProbe,
    graph::{Graph, Split},
    kernels::BiasedAttentionBackend,
    model::GraphTransformer,
};

/// Trains a model on `graph` with `split` on `device`, calling `on_epoch` after every epoch.
///
/// The model kept is the one of best validation accuracy; `test_acc` is measured on it.
pub fn train<B>(
    graph: &Graph,
    split: &Split,
    options: &TrainOptions,
    device: &B::Device,
    on_epoch: &mut dyn FnMut(&EpochMetrics),
) -> Result<TrainReport, EngineError>
where
    B: AutodiffBackend + MemoryProbe + BiasedAttentionBackend,
    B::InnerBackend: BiasedAttentionBackend,
{
    let start = Instant::now();
    let config = options.model_config(graph);
    config.validate()?;
    options.validate()?;
    let sequences = sequences::build(
        graph,
        split,
        options.seq_len,
        config.max_distance,
        options.seed,
    )?;

    B::seed(device, options.seed);
    let mut model = GraphTransformer::<B>::new(&config, device);
    let mut optimizer = AdamConfig::new()
        .with_weight_decay(Some(WeightDecayConfig::new(options.weight_decay)))
        .init::<B, GraphTransformer<B>>();
    let loss_fn = CrossEntropyLossConfig::new().init(device);
    let mut order_rng = StdRng::seed_from_u64(options.seed);
    let mut order: Vec<usize> = (0..sequences.len()).collect();

    let mut history = Vec::new();
    let mut best: Option<(EpochMetrics, GraphTransformer<B>)> = None;
    let mut peak_bytes: Option<u64> = None;
    for epoch in 1..=options.epochs {
        let epoch_start = Instant::now();
        order.shuffle(&mut order_rng);
        let mut loss_sum = 0.0;
        let mut loss_nodes = 0usize;
        for &index in &order {
            let seq = &sequences[index];
            if seq.train.is_empty() {
                continue;
            }
            let tensors = seq.host.to_device::<B>(graph, config.max_degree, device);
            let logits = model
                .forward(&tensors)
                .select(0, seq.train_positions::<B>(device));
            let targets: Tensor<B, 1, Int> = seq.train_labels::<B>(graph, device);
            let loss = loss_fn.forward(logits, targets);
            let grads = loss.backward();
            let grads = GradientsParams::from_grads(grads, &model);
            model = optimizer.step(options.learning_rate, model, grads);
            let value: f64 = loss.into_scalar().elem();
            if !value.is_finite() {
                return Err(EngineError::InvalidOptions(format!(
                    "training diverged at epoch {epoch}: loss is {value} (try a lower learning rate)"
                )));
            }
            loss_sum += value * seq.train.len() as f64;
            loss_nodes += seq.train.len();
            if let Some(bytes) = B::reserved_bytes(device) {
                peak_bytes = Some(peak_bytes.map_or(bytes, |p| p.max(bytes)));
            }
        }
        let accuracy = evaluate(&model.valid(), graph, &sequences, config.max_degree, device);
        let metrics = EpochMetrics {
            epoch,
            loss: loss_sum / loss_nodes.max(1) as f64,
            train_acc: accuracy[Role::Train as usize],
            val_acc: accuracy[Role::Val as usize],
            test_acc: accuracy[Role::Test as usize],
            seconds: epoch_start.elapsed().as_secs_f64(),
        };
        on_epoch(&metrics);
        history.push(metrics.clone());
        let improved = best
            .as_ref()
            .is_none_or(|(b, _)| metrics.val_acc > b.val_acc);
        if improved {
            best = Some((metrics, model.clone()));
        } else if best
            .as_ref()
            .is_some_and(|(b, _)| epoch - b.epoch >= options.patience)
        {
            break;
        }
    }
    let (best_metrics, _) = best.expect("at least one epoch ran: epochs >= 1 is validated");
    Ok(TrainReport {
        test_acc: best_metrics.test_acc,
        val_acc: best_metrics.val_acc,
        best_epoch: best_metrics.epoch,
        final_loss: history.last().map_or(f64::NAN, |m| m.loss),
        epochs: history.len(),
        seconds: start.elapsed().as_secs_f64(),
        peak_device_bytes: peak_bytes.into_iter().collect(),
        sequences: sequences.len(),
        history,
    })
}

/// Accuracy of `model` on the train, validation and test nodes (indexed by [`Role`]).
fn evaluate<B: BiasedAttentionBackend>(
    model: &GraphTransformer<B>,
    graph: &Graph,
    sequences: &[LabelledSequence],
    max_degree: usize,
    device: &B::Device,
) -> [f64; 3] {
    let mut correct = [0usize; 3];
    let mut total = [0usize; 3];
    for seq in sequences {
        let tensors = seq.host.to_device::<B>(graph, max_degree, device);
        let predicted = model.forward(&tensors).argmax(1).into_data();
        let predicted: Vec<i64> = predicted.iter::<i64>().collect();
        for (position, &role) in seq.roles.iter().enumerate() {
            if let Some(role) = role {
                let node = seq.host.nodes[position] as usize;
                total[role as usize] += 1;
                if predicted[position] == graph.labels()[node] as i64 {
                    correct[role as usize] += 1;
                }
            }
        }
    }
    std::array::from_fn(|i| correct[i] as f64 / total[i].max(1) as f64)
}
