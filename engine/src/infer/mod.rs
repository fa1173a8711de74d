//! Using what was trained: a checkpoint or saved model read back with its settings, the
//! model rebuilt from them and run over the graph's sequences (built exactly as training
//! builds them), the per-node predictions scored against a split, and written out.
//!
//! [`Trained::load`] reads a file (or a checkpoint directory's newest valid checkpoint);
//! [`infer`] returns every node's class probabilities, predicted class and final hidden state;
//! [`evaluate`] scores the predictions on a split; [`write_predictions`] and
//! [`write_embeddings`] write them as CSV, `.npy` or `.npz`.

mod error;
mod evaluate;
mod export;
mod run;
mod trained;

pub use error::InferError;
pub use evaluate::{ClassScores, Evaluation, evaluate};
pub use export::{Output, predictions_csv, write_embeddings, write_predictions};
pub use run::{Inference, infer};
pub use trained::{Holds, Trained};
