//! `commlens cost`'s report: the stable JSON form (`"format": "commlens.cost"`, version 1)
//! and the text summary.

use super::{CostModel, GpuGeneration, Hardware, StepSummary};
use crate::graph::Graph;
use crate::planner::BucketPlan;
use crate::pretty_json::Field;
use serde::ser::{Serialize, SerializeStruct, Serializer};
use serde_json::{json, Map, Value};
use std::fmt::Write;

/// One collective of the graph as it is. Its names are the graph's (a report at 500k nodes
/// cloned 540k of them: a tenth of `commlens cost`'s run and 30 MB).
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveRow<'g> {
    pub node: &'g str,
    pub op: &'g str,
    /// A non-functional `c10d` op (listed, never timed).
    pub c10d: bool,
    /// `NCCL_COLL` (`all_gather`, ..., `unsupported`).
    pub coll: &'static str,
    pub bytes: u64,
    pub group_size: Option<u64>,
    pub us: f64,
    /// `Ring/LL128`, ...; `None` where the model gives no time.
    pub algo: Option<&'static str>,
    /// Compute stalled this long on it (graph as it is).
    pub exposed_us: f64,
}

/// One compute node.
#[derive(Clone, Debug, PartialEq)]
pub struct ComputeRow<'g> {
    pub node: &'g str,
    pub target: &'g str,
    pub flops: Option<u64>,
    pub us: f64,
}

/// One planned bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketRow<'g> {
    pub bucket_id: String,
    pub members: usize,
    /// The first member's node name.
    pub first: &'g str,
    pub bytes: u64,
    pub us: f64,
    pub algo: Option<&'static str>,
    /// Compute stalled this long on it (planned).
    pub exposed_us: f64,
}

/// Everything `commlens cost` reports.
#[derive(Clone, Debug, PartialEq)]
pub struct CostReport<'g> {
    pub hardware: Hardware,
    pub collectives: Vec<CollectiveRow<'g>>,
    pub compute: Vec<ComputeRow<'g>>,
    pub buckets: Vec<BucketRow<'g>>,
    pub unbucketed: StepSummary,
    pub planned: StepSummary,
    /// Collectives outside every bucket, with their planned stall.
    pub planned_unbucketed_exposed: Vec<(usize, f64)>,
    /// With `--tags roles`: the FSDP tags derived from semantic roles, described.
    pub tags: Option<String>,
    /// Why an untagged graph planned to nothing, when it did.
    pub note: Option<String>,
}

