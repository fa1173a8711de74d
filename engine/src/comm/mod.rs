//! Moving tensors between the devices of a job.
//!
//! [`Communicator`] is the interface every parallel strategy talks through: point-to-point
//! `send`/`recv` and the collectives built on them (ring all-gather, reduce-scatter,
//! all-reduce, broadcast, barrier). Ranks are the job's devices, numbered like the cluster's
//! devices. Data travels as host `f32` buffers: wgpu devices cannot copy to each other in
//! burn 0.21 (`to_device` panics), so every transfer is staged through the host anyway, and
//! a host buffer is also what a message-passing library (MPI, the next implementation) sends.
//!
//! [`LocalHub`] connects the devices of one process; with the `mpi` feature, [`MpiJob`]
//! connects devices driven by different processes, on one machine or many. [`exchange_rows`]
//! is the differentiable row exchange the context-parallel model uses (the all-gather
//! [`RowExchange`] or the [`HaloExchange`]); [`start_exchange`] starts its copy to the host
//! early, so that it travels while the device computes what does not need it.

mod error;
mod exchange;
mod halo;
mod local;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "mpi")]
mod mpi_measure;
mod rows;

#[cfg(feature = "mpi")]
pub use self::mpi::{MpiCommunicator, MpiJob, MpiRuntime, launched_by_mpirun};
pub use error::CommError;
pub use exchange::{
    ExchangeBackend, HostRows, RowsExchange, StartedExchange, exchange_rows, exchange_started_rows,
    start_exchange, take_exchange_time,
};
pub use halo::HaloExchange;
pub use local::{LocalCommunicator, LocalHub, WARM_UP_TIMEOUT};
#[cfg(feature = "mpi")]
pub use mpi_measure::{CommBenchRow, ProcessLink, bench_comm, measure_process_links};
pub use rows::{RowExchange, gather_rows};

use std::fmt::Debug;

/// A device of the job.
pub type Rank = usize;

/// What a message is, so that messages of different purposes between the same two ranks never
/// mix. Messages of one tag between two ranks arrive in the order they were sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tag {
    /// Rows of node states exchanged by context-parallel shards (forward).
    Gather,
    /// Gradients of gathered rows returned to their shards (backward).
    ScatterGrad,
    /// Gradient all-reduce among the replicas and shards of a stage.
    GradReduce,
    /// A stage's activations, to the next stage.
    Activation,
    /// The gradient of a stage's input, to the previous stage.
    ActivationGrad,
    /// Broadcasts.
    Broadcast,
    /// Barriers.
    Barrier,
    /// Reports gathered at the end of a step (losses, timings).
    Report,
    /// Training state gathered for a checkpoint, or sent out from one on resume.
    Checkpoint,
    /// Halo rows sent to the shards whose near pairs reach them (hops scope, forward).
    Halo,
    /// Gradients of halo rows returned to their owners (backward).
    HaloGrad,
}

impl Tag {
    /// Every tag, in the order of [`Tag::index`].
    pub const ALL: [Tag; 11] = [
        Tag::Gather,
        Tag::ScatterGrad,
        Tag::GradReduce,
        Tag::Activation,
        Tag::ActivationGrad,
        Tag::Broadcast,
        Tag::Barrier,
        Tag::Report,
        Tag::Checkpoint,
        Tag::Halo,
        Tag::HaloGrad,
    ];

    /// The tag's number on the wire.
    pub fn index(self) -> usize {
        Tag::ALL
            .iter()
            .position(|&t| t == self)
            .expect("ALL lists every tag")
    }

    /// The tag numbered `index`, if any.
    pub fn from_index(index: usize) -> Option<Tag> {
        Tag::ALL.get(index).copied()
    }
}

