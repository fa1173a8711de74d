//! Graph data: validated CSR graphs, loaders (`.npz`, OGB CSV), synthetic generators,
//! train/validation/test splits, graph-aware partitioning into sequences, shortest-path
//! distance buckets and the normalised adjacency of the message-passing branch.

mod csr;
mod dataset;
mod distance;
mod error;
mod gcn;
mod load;
mod near;
mod npz;
mod ogb;
mod partition;
mod rmat;
mod sbm;
mod sparse;
mod split;
mod synthetic;
#[cfg(test)]
mod testutil;

pub use csr::Csr;
pub use dataset::Graph;
pub use distance::distance_buckets;
pub use error::{GraphError, Location};
pub use gcn::gcn_normalized_edges;
pub use load::load_graph;
pub use near::{NearLimits, NearPairs};
pub use npz::load_npz;
pub use ogb::load_ogb_dir;
pub use partition::{induced_subgraph, partition_sequences};
pub use rmat::{RmatParams, rmat};
pub use sbm::{SbmParams, sbm};
pub use sparse::SparseMatrix;
pub use split::{Split, SplitSpec, split};
pub use synthetic::SyntheticSpec;
