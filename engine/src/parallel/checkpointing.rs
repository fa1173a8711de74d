//! Saving a job's training state every few steps and resuming from it, under any plan.
//!
//! Every device holds the whole model but steps only its stage's parameters (and the shared
//! table); replicas and shards hold the same values. So the lead device (replica 0, stage 0,
//! shard 0) writes the checkpoint from its own stage and what each other stage's first device
//! sends it: parameters and Adam moments, in the model's canonical order. The file format is
//! [`crate::checkpoint`]'s. On resume the lead reads the newest valid checkpoint and sends it
//! to every device, which loads all parameters and the Adam state of the parameters it steps.
//! Nothing in a checkpoint depends on the plan that wrote it, so a run may resume under another
//! plan or device count. The random state is the seed and the step count: the sequence order
//! of epoch `e` is the seed's generator after `e` shuffles, and dropout is reseeded at every
//! step from (seed, step, device).

use std::path::PathBuf;

use burn::{module::ParamId, tensor::backend::AutodiffBackend};

use super::worker::{Progress, Worker};
use crate::{
    EngineError,
    checkpoint::{
        Checkpoint, CheckpointMeta, StateTensor, list_checkpoints, load_latest, write_checkpoint,
    },
    comm::{Tag, pack_bytes, unpack_bytes},
    device::MemoryProbe,
    model::{AdamMoments, ModelBackend, ModelOptimizer, adam_moments, restore_adam},
    run::{EpochMetrics, TrainOptions},
};

/// Where and how often a run saves its state, and whether it starts from a saved one.
#[derive(Debug, Clone, Default)]
pub struct CheckpointOptions {
    /// The directory of the checkpoints; `None`: no checkpoints.
    pub dir: Option<PathBuf>,
    /// Save after every this many optimizer steps (and never when 0).
    pub every: usize,
    /// Checkpoints kept: older ones are removed after each write.
    pub keep: usize,
    /// Start from the newest valid checkpoint of `dir`.
    pub resume: bool,
    /// Write the parameters of every epoch that improves the validation accuracy to this file
    /// (a saved model, see [`crate::checkpoint`]), so that it ends holding the best epoch's.
    pub save_model: Option<PathBuf>,
}

impl CheckpointOptions {
    /// Checks that resuming and saving have what they need.
    pub fn validate(&self) -> Result<(), EngineError> {
        let bad = |m: &str| Err(EngineError::InvalidOptions(m.into()));
        match &self.dir {
            None if self.resume => {
                bad("resuming needs the checkpoint directory (--checkpoint DIR)")
            }
            None if self.every > 0 => bad("saving every N steps needs --checkpoint DIR"),
            Some(_) if self.every > 0 && self.keep == 0 => bad("keep at least one checkpoint"),
            _ => Ok(()),
        }
    }

    /// Whether a checkpoint is due after `step` optimizer steps.
    pub fn due(&self, step: usize) -> bool {
        self.dir.is_some() && self.every > 0 && step.is_multiple_of(self.every)
    }
}

/// Adam's state of parameters as flat host vectors: every parameter's first moments, then
/// every parameter's second moments, then every parameter's step count.
struct FlatMoments {
    moment_1: Vec<f32>,
    moment_2: Vec<f32>,
    times: Vec<f32>,
}

impl FlatMoments {
    fn of(moments: Vec<AdamMoments>) -> Self {
        let mut flat = FlatMoments {
            moment_1: Vec::new(),
            moment_2: Vec::new(),
            times: Vec::new(),
        };
        for m in moments {
            flat.moment_1.extend(m.moment_1);
            flat.moment_2.extend(m.moment_2);
            flat.times.push(m.time as f32);
        }
        flat
    }

    /// The moments of consecutive parameters of `sizes` values each.
    fn split(&self, sizes: &[usize]) -> Vec<AdamMoments> {
        let mut at = 0;
        sizes
            .iter()
            .zip(&self.times)
            .map(|(&n, &time)| {
                let m = AdamMoments {
                    time: time as usize,
                    moment_1: self.moment_1[at..at + n].to_vec(),
                    moment_2: self.moment_2[at..at + n].to_vec(),
                };
                at += n;
                m
            })
            .collect()
    }
}

/// A packed state of parameters of `shapes`: their values, their first moments, their second
/// moments (each as many values as the parameters hold) and one step count per parameter, as
/// the values and each parameter's moments; `what` names it when its length is wrong.
fn unpack_state<'v>(
    packed: &'v [f32],
    shapes: &[Vec<usize>],
    what: &str,
) -> Result<(&'v [f32], Vec<AdamMoments>), EngineError> {
    let sizes = sizes(shapes);
    let total: usize = sizes.iter().sum();
    let expected = 3 * total + shapes.len();
    if packed.len() != expected {
        return Err(EngineError::Checkpoint(format!(
            "{what} holds {} values, this model needs {expected}",
            packed.len()
        )));
    }
    let flat = FlatMoments {
        moment_1: packed[total..2 * total].to_vec(),
        moment_2: packed[2 * total..3 * total].to_vec(),
        times: packed[3 * total..].to_vec(),
    };
    Ok((&packed[..total], flat.split(&sizes)))
}