/// Point-to-point messages and collectives among ranks.
///
/// A collective is called by every member of `group` (ranks, the same list in the same order
/// on every member, the caller among them) with the same tag; members block until it
/// completes. Sums are taken in an order fixed by the group (not by timing), the same on
/// every member, so every member gets the same bits. The provided collectives are built from `send`/`recv`; an implementation over a
/// library with native collectives may override them.
pub trait Communicator: Send + Sync + Debug {
    /// This rank.
    fn rank(&self) -> Rank;

    /// Number of ranks in the job.
    fn size(&self) -> usize;

    /// Sends `data` to `to`; never blocks on the receiver.
    fn send(&self, to: Rank, tag: Tag, data: Vec<f32>) -> Result<(), CommError>;

    /// Receives the next message of `tag` from `from`, blocking until it arrives, the job is
    /// aborted, or the communicator's timeout passes.
    fn recv(&self, from: Rank, tag: Tag) -> Result<Vec<f32>, CommError>;

    /// Ends the job on every rank: blocked and later calls anywhere fail with `reason`.
    fn abort(&self, reason: &str);

    /// Says this rank has compiled its kernels (its first epoch is done): until then its
    /// receives wait at least [`WARM_UP_TIMEOUT`], since devices compile and autotune at
    /// their own pace; from then on the communicator's timeout alone bounds them.
    fn warmed_up(&self);

    /// Payload bytes this rank has sent so far (every message, to devices in this process or
    /// others).
    fn sent_bytes(&self) -> u64;

    /// Every member's `data`, in group order, on every member. Ring algorithm: in step `t`
    /// each member passes the block it received in step `t - 1` to its successor, so each
    /// block travels the ring once (`members - 1` steps).
    fn all_gather(
        &self,
        group: &[Rank],
        tag: Tag,
        data: Vec<f32>,
    ) -> Result<Vec<Vec<f32>>, CommError> {
        let me = self.position(group)?;
        let n = group.len();
        let mut blocks: Vec<Option<Vec<f32>>> = vec![None; n];
        blocks[me] = Some(data);
        let next = group[(me + 1) % n];
        let previous = group[(me + n - 1) % n];
        for step in 0..n - 1 {
            let outgoing = (me + n - step) % n;
            let incoming = (me + n - step - 1) % n;
            let block = blocks[outgoing]
                .clone()
                .expect("held since the previous step");
            self.send(next, tag, block)?;
            blocks[incoming] = Some(self.recv(previous, tag)?);
        }
        Ok(blocks
            .into_iter()
            .map(|b| b.expect("every block arrived"))
            .collect())
    }

    /// Member `i` receives the sum, in group order, of every member's `blocks[i]`.
    fn reduce_scatter_sum(
        &self,
        group: &[Rank],
        tag: Tag,
        mut blocks: Vec<Vec<f32>>,
    ) -> Result<Vec<f32>, CommError> {
        let me = self.position(group)?;
        if blocks.len() != group.len() {
            return Err(CommError::Mismatch(format!(
                "reduce-scatter over {} members got {} blocks",
                group.len(),
                blocks.len()
            )));
        }
        for (i, &rank) in group.iter().enumerate() {
            if i != me {
                self.send(rank, tag, std::mem::take(&mut blocks[i]))?;
            }
        }
        let own = std::mem::take(&mut blocks[me]);
        let mut sum = vec![0.0; own.len()];
        for (i, &rank) in group.iter().enumerate() {
            let part = if i == me {
                own.clone()
            } else {
                self.recv(rank, tag)?
            };
            add_into(&mut sum, &part, rank)?;
        }
        Ok(sum)
    }

    /// The element-wise sum of every member's `data`, on every member, with the same bits on
    /// each. Ring algorithm: `data` is cut into one chunk per member; in a reduce-scatter of
    /// `members - 1` steps each chunk travels the ring once, every member adding its own part
    /// to what it received (chunk `c` is summed in ring order from member `c`: a fixed order,
    /// whatever the timing), and an all-gather of the summed chunks passes them round again.
    /// Each member sends 2 (members − 1) / members of `data`, against members − 1 times
    /// `data` for [`Communicator::all_reduce_sum_gathered`].
    fn all_reduce_sum(
        &self,
        group: &[Rank],
        tag: Tag,
        data: Vec<f32>,
    ) -> Result<Vec<f32>, CommError> {
        ring_all_reduce_sum(self, group, tag, data)
    }

