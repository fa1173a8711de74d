//! Human-readable reports of a plan: the per-device breakdown and the baseline table.

use std::fmt::Write;

use crate::{Degrees, Plan};

/// Bytes in one GiB.
const GIB: f64 = (1u64 << 30) as f64;

/// Seconds with a unit that keeps three or so significant digits.
fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.3} µs", s * 1e6)
    }
}

/// Bytes in GiB.
fn gib(bytes: f64) -> String {
    format!("{:.2} GiB", bytes / GIB)
}

/// `name value` for the non-zero terms, comma separated.
fn terms(items: &[(&str, f64)], unit: fn(f64) -> String) -> String {
    let shown: Vec<String> = items
        .iter()
        .filter(|(_, v)| *v != 0.0)
        .map(|(name, v)| format!("{name} {}", unit(*v)))
        .collect();
    if shown.is_empty() {
        "none".to_string()
    } else {
        shown.join(", ")
    }
}

impl Plan {
    /// The plan, its stages and, per device, its role, step time and peak memory term by term.
    pub fn explain(&self) -> String {
        let config = &self.config;
        let pp = config.degrees.pp;
        let mut out = String::new();
        let fits = if self.prediction.fits() {
            "fits"
        } else {
            "does NOT fit"
        };
        let _ = writeln!(
            out,
            "plan {}, {} micro-batch(es) per replica: predicted step {}, {fits}",
            config.degrees,
            config.micro_batches,
            seconds(self.prediction.step_seconds)
        );
        for (s, stage) in config.stages.iter().enumerate() {
            let mut extra = String::new();
            if s == 0 {
                extra.push_str(" + embedding");
            }
            if s + 1 == pp {
                extra.push_str(" + head");
            }
            let _ = writeln!(
                out,
                "stage {s}: layers {}..{}{extra}, devices {:?} ([replica][shard])",
                stage.layers[0], stage.layers[1], stage.devices
            );
        }
        let role = self.roles();
        for (d, device) in self.prediction.devices.iter().enumerate() {
            let Some((r, s, c)) = role[d] else {
                let _ = writeln!(out, "device {d} {:?}: unused", device.name);
                continue;
            };
            let t = &device.time;
            let m = &device.memory;
            let _ = writeln!(
                out,
                "device {d} {:?} (replica {r}, stage {s}, shard {c}, node share {:.4}): step {}, peak {} of {}{}",
                device.name,
                config.node_shares[d],
                seconds(device.step_seconds),
                gib(m.total()),
                gib(device.memory_bytes),
                if device.fits() {
                    ""
                } else {
                    " (OUT OF MEMORY)"
                }
            );
            let time = [
                ("attention", t.attention),
                ("ffn", t.ffn),
                ("embedding", t.embedding),
                ("head", t.head),
                ("ring exchange", t.ring_exchange),
                ("stage transfer", t.stage_transfer),
                ("overhead", t.overhead),
                ("pipeline wait", t.pipeline_wait),
                ("grad all-reduce", t.grad_allreduce),
                ("optimizer", t.optimizer),
            ];
            let memory = [
                ("parameters", m.parameters),
                ("gradients", m.gradients),
                ("optimizer state", m.optimizer_state),
                ("activations", m.activations),
                ("distance buckets", m.distance_buckets),
                ("sequence matrices", m.sequence_matrices),
                ("cached sequences", m.cached_sequences),
            ];
            let _ = writeln!(out, "  time:   {}", terms(&time, seconds));
            let _ = writeln!(out, "  memory: {}", terms(&memory, gib));
        }
        out
    }

    /// Per cluster device, its `(replica, stage, shard)` in the plan, `None` if unused.
    pub fn roles(&self) -> Vec<Option<(usize, usize, usize)>> {
        let config = &self.config;
        let Degrees { dp, pp, cp } = config.degrees;
        let mut role = vec![None; config.node_shares.len()];
        for s in 0..pp {
            for r in 0..dp {
                for c in 0..cp {
                    role[config.device(r, s, c)] = Some((r, s, c));
                }
            }
        }
        role
    }

    /// Layers `first..last` of stage `s`, with `+ emb` on the first stage and `+ head` on
    /// the last.
    pub fn stage_label(&self, s: usize) -> String {
        let stages = &self.config.stages;
        let [first, last] = stages[s].layers;
        let mut label = format!("{first}..{last}");
        if s == 0 {
            label.push_str(" + emb");
        }
        if s + 1 == stages.len() {
            label.push_str(" + head");
        }
        label
    }

    /// Two tables: each device's place (replica, stage and its layers, CP shard and node
    /// share) with its predicted step time and peak memory against its memory; then the
    /// plan beside the baselines (see [`Plan::comparison_table`]).
    pub fn table(&self) -> String {
        let names = self.prediction.devices.iter().map(|d| d.name.len());
        let width = names.chain([4]).max().unwrap_or(4);
        let mut out = format!(
            "{:>3} {:<width$} {:>7} {:>5} {:<18} {:>5} {:>7} {:>12} {:>10} {:>10} {:>5}\n",
            "",
            "name",
            "replica",
            "stage",
            "layers",
            "shard",
            "share",
            "step",
            "peak",
            "memory",
            "fits"
        );
        for ((d, device), role) in self.prediction.devices.iter().enumerate().zip(self.roles()) {
            let _ = write!(out, "{d:>3} {:<width$} ", device.name);
            let Some((r, s, c)) = role else {
                let _ = writeln!(
                    out,
                    "{:>7} {:>5} {:<18} {:>5} {:>7} {:>12} {:>10} {:>10} {:>5}",
                    "-",
                    "-",
                    "unused",
                    "-",
                    "-",
                    "-",
                    "-",
                    gib(device.memory_bytes),
                    "-"
                );
                continue;
            };
            let _ = writeln!(
                out,
                "{r:>7} {s:>5} {:<18} {c:>5} {:>6.1}% {:>12} {:>10} {:>10} {:>5}",
                self.stage_label(s),
                100.0 * self.config.node_shares[d],
                seconds(device.step_seconds),
                gib(device.peak_bytes as f64),
                gib(device.memory_bytes),
                if device.fits() { "yes" } else { "no" }
            );
        }
        out.push('\n');
        out.push_str(&self.comparison_table());
        out
    }

    /// The plan beside the baselines: degrees, micro-batches, step time, the baseline's
    /// step over the plan's, largest per-device peak, whether it fits.
    pub fn comparison_table(&self) -> String {
        let plan_step = self.prediction.step_seconds;
        let mut rows = vec![(
            "plan",
            self.config.degrees,
            self.config.micro_batches,
            plan_step,
            self.prediction.max_peak_bytes(),
            self.prediction.fits(),
        )];
        for (name, b) in self.baselines.named() {
            let peak = b.peak_bytes.iter().copied().max().unwrap_or(0);
            rows.push((
                name,
                b.degrees,
                b.micro_batches,
                b.step_seconds,
                peak,
                b.fits,
            ));
        }
        let mut out = format!(
            "{:<11} {:<13} {:>6} {:>12} {:>8} {:>11} {:>5}\n",
            "", "config", "micro", "step", "vs plan", "max peak", "fits"
        );
        for (name, degrees, micro, step, peak, fits) in rows {
            let _ = writeln!(
                out,
                "{name:<11} {:<13} {micro:>6} {:>12} {:>7.2}x {:>11} {:>5}",
                degrees.to_string(),
                seconds(step),
                step / plan_step,
                gib(peak as f64),
                if fits { "yes" } else { "no" }
            );
        }
        out
    }
}
