//! Communication across processes, on one machine or many, over MPI (rsmpi on Open MPI).
//!
//! A job's ranks (its devices) are placed on processes: `placement[rank]` is the MPI process
//! that drives device `rank`. Messages between devices of one process go through the same
//! mailboxes as [`LocalHub`](super::LocalHub)'s; messages to another process go by MPI on a
//! communicator of the job's own (a duplicate of `MPI_COMM_WORLD`, so they never mix with
//! anything else), and a receiver thread per process takes every message that arrives and
//! files it in the mailboxes. Because the receiver always drains, a blocking MPI send never
//! waits on the receiving worker, which is what [`Communicator::send`] promises.
//!
//! A message is the `f32` payload followed by three `u32` (as `f32` bits): sender, receiver,
//! tag. An abort travels as its reason's bytes to every other process and fails every blocked
//! and later call there, as a local abort does.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mpi::{
    Threading,
    environment::Universe,
    point_to_point::MatchedReceiveVec,
    topology::{Communicator as _, SimpleCommunicator},
    traits::{Destination, Source},
};

use super::{
    CommError, Communicator, Rank, SentBytes, Tag, local::PostOffice, ring_all_reduce_sum,
};

/// MPI tag of a worker's message.
const DATA: i32 = 1;
/// MPI tag of an abort (payload: the reason, UTF-8).
const ABORT: i32 = 2;
/// MPI tag that stops a process's receiver thread (sent to itself).
const STOP: i32 = 3;
/// MPI tag of process-level exchanges outside jobs (profiling, benchmarks, setup).
const RAW: i32 = 4;

/// An MPI communicator that threads may share: MPI is initialised with
/// `MPI_THREAD_MULTIPLE`, under which every MPI call is safe from any thread.
struct SharedComm(SimpleCommunicator);

// SAFETY: the handle is an opaque MPI object; `MpiRuntime::init` refuses to run unless the
// library provides MPI_THREAD_MULTIPLE, which makes concurrent calls on it from any thread
// legal.
unsafe impl Send for SharedComm {}
// SAFETY: as above.
unsafe impl Sync for SharedComm {}

/// Whether this process was started by `mpirun`/`mpiexec` (Open MPI, MPICH or a PMI launcher).
pub fn launched_by_mpirun() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// MPI, initialised for threads; one per process, finalised when dropped.
pub struct MpiRuntime {
    _universe: Universe,
    world: SharedComm,
    process: usize,
    processes: usize,
}

impl std::fmt::Debug for MpiRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiRuntime")
            .field("process", &self.process)
            .field("processes", &self.processes)
            .finish()
    }
}

impl MpiRuntime {
    /// Initialises MPI with `MPI_THREAD_MULTIPLE` (each device's worker is a thread that
    /// talks to other processes). Fails if MPI was initialised already or the library does
    /// not support threads.
    pub fn init() -> Result<Self, CommError> {
        let (universe, provided) = mpi::initialize_with_threading(Threading::Multiple)
            .ok_or_else(|| CommError::Mpi("MPI was already initialised in this process".into()))?;
        if provided != Threading::Multiple {
            return Err(CommError::Mpi(format!(
                "the MPI library provides {provided:?} threading, MegaGraph needs Multiple (build Open MPI with thread support)"
            )));
        }
        let world = universe.world();
        Ok(Self {
            process: world.rank() as usize,
            processes: world.size() as usize,
            world: SharedComm(world),
            _universe: universe,
        })
    }

    /// This process's rank in `MPI_COMM_WORLD`.
    pub fn process(&self) -> usize {
        self.process
    }

    /// Processes in `MPI_COMM_WORLD`.
    pub fn processes(&self) -> usize {
        self.processes
    }

    /// The name of this process's machine, as MPI reports it.
    pub fn host(&self) -> String {
        mpi::environment::processor_name().unwrap_or_else(|_| "unknown host".into())
    }