impl<'g> CostReport<'g> {
    pub fn new(graph: &'g Graph, plan: &BucketPlan, model: &CostModel) -> CostReport<'g> {
        let nodes = graph.nodes();
        let name = |id: usize| nodes.get(id).map_or("", |n| n.name.as_str());
        let target = |id: usize| nodes.get(id).map_or("", |n| n.target.as_str());
        // The graph as it is (its simulation, then a row a collective) on a second core,
        // while this one simulates the plan and makes a row a compute node.
        let (as_is, (planned, compute)) = crate::parallel::join(
            "commlens-cost",
            || {
                let unbucketed = model.unbucketed();
                let collectives: Vec<CollectiveRow<'g>> = model
                    .work
                    .comms
                    .iter()
                    .zip(&model.timing.comms)
                    .enumerate()
                    .map(|(i, (c, t))| CollectiveRow {
                        node: name(c.node),
                        op: target(c.node),
                        c10d: c.api == crate::ops::Api::C10d,
                        coll: c.coll.as_str(),
                        bytes: c.bytes,
                        group_size: t.group_size,
                        us: t.time.us,
                        algo: t.time.algo.map(|a| a.as_str()),
                        exposed_us: unbucketed.exposed_us.get(i).copied().unwrap_or(0.0),
                    })
                    .collect();
                (unbucketed.summary, collectives)
            },
            || {
                let planned = model.planned(plan);
                let compute: Vec<ComputeRow<'g>> = model
                    .work
                    .compute
                    .iter()
                    .map(|c| ComputeRow {
                        node: name(c.node),
                        target: target(c.node),
                        flops: c.flops,
                        us: model.timing.node_us.get(c.node).copied().unwrap_or(0.0),
                    })
                    .collect();
                (planned, compute)
            },
        );
        let (unbucketed, collectives) = as_is;
        let buckets = planned
            .buckets
            .iter()
            .zip(&planned.bucket_launch)
            .filter_map(|(b, &launch)| {
                let bucket = plan.buckets.get(b.bucket)?;
                Some(BucketRow {
                    bucket_id: bucket.bucket_id.text(),
                    members: bucket.members.len(),
                    first: bucket.members.first().map_or("", |m| name(m.launch)),
                    bytes: b.bytes,
                    us: b.time.us,
                    algo: b.time.algo.map(|a| a.as_str()),
                    exposed_us: planned.step.exposed_us.get(launch).copied().unwrap_or(0.0),
                })
            })
            .collect();
        let planned_unbucketed_exposed = planned
            .comm_launch
            .iter()
            .enumerate()
            .filter_map(|(c, launch)| {
                let exposed = planned.step.exposed_us.get((*launch)?).copied()?;
                Some((c, exposed))
            })
            .collect();
        CostReport {
            hardware: model.hardware.clone(),
            collectives,
            compute,
            buckets,
            unbucketed,
            planned: planned.step.summary,
            planned_unbucketed_exposed,
            tags: None,
            note: None,
        }
    }

    /// The stable JSON form, pretty-printed, with a final newline.
    pub fn to_json(&self) -> String {
        let mut text = Vec::new();
        // Writing to memory fails only where memory does.
        let _ = self.write_json(&mut text);
        String::from_utf8(text).unwrap_or_default()
    }

    /// [`CostReport::to_json`] written to `w` as it is made: the rows an item at a time
    /// (natively, half of them printed on a second thread), each as serde_json's pretty
    /// printer writes it. (Made into a `Value` each, the rows of 500k nodes had needed 680 MB,
    /// four times the dump's size, for a 45 MB text.)
    pub fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        crate::pretty_json::write_pretty_fields(self.json_fields(), w)
    }

    /// The JSON form's entries (`"format": "commlens.cost"`, version 1), in order.
    fn json_fields(&self) -> Vec<(&'static str, Field<'_>)> {
        vec![
            ("format", Field::Value("commlens.cost".into())),
            ("version", Field::Value(1.into())),
            ("hardware", Field::Value(hardware_json(&self.hardware))),
            ("collectives", rows(&self.collectives)),
            ("compute", rows(&self.compute)),
            ("buckets", rows(&self.buckets)),
            (
                "summary",
                Field::Value(serde_json::to_value(SummariesJson(self)).unwrap_or_default()),
            ),
        ]
    }

    /// The summary, the hardware, and the ten most exposed collectives or buckets of each
    /// variant, in plain words.
    /// The text form, safe for a terminal (`text::terminal_safe`).
    pub fn to_text(&self) -> String {
        crate::text::into_terminal_safe(self.text_unescaped())
    }