    /// The element-wise sum, in group order, of every member's `data`, on every member: an
    /// all-gather, then the sums. What [`Communicator::all_reduce_sum`] did before its ring,
    /// kept for `bench comm` to measure beside it.
    fn all_reduce_sum_gathered(
        &self,
        group: &[Rank],
        tag: Tag,
        data: Vec<f32>,
    ) -> Result<Vec<f32>, CommError> {
        let blocks = self.all_gather(group, tag, data)?;
        let mut sum = vec![0.0; blocks[0].len()];
        for (block, &rank) in blocks.iter().zip(group) {
            add_into(&mut sum, block, rank)?;
        }
        Ok(sum)
    }

    /// `root`'s `data` on every member (`data` is ignored on the others).
    fn broadcast(
        &self,
        group: &[Rank],
        root: Rank,
        tag: Tag,
        data: Vec<f32>,
    ) -> Result<Vec<f32>, CommError> {
        self.position(group)?;
        if self.rank() == root {
            for &rank in group.iter().filter(|&&r| r != root) {
                self.send(rank, tag, data.clone())?;
            }
            Ok(data)
        } else {
            self.recv(root, tag)
        }
    }

    /// Returns once every member has called it.
    fn barrier(&self, group: &[Rank]) -> Result<(), CommError> {
        self.all_gather(group, Tag::Barrier, Vec::new()).map(|_| ())
    }

    /// This rank's position in `group`, or an error if it is not a member.
    fn position(&self, group: &[Rank]) -> Result<usize, CommError> {
        group.iter().position(|&r| r == self.rank()).ok_or_else(|| {
            CommError::Mismatch(format!("rank {} is not in group {group:?}", self.rank()))
        })
    }
}

/// A running count of the payload bytes a rank sent.
#[derive(Debug, Default)]
pub struct SentBytes(std::sync::atomic::AtomicU64);