    /// Ends every process of the job at once (`MPI_Abort`), with `code` as exit status.
    pub fn abort(&self, code: i32) -> ! {
        self.world.0.abort(code)
    }

    /// Every process's `data`, in process order, on every process (process 0 gathers and
    /// sends the whole back). Called by every process, outside jobs.
    pub fn all_gather_bytes(&self, data: &[u8]) -> Vec<Vec<u8>> {
        let world = &self.world.0;
        if self.process != 0 {
            world.process_at_rank(0).send_with_tag(data, RAW);
            let (lengths, _) = world.process_at_rank(0).receive_vec_with_tag::<u64>(RAW);
            let (all, _) = world.process_at_rank(0).receive_vec_with_tag::<u8>(RAW);
            return split_lengths(&all, &lengths);
        }
        let mut parts = vec![data.to_vec()];
        for p in 1..self.processes {
            parts.push(
                world
                    .process_at_rank(p as i32)
                    .receive_vec_with_tag::<u8>(RAW)
                    .0,
            );
        }
        let lengths: Vec<u64> = parts.iter().map(|p| p.len() as u64).collect();
        let all = parts.concat();
        for p in 1..self.processes {
            world
                .process_at_rank(p as i32)
                .send_with_tag(&lengths[..], RAW);
            world.process_at_rank(p as i32).send_with_tag(&all[..], RAW);
        }
        parts
    }

    /// Seconds per round trip of a `values`-long `f32` message between processes `a` and `b`
    /// (mean of `rounds`, after one warm-up), on the process that is `a`; `None` elsewhere.
    /// Both `a` and `b` must call it; other processes return at once.
    pub fn ping_pong(&self, a: usize, b: usize, values: usize, rounds: usize) -> Option<f64> {
        let world = &self.world.0;
        let message = vec![1f32; values];
        let (peer, leads) = match self.process {
            p if p == a => (b, true),
            p if p == b => (a, false),
            _ => return None,
        };
        let peer = world.process_at_rank(peer as i32);
        let mut start = Instant::now();
        for round in 0..=rounds {
            if round == 1 {
                start = Instant::now();
            }
            if leads {
                peer.send_with_tag(&message[..], RAW);
                let _ = peer.receive_vec_with_tag::<f32>(RAW);
            } else {
                let (echo, _) = peer.receive_vec_with_tag::<f32>(RAW);
                peer.send_with_tag(&echo[..], RAW);
            }
        }
        leads.then(|| start.elapsed().as_secs_f64() / rounds.max(1) as f64)
    }

    /// MPI's own all-reduce (`MPI_Allreduce`, sum) of `data` over every process.
    pub fn native_all_reduce_sum(&self, data: &[f32]) -> Vec<f32> {
        use mpi::collective::{CommunicatorCollectives, SystemOperation};
        let mut out = vec![0f32; data.len()];
        self.world
            .0
            .all_reduce_into(data, &mut out[..], SystemOperation::sum());
        out
    }

    /// Waits until every process calls it.
    pub fn barrier(&self) {
        use mpi::collective::CommunicatorCollectives;
        self.world.0.barrier();
    }

    /// Starts a job whose device `rank` is driven by process `placement[rank]`; receivers
    /// give up after `timeout`. Every process must start the job with the same placement.
    pub fn job(&self, placement: Vec<usize>, timeout: Duration) -> Result<MpiJob<'_>, CommError> {
        if let Some((rank, &process)) = placement
            .iter()
            .enumerate()
            .find(|&(_, &p)| p >= self.processes)
        {
            return Err(CommError::Mpi(format!(
                "device {rank} is placed on process {process}, but the job has {} processes (mpirun -np)",
                self.processes
            )));
        }
        let comm = Arc::new(SharedComm(self.world.0.duplicate()));
        let office = Arc::new(PostOffice::new(placement.len(), timeout));
        let receiver = {
            let (comm, office) = (comm.clone(), office.clone());
            std::thread::Builder::new()
                .name("mpi-receiver".into())
                .spawn(move || receive_until_stopped(&comm, &office))
                .map_err(|e| CommError::Mpi(format!("cannot start the receiver thread: {e}")))?
        };
        Ok(MpiJob {
            runtime: self,
            comm,
            office,
            placement: placement.into(),
            receiver: Some(receiver),
            native_all_reduce: false,
        })
    }
}

