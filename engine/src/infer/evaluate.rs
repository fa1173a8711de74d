//! Scores of per-node predictions on a split: accuracy of each set, and per class on the test
//! nodes precision, recall, F1 and support.

use serde::Serialize;

use crate::graph::Split;

/// The scores of one class on the test nodes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassScores {
    /// The class index.
    pub class: usize,
    /// Of the test nodes predicted as this class, the fraction that are (0 when none is).
    pub precision: f64,
    /// Of the test nodes of this class, the fraction predicted as it (0 when there are none).
    pub recall: f64,
    /// The harmonic mean of precision and recall (0 when both are).
    pub f1: f64,
    /// Test nodes of this class.
    pub support: usize,
}

/// Accuracy on the three sets of a split, and per-class scores on its test nodes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    /// Accuracy on the training nodes.
    pub train_acc: f64,
    /// Accuracy on the validation nodes.
    pub val_acc: f64,
    /// Accuracy on the test nodes.
    pub test_acc: f64,
    /// Training nodes.
    pub train_nodes: usize,
    /// Validation nodes.
    pub val_nodes: usize,
    /// Test nodes.
    pub test_nodes: usize,
    /// Per class, on the test nodes.
    pub per_class: Vec<ClassScores>,
}

/// Scores `predicted` (one class per node) against `labels` on `split`, with `classes`
/// classes. Accuracies are computed as training computes them (correct over total, 0 for an
/// empty set), so the test accuracy of the parameters an epoch scored equals that epoch's.
pub fn evaluate(labels: &[u32], predicted: &[u32], split: &Split, classes: usize) -> Evaluation {
    let accuracy = |nodes: &[u32]| {
        let correct = (nodes.iter())
            .filter(|&&n| predicted[n as usize] == labels[n as usize])
            .count();
        correct as f64 / nodes.len().max(1) as f64
    };
    let mut true_positive = vec![0usize; classes];
    let mut predicted_as = vec![0usize; classes];
    let mut support = vec![0usize; classes];
    for &node in &split.test {
        let (label, guess) = (
            labels[node as usize] as usize,
            predicted[node as usize] as usize,
        );
        support[label] += 1;
        predicted_as[guess] += 1;
        if label == guess {
            true_positive[label] += 1;
        }
    }
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let per_class = (0..classes)
        .map(|class| {
            let precision = ratio(true_positive[class], predicted_as[class]);
            let recall = ratio(true_positive[class], support[class]);
            let sum = precision + recall;
            ClassScores {
                class,
                precision,
                recall,
                f1: if sum > 0.0 {
                    2.0 * precision * recall / sum
                } else {
                    0.0
                },
                support: support[class],
            }
        })
        .collect();
    Evaluation {
        train_acc: accuracy(&split.train),
        val_acc: accuracy(&split.val),
        test_acc: accuracy(&split.test),
        train_nodes: split.train.len(),
        val_nodes: split.val.len(),
        test_nodes: split.test.len(),
        per_class,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_a_small_split() {
        let labels = [0, 0, 1, 1, 2, 2];
        let predicted = [0, 1, 1, 1, 0, 2];
        let split = Split {
            train: vec![0, 1],
            val: vec![],
            test: vec![2, 3, 4, 5],
        };
        let e = evaluate(&labels, &predicted, &split, 3);
        assert_eq!((e.train_acc, e.val_acc, e.test_acc), (0.5, 0.0, 0.75));
        let class = |c: usize| &e.per_class[c];
        // Class 0: no test node, one predicted (node 4): precision 0, recall 0.
        assert_eq!(
            (class(0).precision, class(0).recall, class(0).support),
            (0.0, 0.0, 0)
        );
        assert_eq!(
            (class(1).precision, class(1).recall, class(1).f1),
            (1.0, 1.0, 1.0)
        );
        assert_eq!((class(2).precision, class(2).recall), (1.0, 0.5));
        assert!((class(2).f1 - 2.0 / 3.0).abs() < 1e-12);
    }
}
