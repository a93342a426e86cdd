//! The stable JSON form of a plan diff (`"format": "commlens.plan-diff"`, keys in a fixed
//! order, schema in the README) and the same diff in plain words.

use super::{
    difference_head, Change, CollectiveKey, Company, DecisionRecord, PlanDiff, PlanSide,
    SortedBuckets,
};
use crate::hashing::FastMap;
use crate::planner::{Action, Reason};
use serde_json::{json, Map, Value};
use std::fmt::Write;

/// The `format` tag of `diff --json`.
pub const DIFF_FORMAT: &str = "commlens.plan-diff";
/// The schema version of `diff --json`. Version 1 listed with every collective the other
/// members of its bucket (`with`), which grew with the square of a bucket's size; version 2
/// lists each bucket's members once, in `before.buckets` and `after.buckets`, and a
/// collective's place is its bucket's index there.
pub const DIFF_VERSION: i64 = 2;

fn key_value(key: &CollectiveKey) -> Value {
    json!([
        key.kind.as_str(),
        &*key.param_name,
        state_idx_value(key.state_idx)
    ])
}

fn state_idx_value(state_idx: i128) -> Value {
    match i64::try_from(state_idx) {
        Ok(i) => json!(i),
        Err(_) => u64::try_from(state_idx).map_or_else(|_| json!(state_idx as f64), |u| json!(u)),
    }
}

/// A decision object as reports write it (keys sorted, `previous_node` only for a split).
pub fn decision_value(d: &DecisionRecord) -> Value {
    let mut m = Map::new();
    m.insert("action".into(), json!(d.action.as_str()));
    m.insert("node".into(), json!(d.node));
    if let Some(previous) = &d.previous_node {
        m.insert("previous_node".into(), json!(previous));
    }
    m.insert("reason".into(), json!(d.reason.as_str()));
    Value::Object(m)
}

fn reason_counts_value(counts: &[(Action, Vec<(Reason, usize)>)]) -> Value {
    Value::Object(
        counts
            .iter()
            .map(|(action, reasons)| {
                (
                    action.as_str().to_string(),
                    Value::Object(
                        reasons
                            .iter()
                            .map(|(r, n)| (r.as_str().to_string(), json!(n)))
                            .collect(),
                    ),
                )
            })
            .collect(),
    )
}

fn side_value(side: &PlanSide) -> Value {
    let buckets = side
        .buckets
        .iter()
        .enumerate()
        .map(|(b, bucket)| {
            let mut m = Map::new();
            m.insert(
                "bucket_id".into(),
                json!(bucket.id.as_ref().map(|id| id.to_string())),
            );
            m.insert(
                "members".into(),
                Value::Array(side.bucket_members(b).iter().map(key_value).collect()),
            );
            Value::Object(m)
        })
        .collect();
    let mut m = Map::new();
    m.insert("signature".into(), json!(side.signature));
    m.insert("buckets".into(), Value::Array(buckets));
    m.insert(
        "reason_counts".into(),
        reason_counts_value(&side.reason_counts),
    );
    Value::Object(m)
}

fn placement_value(side: &PlanSide, member: Option<usize>) -> Value {
    let Some(bucket) = member.and_then(|m| side.bucket_of(m)) else {
        return Value::Null;
    };
    let id = side
        .buckets
        .get(bucket)
        .and_then(|b| b.id.as_ref())
        .map(|id| id.to_string());
    let mut m = Map::new();
    m.insert("bucket".into(), json!(bucket));
    m.insert("bucket_id".into(), json!(id));
    Value::Object(m)
}

impl PlanDiff {
    /// The stable JSON form as a value.
    pub fn to_json_value(&self) -> Value {
        let collectives = self
            .collectives
            .iter()
            .filter_map(|c| {
                let key = self.key(c)?;
                let mut m = Map::new();
                m.insert("kind".into(), json!(key.kind.as_str()));
                m.insert("param_name".into(), json!(&*key.param_name));
                m.insert("state_idx".into(), state_idx_value(key.state_idx));
                m.insert("before".into(), placement_value(&self.before, c.before));
                m.insert("after".into(), placement_value(&self.after, c.after));
                m.insert("change".into(), json!(c.change.as_str()));
                Some(Value::Object(m))
            })
            .collect();
        let decisions = |side: &PlanSide, indices: &[usize]| -> Value {
            Value::Array(
                indices
                    .iter()
                    .filter_map(|&i| side.decisions.get(i))
                    .map(decision_value)
                    .collect(),
            )
        };
        let mut d = Map::new();
        d.insert("removed".into(), decisions(&self.before, &self.removed));
        d.insert("added".into(), decisions(&self.after, &self.added));
        let mut m = Map::new();
        m.insert("format".into(), json!(DIFF_FORMAT));
        m.insert("version".into(), json!(DIFF_VERSION));
        m.insert("same_graph".into(), json!(self.same_graph()));
        m.insert("before".into(), side_value(&self.before));
        m.insert("after".into(), side_value(&self.after));
        m.insert("collectives".into(), Value::Array(collectives));
        m.insert("decisions".into(), Value::Object(d));
        Value::Object(m)
    }