    fn text_unescaped(&self) -> String {
        let mut out = String::new();
        if let Some(tags) = &self.tags {
            out.push_str(tags);
            out.push_str("\n\n");
        }
        let hw = &self.hardware;
        let net = &hw.network;
        let _ = writeln!(
            out,
            "Hardware: {} ({}), {} GPUs per node, {}; intra-node {} GB/s, inter-node {} GB/s; DRAM {} GB/s",
            net.gpu.as_str(),
            super::roofline::Preset::of(net.gpu).part,
            net.gpus_per_node,
            if net.nvlink { "NVLink" } else { "no NVLink (PCIe)" },
            number(net.intra_bw()),
            number(net.inter_bw()),
            number(hw.roofline.dram_gbps),
        );
        let _ = writeln!(
            out,
            "Model estimates: collectives by torch 2.15's NCCL model (torch/_inductor/comm_analysis.py), \
             compute by Inductor's roofline with torch's FLOP formulas (docs/cost-model.md).\n"
        );
        let _ = writeln!(out, "{:<24}{:>16}{:>16}", "", "as it is", "planned");
        type Field = fn(&StepSummary) -> f64;
        let rows: [(&str, Field); 4] = [
            ("step", |s| s.step_us),
            ("compute", |s| s.compute_us),
            ("communication", |s| s.comm_us),
            ("exposed communication", |s| s.exposed_comm_us),
        ];
        for (label, get) in rows {
            let _ = writeln!(
                out,
                "{label:<24}{:>16}{:>16}",
                us(get(&self.unbucketed)),
                us(get(&self.planned))
            );
        }
        let flops: u128 = self
            .compute
            .iter()
            .filter_map(|c| c.flops)
            .map(u128::from)
            .sum();
        let unknown_flops = self.compute.iter().filter(|c| c.flops.is_none()).count();
        let _ = write!(
            out,
            "\n{} collectives, {} planned buckets, {} compute nodes, {} FLOPs",
            self.collectives.len(),
            self.buckets.len(),
            self.compute.len(),
            group_digits(flops)
        );
        if unknown_flops > 0 {
            let _ = write!(
                out,
                " ({unknown_flops} nodes with symbolic or unfit shapes not counted)"
            );
        }
        out.push('\n');
        let unmodelled: Vec<&CollectiveRow> = self
            .collectives
            .iter()
            .filter(|c| c.algo.is_none())
            .collect();
        if !unmodelled.is_empty() {
            let _ = writeln!(
                out,
                "{} collectives cost 0 (the model cannot time them):",
                unmodelled.len()
            );
            for c in unmodelled.iter().take(10) {
                let why = if c.c10d {
                    "a non-functional c10d op: torch's model cannot resolve its process group"
                } else if c.coll == "unsupported" {
                    "torch's model has no formula for this collective"
                } else if c.group_size.is_none() {
                    "process-group size unknown (give group_ranks)"
                } else {
                    "a group of one rank"
                };
                let _ = writeln!(out, "  {} ({}): {why}", c.node, c.op);
            }
            if unmodelled.len() > 10 {
                let _ = writeln!(out, "  ... and {} more", unmodelled.len() - 10);
            }
        }

        let _ = writeln!(out, "\nMost exposed collectives, as it is:");
        let mut as_is: Vec<&CollectiveRow> = self
            .collectives
            .iter()
            .filter(|c| c.exposed_us > 0.0)
            .collect();
        as_is.sort_by(|a, b| b.exposed_us.total_cmp(&a.exposed_us));
        if as_is.is_empty() {
            let _ = writeln!(out, "  none: compute never waits for communication");
        }
        for c in as_is.iter().take(10) {
            let _ = writeln!(
                out,
                "  {:<40} {:<15} {:>10} group {:<4} {:>12} {:<12} exposed {}",
                c.node,
                c.coll,
                bytes(c.bytes),
                c.group_size.map_or("?".into(), |g| g.to_string()),
                us(c.us),
                c.algo.unwrap_or("-"),
                us(c.exposed_us)
            );
        }

        let _ = writeln!(out, "\nMost exposed buckets or collectives, planned:");
        let mut planned: Vec<(String, u64, f64, Option<&str>, f64)> = self
            .buckets
            .iter()
            .filter(|b| b.exposed_us > 0.0)
            .map(|b| {
                let label = if b.members == 1 {
                    format!("{} ({})", b.bucket_id, b.first)
                } else {
                    format!("{} ({} members from {})", b.bucket_id, b.members, b.first)
                };
                (label, b.bytes, b.us, b.algo, b.exposed_us)
            })
            .collect();
        for &(c, exposed) in &self.planned_unbucketed_exposed {
            if let Some(row) = self.collectives.get(c).filter(|_| exposed > 0.0) {
                planned.push((row.node.to_string(), row.bytes, row.us, row.algo, exposed));
            }
        }
        planned.sort_by(|a, b| b.4.total_cmp(&a.4));
        if planned.is_empty() {
            let _ = writeln!(out, "  none: compute never waits for communication");
        }
        for (label, b, t, algo, exposed) in planned.iter().take(10) {
            let _ = writeln!(
                out,
                "  {:<56} {:>10} {:>12} {:<12} exposed {}",
                label,
                bytes(*b),
                us(*t),
                algo.unwrap_or("-"),
                us(*exposed)
            );
        }
        if let Some(note) = &self.note {
            out.push('\n');
            out.push_str(note);
            out.push('\n');
        }
        out
    }
}