/// Numbers of values of tensors of `shapes`.
fn sizes(shapes: &[Vec<usize>]) -> Vec<usize> {
    shapes.iter().map(|s| s.iter().product()).collect()
}

impl<B> Worker<'_, B>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    /// The parameters this device steps: its stage's, then the table.
    fn stepped_ids(&self) -> Vec<ParamId> {
        let mut ids = self.model.part_ids(&self.part);
        ids.push(self.model.table_id());
        ids
    }

    /// Saves the state after `progress.step` steps (a collective of every device: each stage's
    /// first device sends its part to the lead, which writes the file).
    pub(super) fn save_checkpoint(
        &self,
        optimizer: &ModelOptimizer<B>,
        progress: &Progress,
    ) -> Result<(), EngineError> {
        let layout = self.job.layout;
        let lead = layout.device(0, 0, 0);
        let stage_leader = self.role.replica == 0 && self.role.shard == 0;
        if !stage_leader {
            return Ok(());
        }
        let ids = self.model.part_ids(&self.part);
        let part = |ids: &[ParamId]| {
            let flat = FlatMoments::of(adam_moments(optimizer, &self.model, ids));
            let mut values = self.model.parameter_values(ids);
            values.extend(flat.moment_1);
            values.extend(flat.moment_2);
            values.extend(flat.times);
            values
        };
        if self.rank != lead {
            self.comm.send(lead, Tag::Checkpoint, part(&ids))?;
            return Ok(());
        }
        let mut parts = vec![part(&ids)];
        for stage in 1..layout.degrees().pp {
            parts.push(
                self.comm
                    .recv(layout.device(0, stage, 0), Tag::Checkpoint)?,
            );
        }
        parts.push(part(&[self.model.table_id()]));
        let checkpoint = self.assemble(parts, progress)?;
        let dir = self
            .job
            .checkpoint
            .dir
            .as_ref()
            .expect("due checks the dir");
        let path = write_checkpoint(dir, &checkpoint, self.job.checkpoint.keep)
            .map_err(|e| EngineError::Checkpoint(e.to_string()))?;
        eprintln!("checkpoint: step {} → {}", progress.step(), path.display());
        Ok(())
    }

    /// The checkpoint of the stage parts (each: values, first moments, second moments, step
    /// counts of its parameters), in stage order with the table last.
    fn assemble(
        &self,
        parts: Vec<Vec<f32>>,
        progress: &Progress,
    ) -> Result<Checkpoint, EngineError> {
        let layout = self.job.layout;
        let mut id_groups: Vec<Vec<ParamId>> = (0..layout.degrees().pp)
            .map(|stage| self.model.part_ids(&layout.part(stage)))
            .collect();
        id_groups.push(vec![self.model.table_id()]);
        let mut tensors = Vec::new();
        let mut index = 0;
        let mut moments = (Vec::new(), Vec::new(), Vec::new());
        for (ids, part) in id_groups.iter().zip(parts) {
            let shapes = self.shapes.of(ids);
            let (values, moments_of) = unpack_state(&part, &shapes, "a stage's part")?;
            let mut at = 0;
            for (shape, m) in shapes.iter().zip(moments_of) {
                let n: usize = shape.iter().product();
                tensors.push(StateTensor {
                    name: format!("param.{index:04}"),
                    shape: shape.clone(),
                    values: values[at..at + n].to_vec(),
                });
                moments.0.push(tensor("adam.m1", index, shape, m.moment_1));
                moments.1.push(tensor("adam.m2", index, shape, m.moment_2));
                moments.2.push(m.time as f32);
                at += n;
                index += 1;
            }
        }
        tensors.extend(moments.0);
        tensors.extend(moments.1);
        tensors.push(StateTensor {
            name: "adam.time".into(),
            shape: vec![index],
            values: moments.2,
        });
        let json = |v: serde_json::Result<serde_json::Value>| v.expect("metrics serialize");
        Ok(Checkpoint {
            meta: CheckpointMeta {
                step: progress.step(),
                epoch: progress.epoch,
                batches_done: progress.batches_done,
                seed: self.job.options.seed,
                plan: self.job.layout.degrees().to_string(),
                model: json(serde_json::to_value(self.job.config)),
                settings: json(serde_json::to_value(self.settings())),
                step_losses: progress.step_losses.clone(),
                history: json(serde_json::to_value(&progress.history)),
                best: json(serde_json::to_value(&progress.best)),
            },
            tensors,
        })
    }

    /// The run's settings as checkpoints and saved models store them: the options with the
    /// model configuration the graph gave.
    pub(super) fn settings(&self) -> TrainOptions {
        TrainOptions {
            model: self.job.config.clone(),
            ..self.job.options.clone()
        }
    }

    /// On the lead of a run that saves checkpoints without resuming: an error if the
    /// directory already holds checkpoints, which a resume would mistake for this run's.
    pub(super) fn refuse_old_checkpoints(&self) -> Result<(), EngineError> {
        let Some(dir) = &self.job.checkpoint.dir else {
            return Ok(());
        };
        if self.rank != self.job.layout.device(0, 0, 0) {
            return Ok(());
        }
        let found = list_checkpoints(dir).map_err(|e| EngineError::Checkpoint(e.to_string()))?;
        match found.first() {
            Some(newest) => Err(EngineError::Checkpoint(format!(
                "{} already holds {} checkpoint(s) of a run (newest {}): pass --resume to continue it, or choose an empty directory",
                dir.display(),
                found.len(),
                newest.display()
            ))),
            None => Ok(()),
        }
    }

    /// Loads the newest valid checkpoint into the model, the optimizer and `progress` (a
    /// collective of every device: the lead reads the file and sends it to all).
    pub(super) fn resume(
        &mut self,
        optimizer: &mut ModelOptimizer<B>,
        progress: &mut Progress,
    ) -> Result<(), EngineError> {
        let lead = self.job.layout.device(0, 0, 0);
        let (meta, values) = if self.rank == lead {
            let checkpoint = self.read_latest()?;
            let meta = serde_json::to_vec(&checkpoint.meta).expect("meta serializes");
            let values: Vec<f32> = checkpoint
                .tensors
                .into_iter()
                .flat_map(|t| t.values)
                .collect();
            self.comm
                .broadcast(&self.everyone, lead, Tag::Checkpoint, pack_bytes(&meta)?)?;
            self.comm
                .broadcast(&self.everyone, lead, Tag::Checkpoint, values.clone())?;
            (checkpoint.meta, values)
        } else {
            let meta = self
                .comm
                .broadcast(&self.everyone, lead, Tag::Checkpoint, Vec::new())?;
            let meta = unpack_bytes(&meta)
                .and_then(|bytes| serde_json::from_slice::<CheckpointMeta>(&bytes).ok())
                .ok_or_else(|| {
                    EngineError::Checkpoint("the lead sent unreadable metadata".into())
                })?;
            let values = self
                .comm
                .broadcast(&self.everyone, lead, Tag::Checkpoint, Vec::new())?;
            (meta, values)
        };
        let ids = self.model.canonical_ids();
        let shapes = self.shapes.of(&ids);
        let (parameters, all) = unpack_state(&values, &shapes, "the checkpoint")?;
        // This device holds and steps only its stage's parameters and the table.
        let stepped = self.stepped_ids();
        let mut order = Vec::new();
        let mut values = Vec::new();
        let mut mine: Vec<AdamMoments> = Vec::new();
        let mut at = 0;
        for ((id, shape), moments) in ids.iter().zip(&shapes).zip(all) {
            let n: usize = shape.iter().product();
            if stepped.contains(id) {
                order.push(*id);
                values.extend_from_slice(&parameters[at..at + n]);
                mine.push(moments);
            }
            at += n;
        }
        let model = self.model.clone();
        self.model = model
            .with_parameter_values(&order, &values)
            .map_err(EngineError::Checkpoint)?;
        restore_adam(optimizer, &self.model, &order, mine);
        progress.restore(meta)
    }

    /// The newest checkpoint that reads, verifies and fits this model; warns about the
    /// newer ones refused.
    fn read_latest(&self) -> Result<Checkpoint, EngineError> {
        let dir = self
            .job
            .checkpoint
            .dir
            .as_ref()
            .expect("validate requires a dir to resume");
        let failed = |e: crate::checkpoint::CheckpointError| EngineError::Checkpoint(e.to_string());
        let (path, checkpoint, refused) = load_latest(dir).map_err(failed)?;
        for (path, error) in &refused {
            eprintln!(
                "warning: checkpoint {} refused ({error}); using an older one",
                path.display()
            );
        }
        // Read through the config's type, so that a checkpoint written before a field existed
        // takes its default.
        let theirs =
            serde_json::from_value::<crate::model::ModelConfig>(checkpoint.meta.model.clone())
                .map_err(|e| {
                    EngineError::Checkpoint(format!("{}: its model: {e}", path.display()))
                })?;
        if &theirs != self.job.config {
            return Err(EngineError::Checkpoint(format!(
                "{} was written for another model: {}",
                path.display(),
                model_differences(&theirs, self.job.config)
            )));
        }
        eprintln!(
            "resuming from {} (step {}, epoch {}, written under {}; {} checkpoint(s) in {})",
            path.display(),
            checkpoint.meta.step,
            checkpoint.meta.epoch,
            checkpoint.meta.plan,
            list_checkpoints(dir).map_or(0, |l| l.len()),
            dir.display()
        );
        Ok(checkpoint)
    }
}