impl SentBytes {
    /// Counts one message's payload.
    pub fn add(&self, data: &[f32]) {
        let bytes = (data.len() * size_of::<f32>()) as u64;
        self.0
            .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// Bytes counted so far.
    pub fn total(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Bytes as a message: their count, then four bytes per value (little-endian `f32` bits). The
/// count travels as 32 bits: more bytes than that are refused.
pub fn pack_bytes(bytes: &[u8]) -> Result<Vec<f32>, CommError> {
    let count = byte_count(bytes.len())?;
    let mut values = vec![f32::from_bits(count)];
    values.extend(bytes.chunks(4).map(|chunk| {
        let mut word = [0u8; 4];
        word[..chunk.len()].copy_from_slice(chunk);
        f32::from_bits(u32::from_le_bytes(word))
    }));
    Ok(values)
}

/// `bytes` as the message's 32-bit count word, or an error naming the limit.
fn byte_count(bytes: usize) -> Result<u32, CommError> {
    u32::try_from(bytes).map_err(|_| CommError::MessageTooLarge {
        bytes,
        limit: u32::MAX,
    })
}

/// The bytes of a [`pack_bytes`] message, or `None` if it is not one.
pub fn unpack_bytes(values: &[f32]) -> Option<Vec<u8>> {
    let (count, words) = values.split_first()?;
    let count = count.to_bits() as usize;
    if words.len() != count.div_ceil(4) {
        return None;
    }
    let mut bytes: Vec<u8> = words
        .iter()
        .flat_map(|w| w.to_bits().to_le_bytes())
        .collect();
    bytes.truncate(count);
    Some(bytes)
}

/// `sum += part`, or an error naming `rank` if the lengths differ.
/// The ring all-reduce of [`Communicator::all_reduce_sum`] (the default, and the fallback of
/// communicators with a native one).
pub(crate) fn ring_all_reduce_sum<C: Communicator + ?Sized>(
    comm: &C,
    group: &[Rank],
    tag: Tag,
    data: Vec<f32>,
) -> Result<Vec<f32>, CommError> {
    let me = comm.position(group)?;
    let n = group.len();
    if n == 1 {
        return Ok(data);
    }
    let len = data.len();
    let chunk = |c: usize| c * len / n..(c + 1) * len / n;
    let next = group[(me + 1) % n];
    let previous = group[(me + n - 1) % n];
    let mut sums = data;
    // Reduce-scatter: in step t, pass on chunk me − t (own, then partial sums); receive
    // chunk me − t − 1 and add this member's part to it.
    for step in 0..n - 1 {
        let outgoing = chunk((me + n - step) % n);
        comm.send(next, tag, sums[outgoing].to_vec())?;
        let incoming = chunk((me + 2 * n - step - 1) % n);
        let mut partial = comm.recv(previous, tag)?;
        add_into(&mut partial, &sums[incoming.clone()], comm.rank())?;
        sums[incoming].copy_from_slice(&partial);
    }
    // This member now holds chunk me + 1 summed over all; all-gather the summed chunks.
    for step in 0..n - 1 {
        let outgoing = chunk((me + 1 + n - step) % n);
        comm.send(next, tag, sums[outgoing].to_vec())?;
        let incoming = chunk((me + n - step) % n);
        let summed = comm.recv(previous, tag)?;
        if summed.len() != incoming.len() {
            return Err(CommError::Mismatch(format!(
                "rank {previous} passed a chunk of {} values, expected {}",
                summed.len(),
                incoming.len()
            )));
        }
        sums[incoming].copy_from_slice(&summed);
    }
    Ok(sums)
}

fn add_into(sum: &mut [f32], part: &[f32], rank: Rank) -> Result<(), CommError> {
    if part.len() != sum.len() {
        return Err(CommError::Mismatch(format!(
            "rank {rank} contributed {} values, expected {}",
            part.len(),
            sum.len()
        )));
    }
    for (s, p) in sum.iter_mut().zip(part) {
        *s += p;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Tag, byte_count, pack_bytes, unpack_bytes};

    #[test]
    fn a_byte_count_past_the_count_word_is_refused_naming_the_limit() {
        assert_eq!(byte_count(u32::MAX as usize).ok(), Some(u32::MAX));
        let refused = byte_count(u32::MAX as usize + 1).expect_err("past 32 bits");
        assert!(
            refused.to_string().contains(&u32::MAX.to_string()),
            "{refused}"
        );
    }

    #[test]
    fn bytes_round_trip_through_a_message_and_a_bad_one_is_refused() {
        for bytes in [&b""[..], b"a", b"abcd", b"{\"step\": 5}"] {
            assert_eq!(
                unpack_bytes(&pack_bytes(bytes).expect("small")).as_deref(),
                Some(bytes)
            );
        }
        let mut packed = pack_bytes(b"abcdefgh").expect("small");
        packed.pop();
        assert_eq!(unpack_bytes(&packed), None, "a word missing");
        assert_eq!(unpack_bytes(&[]), None);
    }

    #[test]
    fn bytes_beyond_a_32_bit_count_are_refused() {
        let huge = vec![0u8; u32::MAX as usize + 1];
        let refused = pack_bytes(&huge).expect_err("the count does not fit 32 bits");
        assert!(
            refused.to_string().contains("4294967296 bytes")
                && refused.to_string().contains("4294967295"),
            "{refused}"
        );
    }

    #[test]
    fn every_tag_has_its_own_wire_number() {
        for (i, tag) in Tag::ALL.iter().enumerate() {
            assert_eq!(tag.index(), i);
            assert_eq!(Tag::from_index(i), Some(*tag));
        }
        assert_eq!(Tag::from_index(Tag::ALL.len()), None);
    }
}