/// Cuts `all` into consecutive parts of `lengths` bytes.
fn split_lengths(all: &[u8], lengths: &[u64]) -> Vec<Vec<u8>> {
    let mut start = 0;
    lengths
        .iter()
        .map(|&n| {
            let part = all[start..start + n as usize].to_vec();
            start += n as usize;
            part
        })
        .collect()
}

/// How long a poll loop keeps yielding rather than sleeping (messages come in bursts: a ring
/// step, an answer).
const BUSY_POLL: Duration = Duration::from_millis(1);

/// The longest a poll loop sleeps between polls when nothing has happened for a while.
const MAX_IDLE_SLEEP: Duration = Duration::from_micros(100);

/// Waits politely: yields the core between polls for [`BUSY_POLL`] after `since`, then
/// sleeps a little longer at each call, up to [`MAX_IDLE_SLEEP`].
struct Backoff {
    since: Instant,
    sleep: Duration,
}

impl Backoff {
    fn new() -> Self {
        Self {
            since: Instant::now(),
            sleep: Duration::from_micros(20),
        }
    }

    fn wait(&mut self) {
        if self.since.elapsed() < BUSY_POLL {
            std::thread::yield_now();
        } else {
            std::thread::sleep(self.sleep);
            self.sleep = (self.sleep * 2).min(MAX_IDLE_SLEEP);
        }
    }
}

/// Sends `data` to `process` and waits for the send to complete by polling (`MPI_Isend`,
/// `MPI_Test`) with [`Backoff`]: a blocking `MPI_Send` of a large message spins until the
/// receiver matches it, which with two spinning sides per core (ring steps send both ways at
/// once) cost milliseconds per message here.
fn send_polling<T: mpi::datatype::Equivalence>(
    comm: &SharedComm,
    process: usize,
    data: &[T],
    tag: i32,
) {
    mpi::request::scope(|scope| {
        let mut request = comm
            .0
            .process_at_rank(process as i32)
            .immediate_send_with_tag(scope, data, tag);
        let mut backoff = Backoff::new();
        loop {
            match request.test() {
                Ok(_) => return,
                Err(pending) => request = pending,
            }
            backoff.wait();
        }
    });
}

/// The receiver thread: files every worker message in the mailboxes, applies aborts, and
/// returns on this process's stop message. It polls (`MPI_Improbe`) with [`Backoff`]: a
/// blocking probe busy-waits in Open MPI and would take a whole core from the device's own
/// work (with lavapipe, from the device itself).
fn receive_until_stopped(comm: &SharedComm, office: &PostOffice) {
    let mut backoff = Backoff::new();
    loop {
        let Some((message, status)) = comm.0.any_process().immediate_matched_probe() else {
            backoff.wait();
            continue;
        };
        backoff = Backoff::new();
        match status.tag() {
            DATA => {
                let (mut data, _) = (message, status).matched_receive_vec::<f32>();
                let Some((from, to, tag)) = split_header(&mut data) else {
                    office.abort(format!(
                        "process {} sent a malformed message",
                        status.source_rank()
                    ));
                    continue;
                };
                // After an abort the message is of no use; dropping it is right.
                let _ = office.deliver(from, to, tag, data);
            }
            ABORT => {
                let (reason, _) = (message, status).matched_receive_vec::<u8>();
                office.abort(String::from_utf8_lossy(&reason).into_owned());
            }
            STOP => {
                let _ = (message, status).matched_receive_vec::<u8>();
                return;
            }
            other => {
                let _ = (message, status).matched_receive_vec::<u8>();
                office.abort(format!(
                    "process {} sent a message of unknown kind {other}",
                    status.source_rank()
                ));
            }
        }
    }
}

