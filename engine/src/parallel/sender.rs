//! A pipeline stage's sends on a thread of their own, so that they overlap the device's
//! compute: the worker starts a tensor's copy to the host ([`HostRead::start`]) and hands it
//! over with the messages to cut from it; the thread waits for the copy and sends, while the
//! worker goes on with its next pass. Sends keep their order (one thread, first in, first
//! out), so messages of one tag still arrive in the order they were made.
//!
//! Each transfer is timed from hand-over to its last send, and the worker's waits for them
//! are timed too: the difference is the transfer time hidden behind compute. With
//! [`SYNC_TRANSFERS_VAR`]` = 1` the worker waits for each transfer as soon as it hands it over,
//! as it did before the thread: the baseline the overlap is measured against.

use std::cell::Cell;
use std::ops::Range;
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::WORKER_THREAD_PREFIX;
use crate::{
    EngineError,
    comm::{Communicator, Rank, Tag},
    host::HostRead,
    timing::TransferTime,
};

/// The environment variable that, set to `1`, makes a worker wait for each of its stage
/// transfers at once (no overlap).
pub const SYNC_TRANSFERS_VAR: &str = "MEGAGRAPH_SYNC_TRANSFERS";

/// One message of a transfer: a range of the copied values, to `to` under `tag`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Outgoing {
    pub to: Rank,
    pub tag: Tag,
    pub values: Range<usize>,
}

/// A transfer handed to the thread.
struct Transfer {
    read: HostRead,
    messages: Vec<Outgoing>,
    handed_over: Instant,
}

/// A device's sending thread and what it has been given.
pub(super) struct StageSender {
    /// Closed (`None`) when the sender is dropped, which ends the thread.
    transfers: Option<mpsc::Sender<Transfer>>,
    /// Each transfer's duration, or why it failed, in hand-over order.
    finished: mpsc::Receiver<Result<Duration, String>>,
    thread: Option<JoinHandle<()>>,
    /// Transfers handed over and not yet waited for.
    pending: Cell<usize>,
    /// Time since [`Self::take_time`] last read it.
    time: Cell<TransferTime>,
    /// Whether each hand-over is waited for at once ([`SYNC_TRANSFERS_VAR`]).
    synchronous: bool,
}

impl StageSender {
    /// Starts the sending thread of device `rank`, which sends through `comm`; `synchronous`:
    /// every hand-over is waited for at once.
    pub fn start(rank: Rank, comm: Arc<dyn Communicator>, synchronous: bool) -> Self {
        let (transfers, inbox) = mpsc::channel::<Transfer>();
        let (report, finished) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("{WORKER_THREAD_PREFIX}{rank}-sends"))
            .spawn(move || {
                for transfer in inbox {
                    let outcome = send(&*comm, transfer);
                    if let Err(reason) = &outcome {
                        // Peers may be waiting for what was not sent: end the job everywhere.
                        comm.abort(reason);
                    }
                    if report.send(outcome).is_err() {
                        break;
                    }
                }
            })
            .expect("the system starts a sending thread per pipeline device");
        Self {
            transfers: Some(transfers),
            finished,
            thread: Some(thread),
            pending: Cell::new(0),
            time: Cell::new(TransferTime::default()),
            synchronous,
        }
    }

    /// The synchronous mode from [`SYNC_TRANSFERS_VAR`].
    pub fn synchronous_from_env() -> bool {
        std::env::var(SYNC_TRANSFERS_VAR).is_ok_and(|v| v == "1")
    }

    /// Hands over `read` (started on this device) and the `messages` to cut from its values.
    pub fn send(&self, read: HostRead, messages: Vec<Outgoing>) -> Result<(), EngineError> {
        let transfer = Transfer {
            read,
            messages,
            handed_over: Instant::now(),
        };
        self.transfers
            .as_ref()
            .and_then(|t| t.send(transfer).ok())
            .ok_or_else(stopped)?;
        self.pending.set(self.pending.get() + 1);
        if self.synchronous {
            self.wait_for_all()?;
        }
        Ok(())
    }

    /// Waits until every transfer handed over has been sent; the first failure, if any.
    pub fn wait_for_all(&self) -> Result<(), EngineError> {
        let start = Instant::now();
        let mut time = self.time.get();
        let mut failure = None;
        while self.pending.get() > 0 {
            let outcome = self.finished.recv().map_err(|_| stopped())?;
            self.pending.set(self.pending.get() - 1);
            match outcome {
                Ok(took) => time.seconds += took.as_secs_f64(),
                Err(reason) => {
                    failure.get_or_insert(reason);
                }
            }
        }
        time.exposed_seconds += start.elapsed().as_secs_f64();
        self.time.set(time);
        match failure {
            Some(reason) => Err(EngineError::Plan(format!(
                "a stage transfer failed: {reason}"
            ))),
            None => Ok(()),
        }
    }

    /// The time spent in transfers waited for since the last call, and starts again from zero.
    pub fn take_time(&self) -> TransferTime {
        self.time.take()
    }
}

