//! `megagraph evaluate`: a trained model's accuracy on the train, validation and test nodes of
//! a split (by default its training run's), and per-class scores on the test nodes.

use clap::Args;
use megagraph_engine::{
    graph::{SplitSpec, split},
    infer::{Evaluation, evaluate},
};

use super::trained::ModelArgs;

/// Options of `megagraph evaluate`.
#[derive(Debug, Args)]
pub struct EvaluateArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// random:TRAIN:VAL or per-class:K, drawn with the training run's seed (default: the
    /// training run's split).
    #[arg(long)]
    split: Option<String>,
}

/// Runs the model over every node and scores it on the split.
pub fn run(args: &EvaluateArgs) -> anyhow::Result<()> {
    let chosen: Option<SplitSpec> = args.split.as_deref().map(str::parse).transpose()?;
    let mut nodes = None;
    let ran = args.model.run(|trained, graph| {
        let spec = chosen.unwrap_or(trained.settings.split);
        nodes = Some((spec, split(graph, &spec, trained.settings.seed)?));
        Ok(())
    })?;
    let (spec, nodes) = nodes.expect("the check ran before the model");
    let labels = ran.graph.labels();
    let scores = evaluate(
        labels,
        &ran.inference.predicted,
        &nodes,
        ran.inference.classes,
    );
    println!(
        "split {spec} (seed {}): {} train / {} val / {} test",
        ran.trained.settings.seed, scores.train_nodes, scores.val_nodes, scores.test_nodes
    );
    print_table(&scores, ran.graph.class_names());
    if args.model.json {
        println!("{}", serde_json::to_string(&scores)?);
    }
    Ok(())
}

/// The accuracies, then a row per class of its scores on the test nodes.
fn print_table(scores: &Evaluation, names: Option<&[String]>) {
    println!(
        "train_acc {:.4}  val_acc {:.4}  test_acc {:.4}",
        scores.train_acc, scores.val_acc, scores.test_acc
    );
    let name = |class: usize| names.and_then(|n| n.get(class)).map_or("", String::as_str);
    let width = (0..scores.per_class.len())
        .map(|c| name(c).len())
        .max()
        .unwrap_or(0);
    println!(
        "{:>5}  {:width$}  {:>9}  {:>6}  {:>6}  {:>7}   (test nodes)",
        "class", "", "precision", "recall", "f1", "support"
    );
    for c in &scores.per_class {
        println!(
            "{:>5}  {:width$}  {:>9.4}  {:>6.4}  {:>6.4}  {:>7}",
            c.class,
            name(c.class),
            c.precision,
            c.recall,
            c.f1,
            c.support
        );
    }
}