/// Appends the (sender, receiver, tag) header to a payload.
fn append_header(data: &mut Vec<f32>, from: Rank, to: Rank, tag: Tag) {
    data.extend([from as u32, to as u32, tag.index() as u32].map(f32::from_bits));
}

/// Removes the header from a received message: (sender, receiver, tag).
fn split_header(data: &mut Vec<f32>) -> Option<(Rank, Rank, Tag)> {
    let at = data.len().checked_sub(3)?;
    let header: Vec<u32> = data.split_off(at).into_iter().map(f32::to_bits).collect();
    let tag = Tag::from_index(header[2] as usize)?;
    Some((header[0] as Rank, header[1] as Rank, tag))
}

/// One job across processes: the receiver thread, the mailboxes of this process's devices
/// and the placement of every device.
pub struct MpiJob<'a> {
    runtime: &'a MpiRuntime,
    comm: Arc<SharedComm>,
    office: Arc<PostOffice>,
    placement: Arc<[usize]>,
    receiver: Option<JoinHandle<()>>,
    native_all_reduce: bool,
}

impl std::fmt::Debug for MpiJob<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiJob")
            .field("process", &self.runtime.process)
            .field("placement", &self.placement)
            .finish()
    }
}

impl MpiJob<'_> {
    /// Makes the communicators made from now on all-reduce with `MPI_Allreduce` where a group
    /// has one device on every process (`train --fast-allreduce`); other groups keep the ring.
    /// MPI's sums are in an order of its choosing: every process gets the same bits from Open
    /// MPI's algorithms, but a run is not bit-reproducible across process counts.
    pub fn use_native_all_reduce(&mut self) {
        self.native_all_reduce = true;
    }

    /// The devices of the job this process drives, in rank order.
    pub fn local_ranks(&self) -> Vec<Rank> {
        (0..self.placement.len())
            .filter(|&r| self.placement[r] == self.runtime.process)
            .collect()
    }

    /// The process that drives device `rank`.
    pub fn process_of(&self, rank: Rank) -> usize {
        self.placement[rank]
    }

    /// The communicator of device `rank`, which this process must drive.
    pub fn communicator(&self, rank: Rank) -> Result<MpiCommunicator, CommError> {
        self.office.check_rank(rank)?;
        if self.placement[rank] != self.runtime.process {
            return Err(CommError::Mpi(format!(
                "device {rank} is driven by process {}, not by this process ({})",
                self.placement[rank], self.runtime.process
            )));
        }
        Ok(MpiCommunicator {
            sent: Arc::default(),
            rank,
            process: self.runtime.process,
            comm: self.comm.clone(),
            office: self.office.clone(),
            placement: self.placement.clone(),
            native_all_reduce: self.native_all_reduce,
        })
    }

    /// Ends the job cleanly: waits for every process to finish it, then stops the receiver.
    /// Call it once every local worker has ended without error.
    pub fn finish(mut self) {
        use mpi::collective::CommunicatorCollectives;
        self.comm.0.barrier();
        self.stop_receiver();
    }

    fn stop_receiver(&mut self) {
        if let Some(receiver) = self.receiver.take() {
            self.comm
                .0
                .process_at_rank(self.runtime.process as i32)
                .send_with_tag(&[0u8][..], STOP);
            // A receiver that panicked has nothing left to clean up.
            let _ = receiver.join();
        }
    }
}

impl Drop for MpiJob<'_> {
    fn drop(&mut self) {
        self.stop_receiver();
    }
}

