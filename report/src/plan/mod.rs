//! `plan.svg`: which layers and node shares sit on which device (to scale of speed), the
//! 1F1B timeline of one step, and the plan against pure DP, uniform PP and uniform CP.

mod compare;
mod strip;
mod timeline;

use megagraph_planner::{ClusterSpec, ModelSpec, Plan, StageTime, stage_times};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use crate::ReportError;
use crate::canvas::{GREY, OVERFLOW, anchored, font, svg, time_unit};

/// The file name.
pub(crate) const FILE: &str = "plan.svg";
/// Width in pixels.
pub(crate) const WIDTH: u32 = 1200;
/// Heights in pixels of the title, the device strip and the comparison.
const TITLE: u32 = 64;
const STRIP: u32 = 210;
const COMPARE: u32 = 430;

/// The distinct device names among `names` in order of first appearance, with their
/// counts: device types.
pub(super) fn device_types<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<(&'a str, usize)> {
    let mut types: Vec<(&str, usize)> = Vec::new();
    for name in names {
        match types.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => types.push((name, 1)),
        }
    }
    types
}

/// `name` with its count when there are several.
pub(super) fn counted(name: &str, count: usize) -> String {
    if count > 1 {
        format!("{count}× {name}")
    } else {
        name.to_string()
    }
}

/// A plan with what its pictures need besides it.
pub(crate) struct PlanPicture<'a> {
    pub plan: &'a Plan,
    pub cluster: &'a ClusterSpec,
    pub model: &'a ModelSpec,
    pub stages: Vec<StageTime>,
}

impl<'a> PlanPicture<'a> {
    /// The plan of `cluster` and `model` (as `search` found it) with its stages' times.
    pub fn new(plan: &'a Plan, cluster: &'a ClusterSpec, model: &'a ModelSpec) -> Self {
        PlanPicture {
            stages: stage_times(cluster, model, &plan.config),
            plan,
            cluster,
            model,
        }
    }

    /// Width × height in pixels (the timeline grows with the stages).
    pub fn size(&self) -> (u32, u32) {
        (
            WIDTH,
            TITLE + STRIP + timeline::height(self.stages.len()) + COMPARE,
        )
    }

    /// The picture.
    pub fn draw(&self) -> Result<String, ReportError> {
        if self.cluster.devices.len() != self.plan.prediction.devices.len() {
            return Err(ReportError::Empty {
                file: FILE,
                reason: format!(
                    "the plan has {} devices, the cluster {}",
                    self.plan.prediction.devices.len(),
                    self.cluster.devices.len()
                ),
            });
        }
        let size = self.size();
        svg(FILE, size, |root| {
            let (title, rest) = root.split_vertically(TITLE);
            let (devices, rest) = rest.split_vertically(STRIP);
            let (pipeline, comparison) = rest.split_vertically(timeline::height(self.stages.len()));
            self.title(&title)?;
            strip::draw(&devices, self)?;
            timeline::draw(&pipeline, self)?;
            compare::draw(&comparison, self)
        })
    }

    /// The headline: configuration, micro-batches, predicted step and whether it fits; the
    /// model under it.
    fn title(&self, area: &crate::canvas::Area) -> crate::canvas::Drawn {
        let plan = self.plan;
        let step = plan.prediction.step_seconds;
        let fits = plan.prediction.fits();
        let headline = format!(
            "Plan {} with {} micro-batch(es) per replica: predicted step {}, peak {}",
            plan.config.degrees,
            plan.config.micro_batches,
            time_unit(step).label(step),
            crate::canvas::byte_unit(plan.prediction.max_peak_bytes() as f64)
                .label(plan.prediction.max_peak_bytes() as f64),
        );
        area.draw(&Text::new(
            headline,
            (16, 22),
            anchored(font(19.0), HPos::Left, VPos::Center),
        ))?;
        let verdict = if fits {
            "fits every device"
        } else {
            "does NOT fit"
        };
        let m = self.model;
        let sub = format!(
            "{verdict}; model: {} layers, hidden {}, {} heads, {} sequence(s) of {} nodes; cluster: {} device(s)",
            m.layers,
            m.hidden,
            m.heads,
            m.num_sequences,
            m.seq_len,
            self.cluster.devices.len()
        );
        let style = if fits {
            font(13.0).color(&GREY)
        } else {
            font(13.0).color(&OVERFLOW)
        };
        area.draw(&Text::new(
            sub,
            (16, 48),
            anchored(style, HPos::Left, VPos::Center),
        ))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_of_one_name_make_one_type() {
        let types = device_types(["h100", "a100", "h100"]);
        assert_eq!(types, vec![("h100", 2), ("a100", 1)]);
        assert_eq!(counted("h100", 2), "2× h100");
        assert_eq!(counted("a100", 1), "a100");
    }
}