    /// `commlens diff --json`: indented, arrays of plain values on one line, final newline.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        write_json(&mut out, &self.to_json_value(), 0);
        out.push('\n');
        out
    }

    /// `commlens diff`: a summary, then each change in plain words.
    /// The text form, safe for a terminal (`text::terminal_safe`).
    pub fn to_text(&self) -> String {
        crate::text::into_terminal_safe(self.text_unescaped())
    }

    fn text_unescaped(&self) -> String {
        let mut out = String::new();
        let short = |s: &str| s.get(..12).unwrap_or(s).to_string();
        if self.same_graph() {
            let _ = writeln!(
                out,
                "plan diff of one graph (signature {})",
                printable(&short(&self.before.signature))
            );
        } else {
            let _ = writeln!(
                out,
                "plan diff of two graphs (signatures {} before, {} after); collectives are matched by kind, parameter name and state index",
                printable(&short(&self.before.signature)),
                printable(&short(&self.after.signature))
            );
        }
        let _ = writeln!(
            out,
            "buckets: {} -> {}",
            self.before.buckets.len(),
            self.after.buckets.len()
        );
        let reason_lines = reason_changes(&self.before, &self.after);
        if reason_lines.is_empty() {
            let _ = writeln!(out, "reasons: unchanged");
        } else {
            let _ = writeln!(out, "reasons:");
            for line in reason_lines {
                let _ = writeln!(out, "  {line}");
            }
        }
        let counts = self.counts();
        let _ = writeln!(
            out,
            "collectives: {} regrouped, {} only before, {} only after, {} unchanged",
            counts.regrouped, counts.only_before, counts.only_after, counts.same
        );
        let _ = writeln!(
            out,
            "decisions: {} removed, {} added",
            self.removed.len(),
            self.added.len()
        );
        let sorted_before = SortedBuckets::new(&self.before);
        let sorted_after = SortedBuckets::new(&self.after);
        let mut deltas = Deltas {
            before: &sorted_before,
            after: &sorted_after,
            by_buckets: FastMap::default(),
        };
        let sections = [
            (
                Change::Regrouped,
                "regrouped (bucket before -> bucket after):",
            ),
            (Change::OnlyBefore, "in a bucket only before:"),
            (Change::OnlyAfter, "in a bucket only after:"),
        ];
        for (change, title) in sections {
            let entries: Vec<_> = self
                .collectives
                .iter()
                .filter(|c| c.change == change)
                .collect();
            if entries.is_empty() {
                continue;
            }
            let _ = writeln!(out, "\n{title}");
            for c in entries {
                let Some(key) = self.key(c) else { continue };
                let before = c.before.map(|m| placement_text(&sorted_before, m, key));
                let after = c.after.map(|m| placement_text(&sorted_after, m, key));
                let line = match (before, after) {
                    (Some(b), Some(a)) => {
                        let delta = deltas.of(c.before, c.after, key);
                        format!("{b} -> {a}{delta}")
                    }
                    (Some(b), None) => format!("was {b}"),
                    (None, Some(a)) => format!("now {a}"),
                    (None, None) => String::new(),
                };
                let _ = writeln!(out, "  {}: {line}", key_text(key, None));
            }
        }
        for (title, side, indices) in [
            ("decisions removed:", &self.before, &self.removed),
            ("decisions added:", &self.after, &self.added),
        ] {
            if indices.is_empty() {
                continue;
            }
            let _ = writeln!(out, "\n{title}");
            for d in indices.iter().filter_map(|&i| side.decisions.get(i)) {
                let subject = match &d.previous_node {
                    Some(previous) => {
                        format!("{} from {}", printable(&d.node), printable(previous))
                    }
                    None => printable(&d.node),
                };
                let _ = writeln!(
                    out,
                    "  {} {subject}: {} ({})",
                    d.action.as_str(),
                    d.reason.as_str(),
                    d.reason.explain()
                );
            }
        }
        out
    }
}

/// `fsdp_all_gather l1.weight #0`; the kind is left out where it is `context`'s.
fn key_text(key: &CollectiveKey, context: Option<&CollectiveKey>) -> String {
    let name = printable(&key.param_name);
    match context {
        Some(c) if c.kind == key.kind => format!("{name} #{}", key.state_idx),
        _ => format!("{} {name} #{}", key.kind.as_str(), key.state_idx),
    }
}

/// At most this many collectives are named in one list of the text form.
const LISTED: usize = 8;

