//! What devices tell each other and the lead at the end of a run or an epoch: sums over the
//! job, every device's figures, and the final parameters.

use burn::tensor::backend::AutodiffBackend;

use super::{Role, worker::Worker};
use crate::{
    EngineError,
    comm::{Rank, Tag},
    device::MemoryProbe,
    model::ModelBackend,
    run::DeviceRun,
};

impl<B> Worker<'_, B>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    /// Every device's figures on the lead, in rank order (`None` elsewhere).
    pub(super) fn collect_device_runs(
        &self,
        mine: DeviceRun,
    ) -> Result<Option<Vec<DeviceRun>>, EngineError> {
        let lead = self.job.layout.device(0, 0, 0);
        if self.rank != lead {
            self.comm.send(lead, Tag::Report, encode_run(&mine))?;
            return Ok(None);
        }
        let mut runs = Vec::new();
        for &rank in &self.everyone {
            runs.push(if rank == lead {
                mine.clone()
            } else {
                decode_run(rank, &self.comm.recv(rank, Tag::Report)?)?
            });
        }
        Ok(Some(runs))
    }

    /// The element-wise sum of `values` over every device of the job.
    pub(super) fn sum_over_job(&self, values: Vec<f32>) -> Result<Vec<f32>, EngineError> {
        Ok(self
            .comm
            .all_reduce_sum(&self.everyone, Tag::Report, values)?)
    }

    /// Gathers the final parameters on the lead device (replica 0, stage 0, shard 0): each
    /// stage's first device sends its part, the lead appends the shared table.
    pub(super) fn collect_parameters(&self) -> Result<Option<Vec<f32>>, EngineError> {
        let layout = self.job.layout;
        let lead = layout.device(0, 0, 0);
        let Role {
            replica,
            stage,
            shard,
        } = self.role;
        let stage_leader = replica == 0 && shard == 0;
        if stage_leader && self.rank != lead {
            let values = self
                .model
                .parameter_values(&self.model.part_ids(&self.part));
            self.comm.send(lead, Tag::Report, values)?;
        }
        if self.rank != lead {
            return Ok(None);
        }
        debug_assert_eq!(stage, 0);
        let mut all = self
            .model
            .parameter_values(&self.model.part_ids(&self.part));
        for stage in 1..layout.degrees().pp {
            all.extend(self.comm.recv(layout.device(0, stage, 0), Tag::Report)?);
        }
        all.extend(self.model.parameter_values(&[self.model.table_id()]));
        Ok(Some(all))
    }
}

/// Values of [`encode_run`]'s message before the adapter's name.
const RUN_FIGURES: usize = 18;

/// A device's figures as a message: step seconds, peak reserved, peak in use, bytes sent per
/// step (all and the steps' own), transfer and hidden transfer seconds per step, exchange and
/// hidden exchange seconds per step, each as the two halves of its 64 bits (`u64::MAX`: not
/// measured), then the adapter's name in UTF-8, four bytes a value (zero-padded).
fn encode_run(run: &DeviceRun) -> Vec<f32> {
    let figures = [
        run.step_seconds.to_bits(),
        run.peak_bytes.unwrap_or(u64::MAX),
        run.peak_in_use_bytes.unwrap_or(u64::MAX),
        run.sent_bytes_per_step.to_bits(),
        run.step_sent_bytes.to_bits(),
        run.transfer_seconds_per_step.to_bits(),
        run.hidden_transfer_seconds_per_step.to_bits(),
        run.exchange_seconds_per_step.to_bits(),
        run.hidden_exchange_seconds_per_step.to_bits(),
    ]
    .into_iter()
    .flat_map(|v| [f32::from_bits(v as u32), f32::from_bits((v >> 32) as u32)]);
    let name = run.adapter.as_bytes().chunks(4).map(|chunk| {
        let mut word = [0u8; 4];
        word[..chunk.len()].copy_from_slice(chunk);
        f32::from_bits(u32::from_le_bytes(word))
    });
    figures.chain(name).collect()
}

/// The figures of `rank` from [`encode_run`]'s message.
fn decode_run(rank: Rank, message: &[f32]) -> Result<DeviceRun, EngineError> {
    if message.len() < RUN_FIGURES {
        return Err(EngineError::Plan(format!(
            "device {rank} sent a report of {} values, expected at least {RUN_FIGURES}",
            message.len()
        )));
    }
    let (figures, name) = message.split_at(RUN_FIGURES);
    let words: Vec<u64> = figures
        .chunks(2)
        .map(|w| w[0].to_bits() as u64 | (w[1].to_bits() as u64) << 32)
        .collect();
    let [
        seconds,
        peak,
        in_use,
        sent,
        step_sent,
        transfer,
        hidden,
        exchange,
        hidden_exchange,
    ] = words[..]
    else {
        unreachable!("{RUN_FIGURES} values make nine words")
    };
    let bytes: Vec<u8> = name
        .iter()
        .flat_map(|v| v.to_bits().to_le_bytes())
        .collect();
    let adapter = String::from_utf8_lossy(&bytes)
        .trim_end_matches('\0')
        .to_string();
    let measured = |v: u64| (v != u64::MAX).then_some(v);
    Ok(DeviceRun {
        rank,
        adapter,
        step_seconds: f64::from_bits(seconds),
        peak_bytes: measured(peak),
        peak_in_use_bytes: measured(in_use),
        sent_bytes_per_step: f64::from_bits(sent),
        step_sent_bytes: f64::from_bits(step_sent),
        transfer_seconds_per_step: f64::from_bits(transfer),
        hidden_transfer_seconds_per_step: f64::from_bits(hidden),
        exchange_seconds_per_step: f64::from_bits(exchange),
        hidden_exchange_seconds_per_step: f64::from_bits(hidden_exchange),
    })
}

#[cfg(test)]
mod tests {
    use super::{DeviceRun, decode_run, encode_run};

    #[test]
    fn a_device_report_round_trips_through_a_message() -> Result<(), crate::EngineError> {
        let run = DeviceRun {
            rank: 3,
            adapter: "llvmpipe (LLVM 15.0.6, 256 bits) | llvmpipe | Gl".to_string(),
            step_seconds: 0.123_456_789,
            peak_bytes: Some(5_000_000_123),
            peak_in_use_bytes: None,
            sent_bytes_per_step: 1234.5,
            step_sent_bytes: 1000.25,
            transfer_seconds_per_step: 0.5,
            hidden_transfer_seconds_per_step: 0.375,
            exchange_seconds_per_step: 0.25,
            hidden_exchange_seconds_per_step: 0.125,
        };
        let back = decode_run(3, &encode_run(&run))?;
        assert_eq!(back.step_seconds, run.step_seconds);
        assert_eq!(
            (back.peak_bytes, back.peak_in_use_bytes),
            (run.peak_bytes, None)
        );
        assert_eq!(back.sent_bytes_per_step, run.sent_bytes_per_step);
        assert_eq!(back.step_sent_bytes, run.step_sent_bytes);
        assert_eq!(
            (
                back.transfer_seconds_per_step,
                back.hidden_transfer_seconds_per_step
            ),
            (0.5, 0.375)
        );
        assert_eq!(
            (
                back.exchange_seconds_per_step,
                back.hidden_exchange_seconds_per_step
            ),
            (0.25, 0.125)
        );
        assert_eq!(back.adapter, run.adapter);
        let unnamed = DeviceRun {
            adapter: String::new(),
            ..run
        };
        assert_eq!(decode_run(3, &encode_run(&unnamed))?.adapter, "");
        assert!(decode_run(3, &[0.0; 8]).is_err());
        Ok(())
    }
}
