//! A device's uploaded sequences, kept across steps: a shard's features, degrees, attention
//! pairs and message-passing matrix are uploaded once and reused until the budget needs the
//! room (least recently used first).

use std::collections::HashMap;

use burn::tensor::backend::Backend;

use crate::{EngineError, model::SequenceTensors};

/// Device bytes of uploaded sequences a worker whose shard holds `node_share` of each
/// sequence's rows keeps for reuse: that share of the planner's
/// [`SEQUENCE_CACHE_BYTES`](megagraph_planner::SEQUENCE_CACHE_BYTES), so that every shard of
/// a context-parallel group holds about as many sequences (the cost model counts them). The
/// sequence in use is kept whatever its size.
pub fn device_cache_bytes(node_share: f64) -> u64 {
    (megagraph_planner::SEQUENCE_CACHE_BYTES as f64 * node_share.clamp(0.0, 1.0)) as u64
}

/// Uploaded sequences by index, least recently used first.
#[derive(Debug)]
pub(super) struct DeviceCache<B: Backend> {
    held: HashMap<usize, SequenceTensors<B>>,
    order: Vec<usize>,
    bytes: u64,
    budget: u64,
}

impl<B: Backend> DeviceCache<B> {
    /// An empty cache of `budget` bytes.
    pub fn new(budget: u64) -> Self {
        Self {
            held: HashMap::new(),
            order: Vec::new(),
            bytes: 0,
            budget,
        }
    }

    /// Sequence `index`, uploaded by `upload` if it is not held.
    pub fn get_or_upload(
        &mut self,
        index: usize,
        upload: impl FnOnce() -> Result<SequenceTensors<B>, EngineError>,
    ) -> Result<SequenceTensors<B>, EngineError> {
        if let Some(tensors) = self.held.get(&index) {
            let tensors = tensors.clone();
            self.order.retain(|&i| i != index);
            self.order.push(index);
            return Ok(tensors);
        }
        let tensors = upload()?;
        self.bytes += tensors.device_bytes();
        self.held.insert(index, tensors.clone());
        self.order.push(index);
        while self.bytes > self.budget && self.order.len() > 1 {
            let oldest = self.order.remove(0);
            if let Some(dropped) = self.held.remove(&oldest) {
                self.bytes -= dropped.device_bytes();
            }
        }
        Ok(tensors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::CpuBackend;
    use crate::graph::{Graph, SyntheticSpec};
    use crate::model::{HostSequence, ModelConfig};

    #[test]
    fn a_shard_has_its_node_share_of_the_budget() {
        let whole = megagraph_planner::SEQUENCE_CACHE_BYTES;
        assert_eq!(device_cache_bytes(1.0), whole);
        assert_eq!(device_cache_bytes(0.25), whole / 4);
        assert_eq!(device_cache_bytes(0.0), 0);
    }

    #[test]
    fn uploads_once_and_evicts_the_least_recently_used() -> Result<(), Box<dyn std::error::Error>> {
        let graph: Graph = "sbm:60:2".parse::<SyntheticSpec>()?.generate(1)?;
        let config = ModelConfig::new(graph.feature_dim(), graph.num_classes());
        let hosts: Vec<HostSequence> = (0..3)
            .map(|s| HostSequence::new(&graph, (s * 20..s * 20 + 20).collect(), &config))
            .collect();
        let device = Default::default();
        let uploads = std::cell::Cell::new(0);
        let upload = |i: usize| {
            let (hosts, graph, config, uploads) = (&hosts, &graph, &config, &uploads);
            move || {
                uploads.set(uploads.get() + 1);
                Ok(hosts[i].to_device::<CpuBackend>(graph, config, &device))
            }
        };
        let one = hosts[0]
            .to_device::<CpuBackend>(&graph, &config, &device)
            .device_bytes();
        let mut cache = DeviceCache::<CpuBackend>::new(2 * one + one / 2);
        cache.get_or_upload(0, upload(0))?;
        cache.get_or_upload(1, upload(1))?;
        cache.get_or_upload(0, upload(0))?;
        assert_eq!(uploads.get(), 2, "a held sequence is not uploaded again");
        cache.get_or_upload(2, upload(2))?;
        assert_eq!(
            cache.order,
            vec![0, 2],
            "sequence 1 was the least recently used"
        );
        cache.get_or_upload(1, upload(1))?;
        assert_eq!(uploads.get(), 4);
        Ok(())
    }
}
