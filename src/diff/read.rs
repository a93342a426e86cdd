//! The two kinds of diff input: a plan in memory (or a dump, planned), and a plan report.
//!
//! [`read_side`] is the one place where diff input bytes are told apart: a plan report is
//! recognised by its keys, and everything else goes the way `commlens plan` reads a dump
//! ([`crate::read_and_plan_with`]), so a new dump input format accepted there is accepted here.

use super::{BucketLabel, CollectiveKey, DecisionRecord, PlanSide};
use crate::graph::Graph;
use crate::planner::{Action, BucketPlan, CollectiveKind, Reason};
use crate::{PlanFailure, TagMode};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Why one side of a diff could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SideError {
    /// A dump that could not be read or planned (the message `commlens plan` gives).
    Dump(PlanFailure),
    /// A plan report that is not well-formed.
    Report(String),
    /// The record of a failed plan (`{"error": "ValueError", "message": ...}`, as the
    /// conformance corpus writes it), not a plan.
    FailedPlan(String),
    /// Planner arguments were given for a side that is already a plan report.
    ArgsForReport,
}

impl fmt::Display for SideError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SideError::Dump(e) => e.fmt(f),
            SideError::Report(message) => write!(f, "invalid plan report: {message}"),
            SideError::FailedPlan(message) => write!(
                f,
                "the record of a failed plan (ValueError: {message}), not a plan report"
            ),
            SideError::ArgsForReport => f.write_str(
                "planner arguments apply to a dump, and this is a plan report (already planned)",
            ),
        }
    }
}

impl std::error::Error for SideError {}

/// One side of a diff from its bytes: a plan report (`BucketPlan.to_dict()` JSON, possibly
/// gzip-compressed) as it is, or a dump planned with `args_json` (or its own arguments), as
/// `commlens plan` would.
pub fn read_side(bytes: &[u8], args_json: Option<&[u8]>) -> Result<PlanSide, SideError> {
    read_side_with(bytes, None, args_json, TagMode::Dump)
}

/// [`read_side`], a dump's FSDP tags taken as `tags` says (`commlens diff --tags`; a report
/// is already planned); `graph` picks a trace log's graph (`--graph K`).
pub fn read_side_with(
    bytes: &[u8],
    graph: Option<usize>,
    args_json: Option<&[u8]>,
    tags: TagMode,
) -> Result<PlanSide, SideError> {
    match sniff(bytes) {
        Sniffed::Report => match args_json {
            Some(_) => Err(SideError::ArgsForReport),
            None => PlanSide::from_report_json(bytes).map_err(SideError::Report),
        },
        Sniffed::FailedPlan => Err(SideError::FailedPlan(failed_plan_message(bytes))),
        Sniffed::Other => read_dump_side(bytes, graph, args_json, tags),
    }
}

/// Whether the start of a document (its first megabyte, say; gzip or not) shows a graph
/// dump by its keys: `"format"` or `"nodes"` before any of a plan report's. Such a document
/// can be read as it streams ([`read_dump_side`]), never held whole, as the other commands
/// read a dump; anything else goes to [`read_side_with`] whole.
pub fn starts_as_dump(prefix: &[u8]) -> bool {
    sniff_keys(prefix) == Some(Sniffed::Other)
}

/// The side of a graph dump (or a trace log's graph): read, planned with `args_json` (or the
/// dump's own arguments) and its tags taken as `tags` says.
pub fn read_dump_side<'a>(
    input: impl Into<crate::input::Input<'a>>,
    graph: Option<usize>,
    args_json: Option<&[u8]>,
    tags: TagMode,
) -> Result<PlanSide, SideError> {
    let planned =
        crate::read_and_plan_with(input, graph, args_json, tags).map_err(SideError::Dump)?;
    Ok(PlanSide::from_plan(&planned.plan, &planned.graph))
}

