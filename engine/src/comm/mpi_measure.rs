//! Measuring MPI links: ping-pong latency and bandwidth between processes (for the cluster
//! spec), and the send/recv and all-reduce bandwidth of the job communicator next to MPI's
//! own (for `megagraph bench comm`).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Communicator, MpiRuntime, Tag};

/// The link between two processes, measured by ping-pong.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProcessLink {
    /// One process.
    pub a: usize,
    /// The other.
    pub b: usize,
    /// Half the round trip of a 4-byte message, seconds.
    pub latency: f64,
    /// Bytes per second of a large message, latency excluded.
    pub bandwidth: f64,
}

/// Values (f32) of the message that measures bandwidth: 16 MiB.
const BANDWIDTH_VALUES: usize = 1 << 22;

/// Every pair of processes' link, on every process. Called by every process.
pub fn measure_process_links(runtime: &MpiRuntime) -> Vec<ProcessLink> {
    let n = runtime.processes();
    let mut mine = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            runtime.barrier();
            let small = runtime.ping_pong(a, b, 1, 200);
            let large = runtime.ping_pong(a, b, BANDWIDTH_VALUES, 10);
            if let (Some(small), Some(large)) = (small, large) {
                let latency = small / 2.0;
                let one_way = (large / 2.0 - latency).max(1e-9);
                mine.push(ProcessLink {
                    a,
                    b,
                    latency,
                    bandwidth: (BANDWIDTH_VALUES * 4) as f64 / one_way,
                });
            }
        }
    }
    let bytes = serde_json::to_vec(&mine).expect("links serialize");
    runtime
        .all_gather_bytes(&bytes)
        .iter()
        .flat_map(|part| {
            serde_json::from_slice::<Vec<ProcessLink>>(part).expect("every process sends links")
        })
        .collect()
}

/// One message size of `megagraph bench comm`: bandwidths in bytes per second.
#[derive(Debug, Clone, Serialize)]
pub struct CommBenchRow {
    /// Bytes per message.
    pub bytes: usize,
    /// Process 0 ↔ 1 ping-pong through MPI directly: bytes over half the round trip.
    pub mpi_send_recv: f64,
    /// The same through the job communicator (mailboxes and receiver thread).
    pub job_send_recv: f64,
    /// `MPI_Allreduce` (sum) over every process: algorithm bandwidth, bytes over time.
    pub mpi_all_reduce: f64,
    /// The job communicator's all-reduce (ring reduce-scatter + all-gather) over every
    /// process.
    pub job_all_reduce: f64,
    /// The job communicator's all-reduce as it was before the ring (all-gather, then
    /// group-order sums) over every process.
    pub job_all_reduce_gathered: f64,
}

/// Mean seconds of `rounds` calls of `body` after one warm-up call.
fn timed(rounds: usize, mut body: impl FnMut()) -> f64 {
    body();
    let start = Instant::now();
    for _ in 0..rounds {
        body();
    }
    start.elapsed().as_secs_f64() / rounds.max(1) as f64
}

/// Measures each of `sizes` (bytes) `rounds` times; the rows on process 0, `None` elsewhere.
/// Called by every process of at least two.
pub fn bench_comm(
    runtime: &MpiRuntime,
    sizes: &[usize],
    rounds: usize,
) -> Result<Option<Vec<CommBenchRow>>, super::CommError> {
    let n = runtime.processes();
    if n < 2 {
        return Err(super::CommError::Mpi(
            "bench comm needs at least two processes (mpirun -np 2 …)".into(),
        ));
    }
    // MPI alone first, with no job (and so no receiver thread) running.
    let mut native = Vec::new();
    for &bytes in sizes {
        let data = vec![1f32; (bytes / 4).max(1)];
        runtime.barrier();
        let rtt = runtime.ping_pong(0, 1, data.len(), rounds);
        runtime.barrier();
        let reduce = timed(rounds, || {
            runtime.native_all_reduce_sum(&data);
        });
        native.push((rtt, reduce));
    }
    let job = runtime.job((0..n).collect(), Duration::from_secs(120))?;
    let comm = job.communicator(runtime.process())?;
    let everyone: Vec<usize> = (0..n).collect();
    let mut rows = Vec::new();
    for (&bytes, (mpi_rtt, mpi_reduce)) in sizes.iter().zip(native) {
        let data = vec![1f32; (bytes / 4).max(1)];
        runtime.barrier();
        let mut job_rtt = 0.0;
        match runtime.process() {
            0 => {
                job_rtt = timed(rounds, || {
                    comm.send(1, Tag::Report, data.clone()).expect("send");
                    comm.recv(1, Tag::Report).expect("echo");
                });
            }
            1 => {
                for _ in 0..=rounds {
                    let echo = comm.recv(0, Tag::Report)?;
                    comm.send(0, Tag::Report, echo)?;
                }
            }
            _ => {}
        }
        let mut failed = None;
        let mut time_reduce = |gathered: bool| {
            runtime.barrier();
            timed(rounds, || {
                let result = if gathered {
                    comm.all_reduce_sum_gathered(&everyone, Tag::GradReduce, data.clone())
                } else {
                    comm.all_reduce_sum(&everyone, Tag::GradReduce, data.clone())
                };
                if let Err(e) = result {
                    failed = Some(e);
                }
            })
        };
        let job_reduce = time_reduce(false);
        let job_reduce_gathered = time_reduce(true);
        if let Some(e) = failed {
            return Err(e);
        }
        let size = (data.len() * 4) as f64;
        if let Some(mpi_rtt) = mpi_rtt {
            rows.push(CommBenchRow {
                bytes: data.len() * 4,
                mpi_send_recv: size / (mpi_rtt / 2.0),
                job_send_recv: size / (job_rtt / 2.0),
                mpi_all_reduce: size / mpi_reduce,
                job_all_reduce: size / job_reduce,
                job_all_reduce_gathered: size / job_reduce_gathered,
            });
        }
    }
    job.finish();
    Ok((runtime.process() == 0).then_some(rows))
}
