//! The communicator of the devices of one process: a shared mailbox per (sender, receiver,
//! tag), guarded by one mutex, with a condition variable to wake receivers.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{CommError, Communicator, Rank, SentBytes, Tag};

/// How long a receiver waits before it declares its peer hung.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(900);

/// The least a receiver waits before its rank has warmed up (see
/// [`Communicator::warmed_up`]): each device compiles and autotunes its kernels in its first
/// steps, at its own pace, so peers of one job can be minutes apart there without being hung.
pub const WARM_UP_TIMEOUT: Duration = Duration::from_secs(900);

#[derive(Debug, Default)]
struct Mailboxes {
    queues: HashMap<(Rank, Rank, Tag), VecDeque<Vec<f32>>>,
    aborted: Option<String>,
}

/// The mailboxes of the ranks of one process: one queue per (sender, receiver, tag), guarded
/// by one mutex, with a condition variable to wake receivers. The MPI communicator delivers
/// messages from other processes into the same mailboxes.
#[derive(Debug)]
pub(super) struct PostOffice {
    mailboxes: Mutex<Mailboxes>,
    arrived: Condvar,
    size: usize,
    timeout: Duration,
    /// Per rank: whether it has warmed up, so its waits are bounded by `timeout` alone.
    warm: Vec<AtomicBool>,
}

