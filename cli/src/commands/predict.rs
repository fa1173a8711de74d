//! `megagraph predict`: every node's predicted class and class probabilities from a trained
//! model, and optionally its final hidden state.

use std::path::PathBuf;

use clap::Args;
use megagraph_engine::infer::{Output, predictions_csv, write_embeddings, write_predictions};

use super::trained::ModelArgs;
use crate::data::check_writable;

/// Options of `megagraph predict`.
#[derive(Debug, Args)]
pub struct PredictArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Where to write the predictions: .csv (a row per node: node, name, predicted,
    /// predicted_name, p_<class>…), .npy (probabilities) or .npz (probabilities, predicted);
    /// standard output (CSV) when not given.
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,
    /// Write every node's final hidden state (nodes × hidden) to this .npy file.
    #[arg(long, value_name = "PATH")]
    embeddings: Option<PathBuf>,
}

/// Runs the model over every node and writes what it predicts.
pub fn run(args: &PredictArgs) -> anyhow::Result<()> {
    if args.model.json && args.out.is_none() {
        anyhow::bail!(
            "--json prints a summary on standard output: write the predictions with --out"
        );
    }
    let outputs = [
        (
            "--out",
            &args.out,
            &[Output::Csv, Output::Npy, Output::Npz][..],
        ),
        ("--embeddings", &args.embeddings, &[Output::Npy][..]),
    ];
    for (flag, path, kinds) in outputs {
        if let Some(path) = path {
            Output::of(path, kinds)?;
            check_writable(flag, path)?;
        }
    }
    let ran = args.model.run(|_, _| Ok(()))?;
    match &args.out {
        Some(path) => write_predictions(path, &ran.graph, &ran.inference)?,
        None => predictions_csv(std::io::stdout().lock(), &ran.graph, &ran.inference)?,
    }
    if let Some(path) = &args.embeddings {
        write_embeddings(path, &ran.inference)?;
    }
    let mut counts = vec![0usize; ran.inference.classes];
    for &class in &ran.inference.predicted {
        counts[class as usize] += 1;
    }
    eprintln!(
        "predicted {} nodes{}{}; per class {counts:?}",
        ran.inference.predicted.len(),
        args.out
            .as_ref()
            .map_or(String::new(), |p| format!(" → {}", p.display())),
        args.embeddings.as_ref().map_or(String::new(), |p| format!(
            ", hidden states → {}",
            p.display()
        )),
    );
    if args.model.json {
        println!(
            "{}",
            serde_json::json!({
                "nodes": ran.inference.predicted.len(),
                "classes": ran.inference.classes,
                "hidden": ran.inference.hidden,
                "out": args.out,
                "embeddings": args.embeddings,
                "model": ran.trained.path,
                "holds": ran.trained.holds.to_string(),
                "predicted_per_class": counts,
            })
        );
    }
    Ok(())
}
