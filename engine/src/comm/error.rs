//! Errors of communication.

use super::{Rank, Tag};

/// A transfer that could not complete.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CommError {
    /// Another rank ended the job.
    #[error("the job was aborted: {0}")]
    Aborted(String),
    /// A message did not arrive in time.
    #[error(
        "rank {rank} waited {seconds:.0} s for a {tag:?} message from rank {from}: it is hung or gone"
    )]
    Timeout {
        /// The waiting rank.
        rank: Rank,
        /// The rank it waited for.
        from: Rank,
        /// What it waited for.
        tag: Tag,
        /// How long it waited.
        seconds: f64,
    },
    /// A rank outside the job.
    #[error("rank {rank} is outside the job of {size} ranks")]
    NoSuchRank {
        /// The rank named.
        rank: Rank,
        /// Ranks in the job.
        size: usize,
    },
    /// Members disagree on the shape of a collective.
    #[error("collective mismatch: {0}")]
    Mismatch(String),
    /// A byte message longer than its 32-bit length field can count.
    #[error("a message of {bytes} bytes exceeds the {limit}-byte limit of one message")]
    MessageTooLarge {
        /// Bytes in the message.
        bytes: usize,
        /// The most one message can carry.
        limit: u32,
    },
    /// MPI could not be set up as a job needs it.
    #[error("MPI: {0}")]
    Mpi(String),
}