impl PostOffice {
    /// Mailboxes for a job of `size` ranks whose receivers give up after `timeout` (at least
    /// [`WARM_UP_TIMEOUT`] until they have warmed up).
    pub(super) fn new(size: usize, timeout: Duration) -> Self {
        Self {
            mailboxes: Mutex::new(Mailboxes::default()),
            arrived: Condvar::new(),
            size,
            timeout,
            warm: (0..size).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// Marks `rank` warmed up: from now on its waits give up after the timeout alone.
    pub(super) fn warmed_up(&self, rank: Rank) {
        if let Some(flag) = self.warm.get(rank) {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// How long `rank` waits for a message now.
    fn patience(&self, rank: Rank) -> Duration {
        if self
            .warm
            .get(rank)
            .is_some_and(|w| w.load(Ordering::Relaxed))
        {
            self.timeout
        } else {
            self.timeout.max(WARM_UP_TIMEOUT)
        }
    }

    /// Ranks in the job.
    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// An error unless `rank` is in the job.
    pub(super) fn check_rank(&self, rank: Rank) -> Result<(), CommError> {
        if rank < self.size {
            Ok(())
        } else {
            Err(CommError::NoSuchRank {
                rank,
                size: self.size,
            })
        }
    }

    fn lock(&self) -> MutexGuard<'_, Mailboxes> {
        // A rank that panicked while holding the lock leaves the queues consistent (every
        // critical section is a single push, pop or flag write), so poisoning is ignored.
        self.mailboxes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An error if the job was aborted.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(super) fn check_open(&self) -> Result<(), CommError> {
        match &self.lock().aborted {
            Some(reason) => Err(CommError::Aborted(reason.clone())),
            None => Ok(()),
        }
    }

    /// Queues `data` from `from` for `to`, unless the job was aborted.
    pub(super) fn deliver(
        &self,
        from: Rank,
        to: Rank,
        tag: Tag,
        data: Vec<f32>,
    ) -> Result<(), CommError> {
        let mut boxes = self.lock();
        if let Some(reason) = &boxes.aborted {
            return Err(CommError::Aborted(reason.clone()));
        }
        boxes
            .queues
            .entry((from, to, tag))
            .or_default()
            .push_back(data);
        self.arrived.notify_all();
        Ok(())
    }

    /// The next message of `tag` from `from` to `to`, waiting until it arrives, the job is
    /// aborted or the timeout passes.
    pub(super) fn collect(&self, to: Rank, from: Rank, tag: Tag) -> Result<Vec<f32>, CommError> {
        let start = Instant::now();
        let patience = self.patience(to);
        let mut boxes = self.lock();
        loop {
            if let Some(reason) = &boxes.aborted {
                return Err(CommError::Aborted(reason.clone()));
            }
            if let Some(data) = boxes
                .queues
                .get_mut(&(from, to, tag))
                .and_then(VecDeque::pop_front)
            {
                return Ok(data);
            }
            let waited = start.elapsed();
            if waited >= patience {
                return Err(CommError::Timeout {
                    rank: to,
                    from,
                    tag,
                    seconds: waited.as_secs_f64(),
                });
            }
            boxes = self
                .arrived
                .wait_timeout(boxes, patience - waited)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Marks the job aborted (the first reason wins) and wakes every receiver. Returns whether
    /// this call was the first.
    pub(super) fn abort(&self, reason: String) -> bool {
        let mut boxes = self.lock();
        let first = boxes.aborted.is_none();
        boxes.aborted.get_or_insert(reason);
        self.arrived.notify_all();
        first
    }
}

/// Creates the connected communicators of the ranks of one process.
#[derive(Debug)]
pub struct LocalHub {
    office: Arc<PostOffice>,
}

impl LocalHub {
    /// A hub for `size` ranks whose receivers give up after 15 minutes.
    pub fn new(size: usize) -> Self {
        Self::with_timeout(size, DEFAULT_TIMEOUT)
    }

    /// A hub for `size` ranks whose receivers give up after `timeout`.
    pub fn with_timeout(size: usize, timeout: Duration) -> Self {
        Self {
            office: Arc::new(PostOffice::new(size, timeout)),
        }
    }

    /// The communicator of `rank`.
    pub fn communicator(&self, rank: Rank) -> Result<LocalCommunicator, CommError> {
        self.office.check_rank(rank)?;
        Ok(LocalCommunicator {
            rank,
            office: self.office.clone(),
            sent: Arc::default(),
        })
    }
}

/// One rank's end of a [`LocalHub`].
#[derive(Debug, Clone)]
pub struct LocalCommunicator {
    rank: Rank,
    office: Arc<PostOffice>,
    sent: Arc<SentBytes>,
}

impl Communicator for LocalCommunicator {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn size(&self) -> usize {
        self.office.size()
    }

    fn send(&self, to: Rank, tag: Tag, data: Vec<f32>) -> Result<(), CommError> {
        self.office.check_rank(to)?;
        self.sent.add(&data);
        self.office.deliver(self.rank, to, tag, data)
    }

    fn recv(&self, from: Rank, tag: Tag) -> Result<Vec<f32>, CommError> {
        self.office.check_rank(from)?;
        self.office.collect(self.rank, from, tag)
    }

    fn abort(&self, reason: &str) {
        self.office.abort(format!("rank {}: {reason}", self.rank));
    }

    fn sent_bytes(&self) -> u64 {
        self.sent.total()
    }

    fn warmed_up(&self) {
        self.office.warmed_up(self.rank);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `body` on every rank of a hub of `size`, each in its own thread.
    fn on_ranks<T: Send>(size: usize, body: impl Fn(LocalCommunicator) -> T + Sync) -> Vec<T> {
        let hub = LocalHub::with_timeout(size, Duration::from_secs(20));
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..size)
                .map(|rank| {
                    let comm = hub.communicator(rank).expect("rank in range");
                    let body = &body;
                    scope.spawn(move || body(comm))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("rank thread"))
                .collect()
        })
    }

    #[test]
    fn ring_all_gather_returns_every_block_in_group_order() {
        let results = on_ranks(4, |comm| {
            let group = [3, 1, 0, 2];
            let mine = vec![comm.rank() as f32; comm.rank() + 1];
            comm.all_gather(&group, Tag::Gather, mine)
        });
        for result in results {
            let blocks = result.expect("all-gather");
            let expected: Vec<Vec<f32>> = [3, 1, 0, 2]
                .iter()
                .map(|&r| vec![r as f32; r + 1])
                .collect();
            assert_eq!(blocks, expected);
        }
    }

    #[test]
    fn reduce_scatter_and_all_reduce_sum_every_member() {
        let results = on_ranks(3, |comm| {
            let group = [0, 1, 2];
            let r = comm.rank() as f32;
            let blocks = (0..3).map(|i| vec![r * 10.0 + i as f32; 2]).collect();
            let scattered = comm.reduce_scatter_sum(&group, Tag::ScatterGrad, blocks)?;
            let reduced = comm.all_reduce_sum(&group, Tag::GradReduce, vec![r, 1.0])?;
            Ok::<_, CommError>((comm.rank(), scattered, reduced))
        });
        for result in results {
            let (rank, scattered, reduced) = result.expect("collectives");
            // Block `rank` from ranks 0, 1, 2: (0 + 10 + 20) + 3·rank.
            assert_eq!(scattered, vec![30.0 + 3.0 * rank as f32; 2]);
            assert_eq!(reduced, vec![3.0, 3.0]);
        }
    }

    #[test]
    fn the_ring_all_reduce_sums_every_chunk_and_sends_less_than_gathering() {
        for members in 1..=5usize {
            // Seven values: uneven chunks, and more members than values in some chunks.
            let results = on_ranks(members, |comm| {
                let group: Vec<usize> = (0..members).collect();
                let r = comm.rank();
                let data: Vec<f32> = (0..7).map(|i| (r * 7 + i) as f32).collect();
                let ring = comm.all_reduce_sum(&group, Tag::GradReduce, data.clone())?;
                let ring_bytes = comm.sent_bytes();
                let gathered = comm.all_reduce_sum_gathered(&group, Tag::GradReduce, data)?;
                let gathered_bytes = comm.sent_bytes() - ring_bytes;
                // Values that round: every member must still hold the same bits.
                let noisy: Vec<f32> = (0..1000)
                    .map(|i| ((r * 1000 + i) as f32 * 0.618).sin() / 3.0)
                    .collect();
                let noisy_sum = comm.all_reduce_sum(&group, Tag::GradReduce, noisy)?;
                Ok::<_, CommError>((ring, [ring_bytes, gathered_bytes], gathered, noisy_sum))
            });
            let expected: Vec<f32> = (0..7)
                .map(|i| (0..members).map(|r| (r * 7 + i) as f32).sum())
                .collect();
            let first_noisy = results[0].as_ref().expect("rank 0").3.clone();
            for result in results {
                let (ring, [ring_bytes, gathered_bytes], gathered, noisy_sum) =
                    result.expect("all-reduce");
                assert_eq!(ring, expected, "{members} members");
                assert_eq!(gathered, expected, "{members} members");
                // 2 (n − 1) / n of the data against (n − 1) times it: 7 values cut in n
                // chunks, each member passing n − 1 chunks twice.
                assert!(
                    ring_bytes <= (2 * 4 * 7 * (members as u64 - 1)).div_ceil(members as u64) + 8,
                    "{members} members: {ring_bytes} bytes"
                );
                assert_eq!(gathered_bytes, 4 * 7 * (members as u64 - 1));
                assert!(
                    ring_bytes < gathered_bytes || members <= 2,
                    "{members} members: the ring sent {ring_bytes} bytes, gathering {gathered_bytes}"
                );
                assert_eq!(
                    noisy_sum.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    first_noisy.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    "{members} members: the same bits everywhere"
                );
            }
        }
    }

    #[test]
    fn broadcast_and_point_to_point_keep_tags_apart() {
        let results = on_ranks(2, |comm| {
            if comm.rank() == 0 {
                comm.send(1, Tag::Activation, vec![1.0])?;
                comm.send(1, Tag::ActivationGrad, vec![2.0])?;
            }
            let b = comm.broadcast(&[0, 1], 0, Tag::Broadcast, vec![7.0])?;
            let got = if comm.rank() == 1 {
                // Read in the opposite order of sending: tags keep them apart.
                let g = comm.recv(0, Tag::ActivationGrad)?;
                let a = comm.recv(0, Tag::Activation)?;
                vec![a[0], g[0]]
            } else {
                vec![]
            };
            comm.barrier(&[0, 1])?;
            Ok::<_, CommError>((b, got))
        });
        let (b0, _) = results[0].clone().expect("rank 0");
        let (b1, got) = results[1].clone().expect("rank 1");
        assert_eq!((b0, b1), (vec![7.0], vec![7.0]));
        assert_eq!(got, vec![1.0, 2.0]);
    }

    #[test]
    fn abort_wakes_a_blocked_receiver_and_a_silent_peer_times_out() {
        let hub = LocalHub::with_timeout(2, Duration::from_millis(200));
        let waiting = hub.communicator(1).expect("rank 1");
        assert_eq!(
            hub.office.patience(1),
            WARM_UP_TIMEOUT,
            "cold: compile time allowed"
        );
        waiting.warmed_up();
        assert_eq!(hub.office.patience(1), Duration::from_millis(200));
        assert_eq!(
            hub.office.patience(0),
            WARM_UP_TIMEOUT,
            "only rank 1 warmed up"
        );
        let timed_out = waiting.recv(0, Tag::Gather).expect_err("nobody sends");
        assert!(
            matches!(
                timed_out,
                CommError::Timeout {
                    rank: 1,
                    from: 0,
                    ..
                }
            ),
            "{timed_out}"
        );
        let aborter = hub.communicator(0).expect("rank 0");
        std::thread::scope(|scope| {
            let blocked = scope.spawn(|| waiting.recv(0, Tag::Gather));
            std::thread::sleep(Duration::from_millis(50));
            aborter.abort("out of memory");
            let err = blocked.join().expect("thread").expect_err("aborted");
            assert!(err.to_string().contains("rank 0: out of memory"), "{err}");
        });
        assert!(hub.communicator(2).is_err(), "rank 2 is outside a hub of 2");
    }
}