impl Drop for StageSender {
    fn drop(&mut self) {
        self.transfers.take();
        if let Some(thread) = self.thread.take() {
            // A panic there has already been reported as a failed or missing transfer.
            let _ = thread.join();
        }
    }
}

/// Waits for `transfer`'s values and sends its messages; how long that took from hand-over.
fn send(comm: &dyn Communicator, transfer: Transfer) -> Result<Duration, String> {
    let values = transfer.read.values().map_err(|e| {
        format!(
            "reading a stage transfer back from rank {}: {e}",
            comm.rank()
        )
    })?;
    for Outgoing {
        to,
        tag,
        values: range,
    } in transfer.messages
    {
        let part = values.get(range.clone()).ok_or_else(|| {
            format!(
                "rank {} cut values {range:?} from a transfer of {}",
                comm.rank(),
                values.len()
            )
        })?;
        comm.send(to, tag, part.to_vec())
            .map_err(|e| format!("rank {} sending to rank {to}: {e}", comm.rank()))?;
    }
    Ok(transfer.handed_over.elapsed())
}

/// The error of a sending thread that is gone.
fn stopped() -> EngineError {
    EngineError::Plan("the stage's sending thread stopped".to_string())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use burn::tensor::{Tensor, TensorData};

    use super::{Outgoing, StageSender};
    use crate::{
        comm::{Communicator, LocalHub, Tag},
        device::CpuBackend,
        host::HostRead,
    };

    #[test]
    fn transfers_arrive_in_order_cut_as_asked_and_are_timed() {
        let hub = LocalHub::new(2);
        let second = hub.communicator(1).unwrap();
        let sender = StageSender::start(0, Arc::new(hub.communicator(0).unwrap()), false);
        let device = Default::default();
        for round in 0..3 {
            let values: Vec<f32> = (0..6).map(|v| (round * 10 + v) as f32).collect();
            let tensor =
                Tensor::<CpuBackend, 2>::from_data(TensorData::new(values, [2, 3]), &device);
            let messages = vec![
                Outgoing {
                    to: 1,
                    tag: Tag::Activation,
                    values: 3..6,
                },
                Outgoing {
                    to: 1,
                    tag: Tag::Activation,
                    values: 0..0,
                },
                Outgoing {
                    to: 1,
                    tag: Tag::ActivationGrad,
                    values: 0..3,
                },
            ];
            sender.send(HostRead::start(tensor), messages).unwrap();
        }
        sender.wait_for_all().unwrap();
        for round in 0..3 {
            let base = (round * 10) as f32;
            assert_eq!(
                second.recv(0, Tag::Activation).unwrap(),
                [3.0, 4.0, 5.0].map(|v| v + base)
            );
            assert!(second.recv(0, Tag::Activation).unwrap().is_empty());
            assert_eq!(
                second.recv(0, Tag::ActivationGrad).unwrap(),
                [0.0, 1.0, 2.0].map(|v| v + base)
            );
        }
        let time = sender.take_time();
        assert!(time.seconds > 0.0 && time.exposed_seconds > 0.0, "{time:?}");
        assert_eq!(
            sender.take_time(),
            Default::default(),
            "taking the time resets it"
        );
    }

    #[test]
    fn a_bad_cut_fails_a_synchronous_hand_over_and_aborts_the_job() {
        let hub = LocalHub::new(2);
        let second = hub.communicator(1).unwrap();
        let sender = StageSender::start(0, Arc::new(hub.communicator(0).unwrap()), true);
        let tensor = Tensor::<CpuBackend, 1>::from_data(
            TensorData::new(vec![1f32; 4], [4]),
            &Default::default(),
        );
        let messages = vec![Outgoing {
            to: 1,
            tag: Tag::Activation,
            values: 2..9,
        }];
        // Synchronous: the hand-over waits for the transfer, and reports its failure.
        let error = sender
            .send(HostRead::start(tensor), messages)
            .unwrap_err()
            .to_string();
        assert!(error.contains("2..9"), "{error}");
        assert!(
            second.recv(0, Tag::Activation).is_err(),
            "the job is aborted"
        );
    }
}