/// The keys of `company` (its first [`LISTED`]), and how many more it has.
fn key_list(company: &Company, context: &CollectiveKey) -> String {
    let mut text = company
        .named
        .iter()
        .take(LISTED)
        .map(|k| key_text(k, Some(context)))
        .collect::<Vec<_>>()
        .join(", ");
    if company.count > LISTED {
        let _ = write!(text, " and {} more", company.count - LISTED);
    }
    text
}

/// `bucket_3 with l1.bias #1, l2.weight #2`, or `bucket_3 alone`.
fn placement_text(sorted: &SortedBuckets, member: usize, key: &CollectiveKey) -> String {
    let side = sorted.side();
    let id = side
        .bucket_of(member)
        .and_then(|b| side.buckets.get(b))
        .and_then(|b| b.id.as_ref())
        // Every id of a plan starts with its signature: the bucket's own part tells it apart.
        .map(|id| {
            let id = id.to_string();
            printable(id.rsplit(':').next().unwrap_or(&id))
        })
        .unwrap_or_else(|| "a bucket".into());
    let company = sorted.company(member, LISTED);
    if company.count == 0 {
        format!("{id} alone")
    } else {
        format!("{id} with {}", key_list(&company, key))
    }
}

/// `; joins l2.weight #2; leaves l1.bias #1`: how regrouped collectives' company changed,
/// worked out once for each pair of buckets (before, after) that members moved between.
struct Deltas<'s, 'a> {
    before: &'s SortedBuckets<'a>,
    after: &'s SortedBuckets<'a>,
    /// What joined and what left, by bucket before and bucket after.
    by_buckets: FastMap<(usize, usize), (Company<'a>, Company<'a>)>,
}

impl Deltas<'_, '_> {
    /// The change for the member `b` of a bucket before that is member `a` of one after.
    /// Its company before is its bucket less itself, and likewise after, so what joined it
    /// is the bucket after less the bucket before, and what left it the reverse.
    fn of(&mut self, b: Option<usize>, a: Option<usize>, key: &CollectiveKey) -> String {
        let buckets = (
            b.and_then(|b| self.before.side().bucket_of(b)),
            a.and_then(|a| self.after.side().bucket_of(a)),
        );
        let (Some(before), Some(after)) = buckets else {
            return String::new();
        };
        let (sorted_before, sorted_after) = (self.before, self.after);
        let (joined, left) = self.by_buckets.entry((before, after)).or_insert_with(|| {
            let (old, new) = (sorted_before.bucket(before), sorted_after.bucket(after));
            (
                difference_head(new, old, LISTED),
                difference_head(old, new, LISTED),
            )
        });
        let mut text = String::new();
        if joined.count > 0 {
            let _ = write!(text, "; joins {}", key_list(joined, key));
        }
        if left.count > 0 {
            let _ = write!(text, "; leaves {}", key_list(left, key));
        }
        text
    }
}

/// `split capacity: 2 -> 0` for every reason whose count changed, in sorted order.
fn reason_changes(before: &PlanSide, after: &PlanSide) -> Vec<String> {
    let mut all: Vec<(&str, &str)> = Vec::new();
    for side in [before, after] {
        for (action, reasons) in &side.reason_counts {
            for (reason, _) in reasons {
                all.push((action.as_str(), reason.as_str()));
            }
        }
    }
    all.sort_unstable();
    all.dedup();
    let count = |side: &PlanSide, action: &str, reason: &str| -> usize {
        side.reason_counts
            .iter()
            .filter(|(a, _)| a.as_str() == action)
            .flat_map(|(_, reasons)| reasons.iter())
            .filter(|(r, _)| r.as_str() == reason)
            .map(|(_, n)| *n)
            .sum()
    };
    all.into_iter()
        .filter_map(|(action, reason)| {
            let (b, a) = (count(before, action, reason), count(after, action, reason));
            (b != a).then(|| format!("{action} {reason}: {b} -> {a}"))
        })
        .collect()
}

/// Text from an input, safe for a terminal: control characters escaped, very long text cut.
fn printable(text: &str) -> String {
    const LIMIT: usize = 200;
    let mut out = String::with_capacity(text.len().min(LIMIT + 8));
    for (count, c) in text.chars().enumerate() {
        if count == LIMIT {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// Indented JSON (two spaces) with arrays of plain values kept on one line, so a `with` entry
/// reads as `["fsdp_all_gather", "l1.bias", 1]`.
fn write_json(out: &mut String, value: &Value, level: usize) {
    let indent = |out: &mut String, level: usize| {
        out.push('\n');
        for _ in 0..level {
            out.push_str("  ");
        }
    };
    match value {
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) if items.iter().all(|v| !v.is_array() && !v.is_object()) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&item.to_string());
            }
            out.push(']');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, level + 1);
                write_json(out, item, level + 1);
            }
            indent(out, level);
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, level + 1);
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                write_json(out, v, level + 1);
            }
            indent(out, level);
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
