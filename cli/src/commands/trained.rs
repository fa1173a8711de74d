//! What `predict` and `evaluate` share: the trained model and the data it runs on, and the
//! run of the model over every node.

use std::path::PathBuf;

use clap::Args;
use megagraph_engine::{
    device::{AdapterSelector, CpuBackend, WgpuBackend, open_wgpu},
    graph::Graph,
    infer::{Inference, Trained, infer},
};

use super::train::BackendChoice;
use crate::data;

/// The options of `predict` and `evaluate` that say which model runs on which data.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// A checkpoint directory (its newest valid checkpoint), a checkpoint file, or a model
    /// saved with `train --save-model`.
    #[arg(long, value_name = "DIR|FILE")]
    checkpoint: PathBuf,
    /// A graph file (.npz or OGB directory) with the features and classes the model was
    /// trained on.
    #[arg(long, conflicts_with = "synthetic")]
    data: Option<PathBuf>,
    /// A generated graph, e.g. sbm:NODES:CLASSES, generated with the training run's seed
    /// (default: train's default graph).
    #[arg(long)]
    synthetic: Option<String>,
    /// Backend that runs the model.
    #[arg(long, value_enum, default_value = "wgpu")]
    backend: BackendChoice,
    /// The adapter: its position in `megagraph devices`, API:N (e.g. gl:0) or its id
    /// API:NAME#N (default: the first listed).
    #[arg(long, value_name = "ADAPTER")]
    adapter: Option<AdapterSelector>,
    /// Print the result as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
    /// Show progress on standard error even with --json (which is quiet otherwise).
    #[arg(long)]
    progress: bool,
}

/// A trained model run over a graph.
pub struct Ran {
    /// The model as read.
    pub trained: Trained,
    /// The graph it ran on.
    pub graph: Graph,
    /// Its output for every node.
    pub inference: Inference,
}

impl ModelArgs {
    /// Reads the model (warning about newer checkpoints refused), loads the data and runs the
    /// model over every node; `before` runs once both are read, before the model runs (to
    /// check what needs them cheaply first).
    pub fn run(
        &self,
        before: impl FnOnce(&Trained, &Graph) -> anyhow::Result<()>,
    ) -> anyhow::Result<Ran> {
        crate::progress::install(self.json, self.progress);
        let trained = Trained::load(&self.checkpoint)?;
        for (path, why) in &trained.refused {
            eprintln!(
                "warning: checkpoint {} refused ({why}); using an older one",
                path.display()
            );
        }
        let seed = trained.settings.seed;
        let graph = data::load(self.data.as_deref(), self.synthetic.as_deref(), seed)?;
        trained.check_data(&graph)?;
        before(&trained, &graph)?;
        eprintln!(
            "model {}: {}; graph {}: {} nodes",
            trained.path.display(),
            trained.holds,
            graph.name(),
            graph.num_nodes()
        );
        let inference = match self.backend {
            BackendChoice::Wgpu => {
                infer::<WgpuBackend>(&graph, &trained, &open_wgpu(self.adapter.as_ref())?)?
            }
            BackendChoice::Ndarray => infer::<CpuBackend>(&graph, &trained, &Default::default())?,
        };
        Ok(Ran {
            trained,
            graph,
            inference,
        })
    }
}