/// Whether `bytes` are a plan document (a plan report, or the record of a failed plan) rather
/// than a graph: what [`read_side`] takes as a report. The app reads a graph itself (to draw
/// it) and hands only these to [`read_side`].
pub fn is_plan_document(bytes: &[u8]) -> bool {
    matches!(sniff(bytes), Sniffed::Report | Sniffed::FailedPlan)
}

impl PlanSide {
    /// The side of a plan in memory (what the app holds after planning).
    pub fn from_plan(plan: &BucketPlan, graph: &Graph) -> PlanSide {
        let name = |id: usize| graph.node(id).name.clone();
        let decisions = plan
            .decisions
            .iter()
            .map(|d| DecisionRecord {
                node: name(d.node),
                previous_node: d.previous_node.map(name),
                action: d.action,
                reason: d.reason,
            })
            .collect();
        let mut side = PlanSide::new(
            plan.signature.clone(),
            plan.summary.reason_counts.clone(),
            decisions,
        );
        let count = plan.buckets.iter().map(|b| b.members.len()).sum();
        side.members.reserve_exact(count);
        side.buckets.reserve_exact(plan.buckets.len());
        for bucket in &plan.buckets {
            side.push_bucket(
                Some(BucketLabel::Plan(bucket.bucket_id.clone())),
                bucket.members.iter().map(|m| CollectiveKey {
                    kind: m.key.kind,
                    param_name: m.param_name.clone(),
                    state_idx: m.state_idx,
                }),
            );
        }
        side
    }

    /// The side of a plan report (`BucketPlan.to_dict()` JSON, possibly gzip-compressed).
    /// Only what a diff compares is read; other keys are skipped. The error names the field
    /// and the line and column.
    pub fn from_report_json(bytes: &[u8]) -> Result<PlanSide, String> {
        let inflated;
        let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
            inflated = crate::dump::gunzip(bytes).map_err(|e| e.to_string())?;
            &inflated[..]
        } else {
            bytes
        };
        let report: ReportIn = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let decisions = report
            .decisions
            .into_iter()
            .map(|d| DecisionRecord {
                node: d.node,
                previous_node: d.previous_node,
                action: d.action.0,
                reason: d.reason.0,
            })
            .collect();
        let reason_counts = report
            .summary
            .reason_counts
            .into_iter()
            .map(|(action, counts)| {
                (
                    action.0,
                    counts.into_iter().map(|(r, n)| (r.0, n)).collect(),
                )
            })
            .collect();
        let mut side = PlanSide::new(report.signature, reason_counts, decisions);
        for bucket in report.buckets {
            side.push_bucket(
                bucket.bucket_id.map(BucketLabel::Text),
                bucket.members.into_iter().map(|m| CollectiveKey {
                    kind: m.kind.0,
                    param_name: Arc::from(m.param_name),
                    state_idx: m.state_idx.0,
                }),
            );
        }
        Ok(side)
    }
}

// ---- the report, as far as a diff reads it ----

#[derive(serde::Deserialize)]
struct ReportIn {
    buckets: Vec<BucketIn>,
    decisions: Vec<DecisionIn>,
    signature: String,
    summary: SummaryIn,
}

#[derive(serde::Deserialize)]
struct BucketIn {
    #[serde(default)]
    bucket_id: Option<String>,
    members: Vec<MemberIn>,
}

#[derive(serde::Deserialize)]
struct MemberIn {
    kind: Named<CollectiveKind>,
    param_name: String,
    state_idx: StateIdx,
}

/// A member's `state_idx`: a JSON integer (`1.0` is not one, as Python's `int` is not `float`).
struct StateIdx(i128);

impl<'de> Deserialize<'de> for StateIdx {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let number = serde_json::Number::deserialize(deserializer)?;
        number
            .as_i64()
            .map(i128::from)
            .or_else(|| number.as_u64().map(i128::from))
            .map(StateIdx)
            .ok_or_else(|| {
                de::Error::custom(format!("state_idx must be an integer, found {number}"))
            })
    }
}