/// The settings in which `theirs` differs from `here`: `name theirs (this run: here)`, each.
fn model_differences(
    theirs: &crate::model::ModelConfig,
    here: &crate::model::ModelConfig,
) -> String {
    let (theirs, here) = (
        serde_json::to_value(theirs).expect("config serializes"),
        serde_json::to_value(here).expect("config serializes"),
    );
    let text = |v: &serde_json::Value| match v.get("kind") {
        // A scope reads as on the command line.
        Some(_) => serde_json::from_value::<crate::model::AttentionScope>(v.clone())
            .map_or_else(|_| v.to_string(), |s| s.to_string()),
        None => v.to_string(),
    };
    let (Some(theirs), Some(here)) = (theirs.as_object(), here.as_object()) else {
        return String::from("its settings differ");
    };
    theirs
        .iter()
        .filter(|(key, value)| here.get(*key) != Some(value))
        .map(|(key, value)| {
            let mine = here.get(key).map_or_else(|| "none".into(), text);
            format!("{key} {} (this run: {mine})", text(value))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A moment tensor of parameter `index`.
fn tensor(kind: &str, index: usize, shape: &[usize], values: Vec<f32>) -> StateTensor {
    StateTensor {
        name: format!("{kind}.{index:04}"),
        shape: shape.to_vec(),
        values,
    }
}

impl Progress {
    /// Takes the position and records of a checkpoint.
    fn restore(&mut self, meta: CheckpointMeta) -> Result<(), EngineError> {
        let parse = |what: &str, e: serde_json::Error| {
            EngineError::Checkpoint(format!("the checkpoint's {what} is unreadable: {e}"))
        };
        self.history = serde_json::from_value::<Vec<EpochMetrics>>(meta.history)
            .map_err(|e| parse("history", e))?;
        self.best = serde_json::from_value::<Option<EpochMetrics>>(meta.best)
            .map_err(|e| parse("early-stopping state", e))?;
        self.step_losses = meta.step_losses;
        self.epoch = meta.epoch;
        self.batches_done = meta.batches_done;
        if self.step() != meta.step {
            return Err(EngineError::Checkpoint(format!(
                "the checkpoint is of step {} but lists {} step losses",
                meta.step,
                self.step()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_need_a_directory_and_say_when_a_save_is_due() {
        let none = CheckpointOptions::default();
        assert!(none.validate().is_ok());
        assert!(!none.due(5));
        let resume = CheckpointOptions {
            resume: true,
            ..Default::default()
        };
        assert!(resume.validate().is_err());
        let every = CheckpointOptions {
            dir: Some("ck".into()),
            every: 5,
            keep: 2,
            resume: false,
            save_model: None,
        };
        assert!(every.validate().is_ok());
        assert!(every.due(10) && !every.due(7));
        let keep_none = CheckpointOptions { keep: 0, ..every };
        assert!(keep_none.validate().is_err());
    }

    #[test]
    fn flat_moments_split_back_per_parameter() {
        let moments = vec![
            AdamMoments {
                time: 3,
                moment_1: vec![1.0, 2.0],
                moment_2: vec![3.0, 4.0],
            },
            AdamMoments {
                time: 3,
                moment_1: vec![5.0],
                moment_2: vec![6.0],
            },
        ];
        let flat = FlatMoments::of(moments.clone());
        assert_eq!(flat.moment_1, vec![1.0, 2.0, 5.0]);
        assert_eq!(flat.split(&[2, 1]), moments);

        // Packed after the values 7, 8, 9 of the same two parameters, with their step counts.
        let packed = [7.0, 8.0, 9.0, 1.0, 2.0, 5.0, 3.0, 4.0, 6.0, 3.0, 3.0];
        let shapes = [vec![2], vec![1]];
        let (values, unpacked) = unpack_state(&packed, &shapes, "a part").expect("fits");
        assert_eq!((values, unpacked), (&[7.0, 8.0, 9.0][..], moments));
        let short = unpack_state(&packed[..10], &shapes, "a part").expect_err("one short");
        assert!(
            short
                .to_string()
                .contains("a part holds 10 values, this model needs 11"),
            "{short}"
        );
    }
}