/// A slice of rows as a JSON array, each row as its entry in the JSON form.
fn rows<T: Sync>(rows: &[T]) -> Field<'_>
where
    for<'t> RowJson<'t, T>: Serialize,
{
    Field::Indexed(rows.len(), Box::new(move |i: usize| RowJson(&rows[i])))
}

/// One row as the JSON form writes it.
struct RowJson<'t, T>(&'t T);

impl Serialize for RowJson<'_, CollectiveRow<'_>> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let mut o = serializer.serialize_struct("CollectiveRow", 6)?;
        o.serialize_field("node", c.node)?;
        o.serialize_field("coll", c.coll)?;
        o.serialize_field("bytes", &c.bytes)?;
        o.serialize_field("group_size", &c.group_size)?;
        o.serialize_field("us", &c.us)?;
        o.serialize_field("algo", &c.algo)?;
        o.end()
    }
}

impl Serialize for RowJson<'_, ComputeRow<'_>> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let mut o = serializer.serialize_struct("ComputeRow", 4)?;
        o.serialize_field("node", c.node)?;
        o.serialize_field("target", c.target)?;
        o.serialize_field("flops", &c.flops)?;
        o.serialize_field("us", &c.us)?;
        o.end()
    }
}

impl Serialize for RowJson<'_, BucketRow<'_>> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let b = self.0;
        let mut o = serializer.serialize_struct("BucketRow", 3)?;
        o.serialize_field("bucket_id", &b.bucket_id)?;
        o.serialize_field("bytes", &b.bytes)?;
        o.serialize_field("us", &b.us)?;
        o.end()
    }
}

/// The `summary` entry: the graph as it is and as planned.
struct SummariesJson<'r, 'g>(&'r CostReport<'g>);

impl Serialize for SummariesJson<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut o = serializer.serialize_struct("Summaries", 2)?;
        o.serialize_field("unbucketed", &SummaryJson(&self.0.unbucketed))?;
        o.serialize_field("planned", &SummaryJson(&self.0.planned))?;
        o.end()
    }
}

struct SummaryJson<'s>(&'s StepSummary);

impl Serialize for SummaryJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = self.0;
        let mut o = serializer.serialize_struct("StepSummary", 4)?;
        o.serialize_field("step_us", &s.step_us)?;
        o.serialize_field("compute_us", &s.compute_us)?;
        o.serialize_field("comm_us", &s.comm_us)?;
        o.serialize_field("exposed_comm_us", &s.exposed_comm_us)?;
        o.end()
    }
}

/// The hardware as the JSON reports it: enough to reproduce the numbers with the CLI's
/// options (bandwidths as used, whether preset or overridden).
pub fn hardware_json(hw: &Hardware) -> Value {
    let mut peaks = Map::new();
    for (dtype, tflops) in &hw.roofline.peak_tflops {
        peaks.insert(dtype.clone(), json!(tflops));
    }
    json!({
        "gpu": hw.network.gpu.as_str(),
        "gpus_per_node": hw.network.gpus_per_node,
        "nvlink": hw.network.nvlink,
        "intra_bw": hw.network.intra_bw(),
        "inter_bw": hw.network.inter_bw(),
        "dram_bw": hw.roofline.dram_gbps,
        "peak_tflops": peaks,
        "tf32": hw.roofline.tf32,
        "compute_efficiency": hw.roofline.efficiency,
    })
}

/// Microseconds, with a unit that keeps three significant figures readable (the text report's
/// and the app's).
pub fn us(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.3} s", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.3} ms", x / 1e3)
    } else {
        format!("{x:.3} us")
    }
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

fn group_digits(n: u128) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The generations `--gpu` accepts, for messages.
pub fn generations() -> String {
    GpuGeneration::ALL
        .iter()
        .map(|g| g.as_str())
        .collect::<Vec<_>>()
        .join("|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(us(12.3456), "12.346 us");
        assert_eq!(us(1234.5), "1.234 ms");
        assert_eq!(bytes(1000), "1000 B");
        assert_eq!(bytes(4 << 30), "4.0 GiB");
        assert_eq!(group_digits(1234567), "1,234,567");
        assert_eq!(group_digits(12), "12");
    }
}
