//! Running a trained model over every sequence of a graph.

use burn::tensor::activation::softmax;

use super::{InferError, Trained};
use crate::{
    device::MemoryProbe,
    graph::{Graph, Split},
    host::host_f32,
    model::{GraphTransformer, ModelBackend},
    parallel::{Layout, check_shards_fit},
    train::training_sequences,
};

/// The model's output for every node of a graph, in node order.
#[derive(Debug, Clone)]
pub struct Inference {
    /// Classes the model predicts.
    pub classes: usize,
    /// Width of the hidden states.
    pub hidden: usize,
    /// Each node's class probabilities (the softmax of its logits), row-major `nodes × classes`.
    pub probabilities: Vec<f32>,
    /// Each node's predicted class: the index of its largest logit, as training's evaluation
    /// takes it.
    pub predicted: Vec<u32>,
    /// Each node's final hidden state (the last transformer layer's output), row-major
    /// `nodes × hidden`.
    pub hidden_states: Vec<f32>,
}

/// Runs `trained` over `graph` on `device`: the sequences built as training built them (the
/// same METIS cut for the same settings), each uploaded whole and run forward without
/// dropout. Refuses data of another shape than the model's, sequences beyond the host's
/// memory and shards beyond the device's buffer limit, before any work.
pub fn infer<B: ModelBackend + MemoryProbe>(
    graph: &Graph,
    trained: &Trained,
    device: &B::Device,
) -> Result<Inference, InferError> {
    trained.check_data(graph)?;
    let options = &trained.settings;
    let config = options.model_config(graph);
    config.validate()?;
    let sequences = training_sequences(graph, &Split::none(), options)?;
    let layout = Layout::single(config.layers);
    check_shards_fit::<B>(graph, &layout, &config, &sequences, &[(0, device)])?;
    let model = GraphTransformer::<B>::initialised(&config, options.seed, device);
    let ids = model.canonical_ids();
    let model = (model.with_parameter_values(&ids, &trained.parameters)).map_err(|reason| {
        InferError::Parameters {
            path: trained.path.clone(),
            reason,
        }
    })?;
    let (nodes, classes, hidden) = (graph.num_nodes(), config.classes, config.hidden);
    let mut out = Inference {
        classes,
        hidden,
        probabilities: vec![0.0; nodes * classes],
        predicted: vec![0; nodes],
        hidden_states: vec![0.0; nodes * hidden],
    };
    let task = crate::progress::task(format!("running {} sequence(s)", sequences.len()));
    for (done, seq) in sequences.list().iter().enumerate() {
        task.advance(done as u64, sequences.len() as u64);
        let tensors = sequences
            .host(done, graph)
            .to_device::<B>(graph, &config, device);
        let x = model.forward_embedding(&tensors);
        let x = model.forward_layers(x, 0..config.layers, &tensors);
        let states = host_f32(x.clone());
        let logits = model.forward_output(x, &tensors);
        let predicted = logits.clone().argmax(1).into_data();
        let probabilities = host_f32(softmax(logits, 1));
        for (position, (&node, class)) in
            (seq.nodes.iter().zip(predicted.iter::<i64>())).enumerate()
        {
            let node = node as usize;
            out.predicted[node] = class as u32;
            out.probabilities[node * classes..(node + 1) * classes]
                .copy_from_slice(&probabilities[position * classes..(position + 1) * classes]);
            out.hidden_states[node * hidden..(node + 1) * hidden]
                .copy_from_slice(&states[position * hidden..(position + 1) * hidden]);
        }
    }
    Ok(out)
}