/// One device's end of an [`MpiJob`].
#[derive(Clone)]
pub struct MpiCommunicator {
    rank: Rank,
    sent: Arc<SentBytes>,
    process: usize,
    comm: Arc<SharedComm>,
    office: Arc<PostOffice>,
    placement: Arc<[usize]>,
    native_all_reduce: bool,
}

impl MpiCommunicator {
    /// Whether `group` has exactly one device on every process of the job, so that
    /// `MPI_Allreduce` over the job's MPI communicator reduces over exactly its members.
    fn one_per_process(&self, group: &[Rank]) -> bool {
        let processes = self.comm.0.size() as usize;
        let mut seen = vec![false; processes];
        group.len() == processes
            && group.iter().all(|&rank| {
                let process = self.placement[rank];
                !std::mem::replace(&mut seen[process], true)
            })
    }
}

impl std::fmt::Debug for MpiCommunicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiCommunicator")
            .field("rank", &self.rank)
            .field("process", &self.process)
            .finish()
    }
}

impl Communicator for MpiCommunicator {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn size(&self) -> usize {
        self.office.size()
    }

    fn send(&self, to: Rank, tag: Tag, mut data: Vec<f32>) -> Result<(), CommError> {
        self.office.check_rank(to)?;
        self.sent.add(&data);
        let process = self.placement[to];
        if process == self.process {
            return self.office.deliver(self.rank, to, tag, data);
        }
        self.office.check_open()?;
        append_header(&mut data, self.rank, to, tag);
        send_polling(&self.comm, process, &data[..], DATA);
        Ok(())
    }

    fn recv(&self, from: Rank, tag: Tag) -> Result<Vec<f32>, CommError> {
        self.office.check_rank(from)?;
        self.office.collect(self.rank, from, tag)
    }

    fn abort(&self, reason: &str) {
        let reason = format!("rank {} (process {}): {reason}", self.rank, self.process);
        if self.office.abort(reason.clone()) {
            let processes = self.comm.0.size() as usize;
            for p in (0..processes).filter(|&p| p != self.process) {
                send_polling(&self.comm, p, reason.as_bytes(), ABORT);
            }
        }
    }

    fn sent_bytes(&self) -> u64 {
        self.sent.total()
    }

    /// `MPI_Allreduce` where the job was told to use it and `group` has one device per
    /// process; the ring otherwise.
    fn all_reduce_sum(
        &self,
        group: &[Rank],
        tag: Tag,
        data: Vec<f32>,
    ) -> Result<Vec<f32>, CommError> {
        if !(self.native_all_reduce && self.one_per_process(group)) {
            return ring_all_reduce_sum(self, group, tag, data);
        }
        use mpi::collective::{CommunicatorCollectives, SystemOperation};
        self.position(group)?;
        self.office.check_open()?;
        // MPI's algorithm moves what it moves; the count takes the payload once.
        self.sent.add(&data);
        let mut out = vec![0f32; data.len()];
        self.comm
            .0
            .all_reduce_into(&data[..], &mut out[..], SystemOperation::sum());
        Ok(out)
    }

    fn warmed_up(&self) {
        self.office.warmed_up(self.rank);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_a_short_message_is_malformed() {
        let mut data = vec![1.5, -2.0];
        append_header(&mut data, 3, 7, Tag::ActivationGrad);
        assert_eq!(split_header(&mut data), Some((3, 7, Tag::ActivationGrad)));
        assert_eq!(data, vec![1.5, -2.0]);
        assert_eq!(split_header(&mut vec![0.0; 2]), None);
        let mut bad_tag = vec![0.0];
        bad_tag.extend([0u32, 1, 999].map(f32::from_bits));
        assert_eq!(split_header(&mut bad_tag), None);
    }

    #[test]
    fn gathered_bytes_split_back_into_their_parts() {
        let parts = split_lengths(b"abcdef", &[2, 0, 4]);
        assert_eq!(parts, vec![b"ab".to_vec(), vec![], b"cdef".to_vec()]);
    }
}