#[derive(serde::Deserialize)]
struct DecisionIn {
    node: String,
    #[serde(default)]
    previous_node: Option<String>,
    action: Named<Action>,
    reason: Named<Reason>,
}

#[derive(serde::Deserialize)]
struct SummaryIn {
    reason_counts: HashMap<Named<Action>, HashMap<Named<Reason>, usize>>,
}

/// A vocabulary word of the core read from its report string.
#[derive(PartialEq, Eq, Hash)]
struct Named<T>(T);

trait Vocabulary: Sized {
    const WHAT: &'static str;
    fn parse(text: &str) -> Option<Self>;
}

impl Vocabulary for CollectiveKind {
    const WHAT: &'static str = "a planned collective kind (fsdp_all_gather, fsdp_all_gather_backward, fsdp_reduce_scatter)";
    fn parse(text: &str) -> Option<Self> {
        CollectiveKind::from_comm_type(text)
    }
}

impl Vocabulary for Action {
    const WHAT: &'static str = "a planner action (skip, split, singleton)";
    fn parse(text: &str) -> Option<Self> {
        [Action::Skip, Action::Split, Action::Singleton]
            .into_iter()
            .find(|a| a.as_str() == text)
    }
}

impl Vocabulary for Reason {
    const WHAT: &'static str = "a planner reason";
    fn parse(text: &str) -> Option<Self> {
        Reason::parse(text)
    }
}

impl<'de, T: Vocabulary> Deserialize<'de> for Named<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        T::parse(&text).map(Named).ok_or_else(|| {
            let shown: String = text.chars().take(80).collect();
            de::Error::custom(format!("{shown:?} is not {}", T::WHAT))
        })
    }
}

// ---- telling inputs apart ----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sniffed {
    Report,
    FailedPlan,
    Other,
}

/// What the document's top-level keys say it is. Keys are read in order until one decides
/// (`"format"` or `"nodes"`: a dump; `"buckets"`, `"decisions"`, `"group_digests"`,
/// `"summary"`: a plan report; `"error"`: a failed plan's record), then reading stops, so a
/// large dump is not parsed twice. Anything undecided (not JSON, no deciding key) goes the
/// dump's way, whose reader says what is wrong with it.
fn sniff(bytes: &[u8]) -> Sniffed {
    sniff_keys(bytes).unwrap_or(Sniffed::Other)
}

/// [`sniff`], `None` when no key decided (not JSON, no deciding key, or the text ends first).
fn sniff_keys(bytes: &[u8]) -> Option<Sniffed> {
    const PREFIX: u64 = 1 << 20;
    let inflated;
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        // The keys that decide come first in practice: look at the first megabyte only.
        use std::io::Read;
        let mut prefix = Vec::new();
        let _ = flate2::read::MultiGzDecoder::new(bytes)
            .take(PREFIX)
            .read_to_end(&mut prefix);
        inflated = prefix;
        &inflated[..]
    } else {
        bytes
    };
    struct Top<'a>(&'a mut Option<Sniffed>);
    impl<'de> Visitor<'de> for Top<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                let decided = match key.as_str() {
                    "format" | "nodes" => Sniffed::Other,
                    "buckets" | "decisions" | "group_digests" | "summary" => Sniffed::Report,
                    "error" => Sniffed::FailedPlan,
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                };
                *self.0 = Some(decided);
                // Stop reading: the rest of the document is the reader's business.
                return Err(de::Error::custom("decided"));
            }
            Ok(())
        }
    }
    let mut found = None;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let _ = deserializer.deserialize_map(Top(&mut found));
    found
}

fn failed_plan_message(bytes: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Failed {
        #[serde(default)]
        message: Option<String>,
    }
    let inflated;
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        inflated = crate::dump::gunzip(bytes).unwrap_or_default();
        &inflated[..]
    } else {
        bytes
    };
    let message = serde_json::from_slice::<Failed>(bytes)
        .ok()
        .and_then(|f| f.message)
        .unwrap_or_else(|| "no message".into());
    message.chars().take(400).collect()
}
