//! `validate_group_plans`: do the rank reports of one process group agree?
//!
//! The verdict and its message are the reference's (`ValidationError::message`, the
//! `ValueError` text the conformance corpus pins). What the reference does not say, a
//! [`Finding`] does: which rank and file, which field (`group_ranks`, which group's digest),
//! and when both reports hold buckets, the first differing bucket and member.
//!
//! Reports are compared one at a time ([`validate_reports`]): the caller hands over each report
//! when asked, and only what is compared is kept ([`RankReport`]), so a manifest of many
//! large reports needs the memory of two of them.

use crate::pyjson;
use crate::value::{Key, PyValue};
use std::collections::HashMap;
use std::fmt;

/// Why rank reports do not validate. `message` (and `Display`) is the reference's `ValueError`
/// message verbatim; `finding` says which report, file and field, for [`ValidationError::explain`]
/// and [`ValidationError::to_json`].
#[derive(Clone, Debug, PartialEq)]
pub struct ValidationError {
    pub message: String,
    pub group: String,
    pub finding: Box<Finding>,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ValidationError {}

/// One report as the caller listed it: its rank and, when it came from a file, the file.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportRef {
    pub rank: PyValue,
    pub file: Option<String>,
}

/// The report fields validation reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    GroupRanks,
    GroupDigests,
}

impl Field {
    pub fn as_str(self) -> &'static str {
        match self {
            Field::GroupRanks => "group_ranks",
            Field::GroupDigests => "group_digests",
        }
    }
}

/// What exactly is wrong. (Made once per validation, and boxed in [`ValidationError`]: the
/// variants' sizes do not matter.)
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Finding {
    /// No reports at all.
    NoReports,
    /// The first listed report (the reference) names no ranks for the group.
    UnknownGroup {
        reference: ReportRef,
        /// Whether its `group_ranks` is an object at all.
        group_ranks_is_object: bool,
        /// The groups its `group_ranks` does name.
        groups: Vec<String>,
    },
    /// The reports' ranks are not the group's ranks as the reference report lists them.
    RankSet {
        reference: ReportRef,
        expected: PyValue,
        /// Ranks of the group without a report, in the group's order.
        missing: Vec<PyValue>,
        /// Ranks with a report that are not in the group, in the listed order.
        unexpected: Vec<PyValue>,
    },
    /// A report lacks a field every `BucketPlan.to_dict()` report has (or is not an object).
    MissingField {
        report: ReportRef,
        field: Field,
        is_object: bool,
    },
    /// A report disagrees with the reference report on the group's ranks or digest.
    Disagree {
        report: ReportRef,
        reference: ReportRef,
        field: Field,
        /// The field's entry for the group: the reference report's, then this report's
        /// (`None` where the entry is absent).
        values: (Option<PyValue>, Option<PyValue>),
        /// For a digest: where the group's buckets first differ, when both reports hold
        /// buckets.
        layouts: Option<LayoutComparison>,
    },
}

/// The group's buckets of two reports, compared in order, member by member (the layout fields
/// the digest covers; ids and offsets aside).
#[derive(Clone, Debug, PartialEq)]
pub enum LayoutComparison {
    /// Every bucket agrees: the digests differ in the group's wire records (every tagged
    /// collective of the group, skipped ones included), which reports hold only as the digest.
    Agree,
    /// The first difference.
    Differ(Box<LayoutDifference>),
}

/// Where two reports' buckets for a group first differ.
#[derive(Clone, Debug, PartialEq)]
pub struct LayoutDifference {
    /// Index among the group's buckets (in report order).
    pub bucket: usize,
    /// The bucket's id in the reference report and in this report (`None` where that report
    /// has no such bucket).
    pub bucket_ids: (Option<String>, Option<String>),
    /// Index of the first differing member, when the difference is inside a bucket.
    pub member: Option<usize>,
    /// `"buckets"` when one report has more buckets for the group, `"members"` when one
    /// bucket has more members, `"member"` when the members are different collectives (by
    /// kind, parameter name and state index), else the member field that differs.
    pub field: String,
    /// The reference report's value and this report's: the field's values; for `"member"`,
    /// the two members; for `"members"`, the member at `member` (`None` in the shorter
    /// bucket); for `"buckets"`, `None`.
    pub values: (Option<PyValue>, Option<PyValue>),
    /// The number of members of the two buckets (for `"buckets"`: of the group's buckets),
    /// in the reference report and in this report.
    pub sizes: (usize, usize),
}

/// What validation keeps of one rank's report for one group: the group's entries of
/// `group_ranks` and `group_digests`, and the group's bucket layouts. Everything else of the
/// report is dropped as soon as it is read.
#[derive(Clone, Debug, PartialEq)]
pub struct RankReport {
    is_object: bool,
    group_ranks: Option<Entry>,
    group_digests: Option<Entry>,
    /// The group's buckets, when the report holds a `buckets` list.
    layouts: Option<Vec<BucketLayout>>,
}

/// A report's `group_ranks` or `group_digests`, as far as one group is concerned.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    is_object: bool,
    /// The group's value (`None` when the group is not a key).
    value: Option<PyValue>,
    /// The keys, for messages (only the first report's are shown).
    groups: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
struct BucketLayout {
    id: Option<String>,
    /// Each member's fields but the packing offsets, which follow from them.
    members: Vec<PyValue>,
}

/// Member fields derived from the others; a difference there is reported where it starts.
const DERIVED_MEMBER_FIELDS: [&str; 2] = ["local_offset", "local_numel"];

impl RankReport {
    /// Reads a report (`BucketPlan.to_dict()` JSON) for `group`. The error is serde_json's
    /// message with its line and column.
    pub fn from_json(bytes: &[u8], group: &str) -> Result<RankReport, String> {
        use serde_json::Value as J;
        let document: J = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let J::Object(mut top) = document else {
            return Ok(RankReport::from_value(&PyValue::None, group));
        };
        // Only the compared parts become Python values; the rest is dropped here.
        let mut kept = crate::value::Dict::new();
        for key in [Field::GroupRanks.as_str(), Field::GroupDigests.as_str()] {
            if let Some(value) = top.get(key) {
                kept.insert(Key::from(key), PyValue::from_plain_json(value));
            }
        }
        if let Some(J::Array(buckets)) = top.shift_remove("buckets") {
            let of_group = buckets
                .iter()
                .filter(|b| first_member_group(b) == Some(group))
                .map(PyValue::from_plain_json)
                .collect();
            kept.insert(Key::from("buckets"), PyValue::List(of_group));
        }
        Ok(RankReport::from_value(
            &PyValue::Dict(std::sync::Arc::new(kept)),
            group,
        ))
    }

    /// What validation keeps of a report held as a Python value.
    pub fn from_value(report: &PyValue, group: &str) -> RankReport {
        let Some(dict) = report.as_dict() else {
            return RankReport {
                is_object: false,
                group_ranks: None,
                group_digests: None,
                layouts: None,
            };
        };
        let entry = |key: &str| {
            dict.get(key).map(|value| Entry {
                is_object: value.as_dict().is_some(),
                value: value.as_dict().and_then(|d| d.get(group)).cloned(),
                groups: value
                    .as_dict()
                    .map(|d| d.keys().map(|k| k.to_string()).collect())
                    .unwrap_or_default(),
            })
        };
        let layouts = dict
            .get("buckets")
            .and_then(PyValue::as_list)
            .map(|buckets| {
                buckets
                    .iter()
                    .filter(|b| member_group(b) == Some(group))
                    .map(bucket_layout)
                    .collect()
            });
        RankReport {
            is_object: true,
            group_ranks: entry(Field::GroupRanks.as_str()),
            group_digests: entry(Field::GroupDigests.as_str()),
            layouts,
        }
    }

    fn entry(&self, field: Field) -> Option<&Entry> {
        match field {
            Field::GroupRanks => self.group_ranks.as_ref(),
            Field::GroupDigests => self.group_digests.as_ref(),
        }
    }
}

fn first_member_group(bucket: &serde_json::Value) -> Option<&str> {
    bucket.get("members")?.get(0)?.get("group")?.as_str()
}

/// The process group of a bucket's first member, as `group_digest` selects buckets.
fn member_group(bucket: &PyValue) -> Option<&str> {
    let members = bucket.as_dict()?.get("members")?.as_list()?;
    members.first()?.as_dict()?.get("group")?.as_str()
}

fn bucket_layout(bucket: &PyValue) -> BucketLayout {
    let dict = bucket.as_dict();
    let members = dict
        .and_then(|d| d.get("members"))
        .and_then(PyValue::as_list)
        .unwrap_or_default()
        .iter()
        .map(|member| match member {
            PyValue::Dict(fields) => PyValue::Dict(
                fields
                    .iter()
                    .filter(|(k, _)| !DERIVED_MEMBER_FIELDS.contains(&k.as_ref()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<indexmap::IndexMap<_, _>>()
                    .into(),
            ),
            other => other.clone(),
        })
        .collect();
    BucketLayout {
        id: dict
            .and_then(|d| d.get("bucket_id"))
            .and_then(PyValue::as_str)
            .map(str::to_string),
        members,
    }
}

/// A rank as a Python dict key: equal keys for values Python's `==` (and `hash`) treat as
/// equal (`1`, `1.0` and `True`), so finding a rank's place is a hash lookup, not a scan.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum RankKey {
    Int(i128),
    Float(u64),
    Text(String),
    /// Values Python could not use as keys (lists, dicts): compared by their `repr`.
    Other(String),
}

fn rank_key(rank: &PyValue) -> RankKey {
    match rank {
        PyValue::Bool(b) => RankKey::Int(*b as i128),
        PyValue::Int(i) => RankKey::Int(i.get()),
        PyValue::Float(f) if f.fract() == 0.0 && f.abs() < 1e38 => RankKey::Int(*f as i128),
        PyValue::Float(f) => RankKey::Float(f.to_bits()),
        PyValue::Str(s) => RankKey::Text(s.clone()),
        other => RankKey::Other(other.py_repr()),
    }
}

/// The reports in the order `validate_group_plans` compares them: a dict keyed by rank, so a
/// repeated rank keeps its first place and takes its last report. Each entry is the listing
/// index of the report used.
fn compared_order(entries: &[ReportRef]) -> Vec<usize> {
    let mut place: HashMap<RankKey, usize> = HashMap::with_capacity(entries.len());
    let mut order: Vec<usize> = Vec::new();
    for (listing, entry) in entries.iter().enumerate() {
        match place.entry(rank_key(&entry.rank)) {
            std::collections::hash_map::Entry::Occupied(slot) => {
                if let Some(used) = order.get_mut(*slot.get()) {
                    *used = listing;
                }
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(order.len());
                order.push(listing);
            }
        }
    }
    order
}

/// Why [`validate_reports`] stopped: a report could not be loaded, or they do not agree.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure<E> {
    Load(E),
    Invalid(ValidationError),
}

/// `validate_group_plans` over the listed reports, loading each when it is compared:
/// `load(i)` returns the [`RankReport`] of `entries[i]`. At most two reports are held at a
/// time (the first listed, which the others are compared with, and the current one); a rank
/// listed more than once is loaded once, with its last listing, as the reference's dict keeps
/// it. The checks and their order are the reference's.
pub fn validate_reports<E>(
    group: &str,
    entries: &[ReportRef],
    mut load: impl FnMut(usize) -> Result<RankReport, E>,
) -> Result<(), Failure<E>> {
    let invalid = |message: String, finding: Finding| {
        Failure::Invalid(ValidationError {
            message,
            group: group.to_string(),
            finding: Box::new(finding),
        })
    };
    let order = compared_order(entries);
    let Some(&first_listing) = order.first() else {
        return Err(invalid(
            "No rank reports supplied".into(),
            Finding::NoReports,
        ));
    };
    let reference_ref = || entries[first_listing].clone();
    let first = load(first_listing).map_err(Failure::Load)?;
    let missing_field = |report: &RankReport, listing: usize, field: Field| {
        invalid(
            format!(
                "A rank report has no {:?} (expected BucketPlan.to_dict() reports)",
                field.as_str()
            ),
            Finding::MissingField {
                report: entries[listing].clone(),
                field,
                is_object: report.is_object,
            },
        )
    };
    let Some(first_ranks) = first.entry(Field::GroupRanks) else {
        return Err(missing_field(&first, first_listing, Field::GroupRanks));
    };
    let expected = match &first_ranks.value {
        Some(value) if !matches!(value, PyValue::None) => value.clone(),
        _ => {
            return Err(invalid(
                format!("Expected reports for group {group} ranks None"),
                Finding::UnknownGroup {
                    reference: reference_ref(),
                    group_ranks_is_object: first_ranks.is_object,
                    groups: first_ranks.groups.clone(),
                },
            ))
        }
    };
    let expected_items: Vec<PyValue> = match &expected {
        PyValue::List(items) => items.clone(),
        other => vec![other.clone()],
    };
    let expected_keys: std::collections::HashSet<RankKey> =
        expected_items.iter().map(rank_key).collect();
    let listed_keys: std::collections::HashSet<RankKey> =
        order.iter().map(|&i| rank_key(&entries[i].rank)).collect();
    if expected_keys != listed_keys {
        let missing = expected_items
            .iter()
            .filter(|r| !listed_keys.contains(&rank_key(r)))
            .cloned()
            .collect();
        let unexpected = order
            .iter()
            .map(|&i| &entries[i].rank)
            .filter(|r| !expected_keys.contains(&rank_key(r)))
            .cloned()
            .collect();
        return Err(invalid(
            format!(
                "Expected reports for group {group} ranks {}",
                expected.py_str()
            ),
            Finding::RankSet {
                reference: reference_ref(),
                expected,
                missing,
                unexpected,
            },
        ));
    }
    let Some(first_digests) = first.entry(Field::GroupDigests) else {
        return Err(missing_field(&first, first_listing, Field::GroupDigests));
    };
    let first_digest = first_digests.value.clone();
    for (position, &listing) in order.iter().enumerate() {
        let loaded;
        let report = if position == 0 {
            &first
        } else {
            loaded = load(listing).map_err(Failure::Load)?;
            &loaded
        };
        let Some(ranks) = report.entry(Field::GroupRanks) else {
            return Err(missing_field(report, listing, Field::GroupRanks));
        };
        let Some(digests) = report.entry(Field::GroupDigests) else {
            return Err(missing_field(report, listing, Field::GroupDigests));
        };
        let ranks_agree = ranks
            .value
            .as_ref()
            .unwrap_or(&PyValue::List(Vec::new()))
            .py_eq(&expected);
        let digests_agree = match (&digests.value, &first_digest) {
            (Some(a), Some(b)) => a.py_eq(b),
            (None, None) => true,
            _ => false,
        };
        if ranks_agree && digests_agree {
            continue;
        }
        let (field, values, layouts) = if !ranks_agree {
            (
                Field::GroupRanks,
                (Some(expected.clone()), ranks.value.clone()),
                None,
            )
        } else {
            // Where both reports hold the group's digest and buckets, the buckets say where
            // the digests part.
            let layouts = match (&first.layouts, &report.layouts) {
                (Some(a), Some(b)) if first_digest.is_some() && digests.value.is_some() => {
                    Some(compare_layouts(a, b))
                }
                _ => None,
            };
            (
                Field::GroupDigests,
                (first_digest.clone(), digests.value.clone()),
                layouts,
            )
        };
        return Err(invalid(
            format!("Bucket plans disagree for group {group}"),
            Finding::Disagree {
                report: entries[listing].clone(),
                reference: reference_ref(),
                field,
                values,
                layouts,
            },
        ));
    }
    Ok(())
}

/// The first difference between two reports' bucket layouts for a group.
fn compare_layouts(reference: &[BucketLayout], report: &[BucketLayout]) -> LayoutComparison {
    for (i, (a, b)) in reference.iter().zip(report).enumerate() {
        let difference = |member, field: String, values| {
            LayoutComparison::Differ(Box::new(LayoutDifference {
                bucket: i,
                bucket_ids: (a.id.clone(), b.id.clone()),
                member: Some(member),
                field,
                values,
                sizes: (a.members.len(), b.members.len()),
            }))
        };
        for (m, (x, y)) in a.members.iter().zip(&b.members).enumerate() {
            if let Some((field, values)) = first_member_difference(x, y) {
                return difference(m, field, values);
            }
        }
        if a.members.len() != b.members.len() {
            let common = a.members.len().min(b.members.len());
            let values = (
                a.members.get(common).cloned(),
                b.members.get(common).cloned(),
            );
            return difference(common, "members".into(), values);
        }
    }
    if reference.len() != report.len() {
        let common = reference.len().min(report.len());
        let id = |layouts: &[BucketLayout]| layouts.get(common).and_then(|b| b.id.clone());
        return LayoutComparison::Differ(Box::new(LayoutDifference {
            bucket: common,
            bucket_ids: (id(reference), id(report)),
            member: None,
            field: "buckets".into(),
            values: (None, None),
            sizes: (reference.len(), report.len()),
        }));
    }
    LayoutComparison::Agree
}

/// The member fields that say which collective a member is.
const IDENTITY_FIELDS: [&str; 3] = ["kind", "param_name", "state_idx"];

/// Where two members differ: `"member"` (with both members) when they are different
/// collectives, else the first field, in sorted key order as reports are written, with its
/// two values.
#[allow(clippy::type_complexity)]
fn first_member_difference(
    a: &PyValue,
    b: &PyValue,
) -> Option<(String, (Option<PyValue>, Option<PyValue>))> {
    let (Some(x), Some(y)) = (a.as_dict(), b.as_dict()) else {
        return (!a.py_eq(b)).then(|| ("member".to_string(), (Some(a.clone()), Some(b.clone()))));
    };
    let same = |k: &str| match (x.get(k), y.get(k)) {
        (Some(u), Some(v)) => u.py_eq(v),
        (None, None) => true,
        _ => false,
    };
    if !IDENTITY_FIELDS.iter().all(|k| same(k)) {
        return Some(("member".to_string(), (Some(a.clone()), Some(b.clone()))));
    }
    let mut keys: Vec<&Key> = x.keys().chain(y.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .find(|k| !same(k))
        .map(|k| (k.to_string(), (x.get(k).cloned(), y.get(k).cloned())))
}

/// `validate_group_plans` over `(rank, report)` pairs in the caller's order; the first listed
/// report is the one the others are compared with. The error's `message` is the reference's.
pub fn validate_group_plans(
    reports: &[(PyValue, PyValue)],
    group: &str,
) -> Result<(), ValidationError> {
    let entries: Vec<ReportRef> = reports
        .iter()
        .map(|(rank, _)| ReportRef {
            rank: rank.clone(),
            file: None,
        })
        .collect();
    validate_reports(group, &entries, |i| {
        Ok::<_, std::convert::Infallible>(RankReport::from_value(&reports[i].1, group))
    })
    .map_err(|failure| match failure {
        Failure::Invalid(e) => e,
        Failure::Load(never) => match never {},
    })
}

// ---- messages people can act on ----

/// A value for a message: JSON as `json.dumps` writes it (so `null`, never `None`), cut to a
/// readable length.
fn show(value: &PyValue) -> String {
    clip(&pyjson::dumps(value), 120)
}

fn show_opt(value: &Option<PyValue>) -> String {
    value.as_ref().map_or_else(|| "nothing".to_string(), show)
}

fn clip(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_string();
    }
    let cut: String = text.chars().take(limit.saturating_sub(3)).collect();
    format!("{cut}...")
}

/// A file name for a message: quoted and escaped where it holds control characters.
fn show_file(file: &str) -> String {
    if file.chars().any(char::is_control) {
        clip(&format!("{file:?}"), 240)
    } else {
        clip(file, 240)
    }
}

impl ReportRef {
    /// `rank 1's report (rank_1.json)`.
    fn describe(&self) -> String {
        match &self.file {
            Some(file) => format!("rank {}'s report ({})", show(&self.rank), show_file(file)),
            None => format!("rank {}'s report", show(&self.rank)),
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({"rank": plain_json(&self.rank), "file": self.file})
    }
}

fn list_names(names: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut text = names
        .iter()
        .take(SHOWN)
        .map(|n| clip(&pyjson::dumps(&PyValue::Str(n.clone())), 80))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

fn list_values(values: &[PyValue]) -> String {
    const SHOWN: usize = 10;
    let mut text = values
        .iter()
        .take(SHOWN)
        .map(show)
        .collect::<Vec<_>>()
        .join(", ");
    if values.len() > SHOWN {
        text.push_str(&format!(" and {} more", values.len() - SHOWN));
    }
    text
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl ValidationError {
    /// The message for people: which rank and file, which field, and where the group's
    /// buckets first differ. Values are written as JSON (`null`, never Python's `None`).
    pub fn explain(&self) -> String {
        let group = clip(&self.group, 120);
        match self.finding.as_ref() {
            Finding::NoReports => {
                "No rank reports supplied: give one report per rank of the group".to_string()
            }
            Finding::UnknownGroup {
                reference,
                group_ranks_is_object,
                groups,
            } => {
                let has = if !group_ranks_is_object {
                    "its \"group_ranks\" is not an object".to_string()
                } else if groups.is_empty() {
                    "its \"group_ranks\" names no groups".to_string()
                } else if groups.iter().any(|g| g == &self.group) {
                    format!("its \"group_ranks\" lists null for {group}")
                } else {
                    format!("its \"group_ranks\" names {}", list_names(groups))
                };
                format!(
                    "Expected reports for group {group}, but {}, the first listed (the others are compared with it), has no ranks for the group: {has}",
                    reference.describe()
                )
            }
            Finding::RankSet {
                reference,
                expected,
                missing,
                unexpected,
            } => {
                let mut problems = Vec::new();
                if !missing.is_empty() {
                    problems.push(format!(
                        "no report for {} {}",
                        if missing.len() == 1 { "rank" } else { "ranks" },
                        list_values(missing)
                    ));
                }
                if !unexpected.is_empty() {
                    let (noun, verb) = if unexpected.len() == 1 {
                        ("rank", "is")
                    } else {
                        ("ranks", "are")
                    };
                    problems.push(format!(
                        "{noun} {} {verb} not in the group",
                        list_values(unexpected)
                    ));
                }
                format!(
                    "Expected reports for group {group} ranks {}, as {}, the first listed, says: {}",
                    show(expected),
                    reference.describe(),
                    problems.join("; ")
                )
            }
            Finding::MissingField {
                report,
                field,
                is_object,
            } => {
                if *is_object {
                    format!(
                        "{} has no \"{}\" (expected a BucketPlan.to_dict() report)",
                        capitalize(&report.describe()),
                        field.as_str()
                    )
                } else {
                    format!(
                        "{} is not a JSON object (expected a BucketPlan.to_dict() report)",
                        capitalize(&report.describe())
                    )
                }
            }
            Finding::Disagree {
                report,
                reference,
                field,
                values,
                layouts,
            } => {
                let key = format!(
                    "{}[{}]",
                    field.as_str(),
                    clip(&pyjson::dumps(&PyValue::Str(self.group.clone())), 120)
                );
                // A digest is told apart by its first characters, as git shows commits.
                let value = |v: &Option<PyValue>| match (field, v) {
                    (Field::GroupDigests, Some(PyValue::Str(d))) if d.chars().count() > 16 => {
                        format!("{}...", d.chars().take(12).collect::<String>())
                    }
                    _ => show_opt(v),
                };
                let has = |v: &Option<PyValue>| match v {
                    Some(_) => format!("has {key} = {}", value(v)),
                    None => format!("has no {key}"),
                };
                let mut text = format!(
                    "Bucket plans disagree for group {group}: {} {}, but {}, the first listed, {}",
                    report.describe(),
                    has(&values.1),
                    reference.describe(),
                    has(&values.0),
                );
                match layouts {
                    Some(LayoutComparison::Differ(d)) => {
                        text.push_str("; ");
                        text.push_str(&describe_difference(d, reference, report));
                    }
                    Some(LayoutComparison::Agree) => text.push_str(
                        "; every bucket of the group agrees member for member, so they differ in the group's wire records (every tagged collective of the group, skipped ones included: kind, parameter, state index, spec and reduce op), which a report holds only inside the digest",
                    ),
                    None => {}
                }
                text
            }
        }
    }

    /// `commlens validate --json` on failure: the reference's verdict (`ok`, `error`,
    /// `message`) and what `explain` says, as data.
    pub fn to_json_value(&self) -> serde_json::Value {
        use serde_json::{json, Value};
        let finding: &str;
        let mut subject: Option<&ReportRef> = None;
        let mut reference = Value::Null;
        let mut field = Value::Null;
        let mut ranks = Value::Null;
        let mut values = Value::Null;
        let mut layouts = Value::Null;
        let mut first_difference = Value::Null;
        let pair = |v: &(Option<PyValue>, Option<PyValue>)| json!({"reference": opt_json(&v.0), "report": opt_json(&v.1)});
        match self.finding.as_ref() {
            Finding::NoReports => finding = "no_reports",
            Finding::UnknownGroup {
                reference: r,
                groups,
                group_ranks_is_object,
            } => {
                finding = "unknown_group";
                subject = Some(r);
                field = json!(Field::GroupRanks.as_str());
                values = json!({"groups": groups, "group_ranks_is_object": group_ranks_is_object});
            }
            Finding::RankSet {
                reference: r,
                expected,
                missing,
                unexpected,
            } => {
                finding = "rank_set";
                subject = Some(r);
                field = json!(Field::GroupRanks.as_str());
                ranks = json!({
                    "expected": plain_json(expected),
                    "missing": missing.iter().map(plain_json).collect::<Vec<_>>(),
                    "unexpected": unexpected.iter().map(plain_json).collect::<Vec<_>>(),
                });
            }
            Finding::MissingField {
                report,
                field: f,
                is_object,
            } => {
                finding = if *is_object {
                    "missing_field"
                } else {
                    "not_an_object"
                };
                subject = Some(report);
                field = json!(f.as_str());
            }
            Finding::Disagree {
                report,
                reference: r,
                field: f,
                values: v,
                layouts: l,
            } => {
                finding = "disagree";
                subject = Some(report);
                reference = r.json();
                field = json!(f.as_str());
                values = pair(v);
                match l {
                    Some(LayoutComparison::Agree) => layouts = json!("agree"),
                    Some(LayoutComparison::Differ(d)) => {
                        layouts = json!("differ");
                        first_difference = json!({
                            "bucket": d.bucket,
                            "bucket_ids": {"reference": d.bucket_ids.0, "report": d.bucket_ids.1},
                            "member": d.member,
                            "field": d.field,
                            "values": pair(&d.values),
                            "sizes": {"reference": d.sizes.0, "report": d.sizes.1},
                        });
                    }
                    None => {}
                }
            }
        }
        let mut out = serde_json::Map::new();
        out.insert("ok".into(), json!(false));
        out.insert("error".into(), json!("ValueError"));
        out.insert("message".into(), json!(self.message));
        out.insert("explanation".into(), json!(self.explain()));
        out.insert("group".into(), json!(self.group));
        out.insert("finding".into(), json!(finding));
        out.insert(
            "rank".into(),
            subject.map_or(Value::Null, |s| plain_json(&s.rank)),
        );
        out.insert(
            "file".into(),
            subject
                .and_then(|s| s.file.clone())
                .map_or(Value::Null, Value::from),
        );
        out.insert("field".into(), field);
        out.insert("reference".into(), reference);
        out.insert("ranks".into(), ranks);
        out.insert("values".into(), values);
        out.insert("layouts".into(), layouts);
        out.insert("first_difference".into(), first_difference);
        Value::Object(out)
    }

    /// [`ValidationError::to_json_value`], pretty-printed with a final newline.
    pub fn to_json(&self) -> String {
        pretty(&self.to_json_value())
    }
}

/// `commlens validate --json` when the reports agree.
pub fn agreement_json(group: &str, entries: &[ReportRef]) -> String {
    let ranks: Vec<serde_json::Value> = compared_order(entries)
        .into_iter()
        .map(|i| plain_json(&entries[i].rank))
        .collect();
    pretty(&serde_json::json!({"ok": true, "group": group, "ranks": ranks}))
}

/// The plain-text verdict when the reports agree.
pub fn agreement_text(group: &str, entries: &[ReportRef]) -> String {
    crate::text::into_terminal_safe(agreement_text_unescaped(group, entries))
}

fn agreement_text_unescaped(group: &str, entries: &[ReportRef]) -> String {
    format!(
        "ok: {} agree for group {}\n",
        plural(compared_order(entries).len(), "rank report", "rank reports"),
        clip(group, 120)
    )
}

fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn describe_difference(d: &LayoutDifference, reference: &ReportRef, report: &ReportRef) -> String {
    let rank = |r: &ReportRef| format!("rank {}", show(&r.rank));
    let ids = match &d.bucket_ids {
        (Some(a), Some(b)) if a == b => format!(" ({})", clip(a, 80)),
        (a, b) => {
            let mut parts = Vec::new();
            if let Some(a) = a {
                parts.push(format!("{} in {}", clip(a, 80), rank(reference)));
            }
            if let Some(b) = b {
                parts.push(format!("{} in {}", clip(b, 80), rank(report)));
            }
            if parts.is_empty() {
                String::new()
            } else {
                format!(" ({})", parts.join(", "))
            }
        }
    };
    let sizes = |what: &str, many: &str| {
        format!(
            "{} has {}, {} {}",
            rank(report),
            plural(d.sizes.1, what, many),
            rank(reference),
            d.sizes.0
        )
    };
    match (d.field.as_str(), d.member) {
        ("buckets", _) => format!(
            "the group's first {} agree, then {} ({})",
            plural(d.bucket, "bucket", "buckets"),
            match (&d.bucket_ids.0, &d.bucket_ids.1) {
                (Some(id), _) => format!(
                    "{} of {} is missing in {}",
                    clip(id, 80),
                    rank(reference),
                    rank(report)
                ),
                (_, Some(id)) => format!(
                    "{} of {} is missing in {}",
                    clip(id, 80),
                    rank(report),
                    rank(reference)
                ),
                _ => "one report has more".to_string(),
            },
            sizes("bucket for the group", "buckets for the group")
        ),
        ("members", Some(m)) => {
            let (present, absent, member) = match &d.values {
                (Some(member), _) => (reference, report, member),
                (_, Some(member)) => (report, reference, member),
                _ => (reference, report, &PyValue::None),
            };
            format!(
                "first difference in bucket {} of the group{ids}: member {m}, {}, is in {}'s bucket but not in {}'s ({})",
                d.bucket,
                describe_member(member),
                rank(present),
                rank(absent),
                sizes("member", "members")
            )
        }
        ("member", Some(m)) => format!(
            "first difference in bucket {} of the group{ids}: member {m} is {} in {}, {} in {}",
            d.bucket,
            d.values
                .1
                .as_ref()
                .map_or_else(|| "nothing".into(), describe_member),
            rank(report),
            d.values
                .0
                .as_ref()
                .map_or_else(|| "nothing".into(), describe_member),
            rank(reference)
        ),
        (field, member) => format!(
            "first difference in bucket {} of the group{ids}, member {}: {} is {} in {}, {} in {}",
            d.bucket,
            member.map_or_else(|| "?".to_string(), |m| m.to_string()),
            clip(field, 80),
            show_opt(&d.values.1),
            rank(report),
            show_opt(&d.values.0),
            rank(reference)
        ),
    }
}

/// `fsdp_all_gather "l1.bias" #1`: a bucket member by the fields that identify it.
fn describe_member(member: &PyValue) -> String {
    let field = |key: &str| member.as_dict().and_then(|d| d.get(key));
    match (field("kind"), field("param_name"), field("state_idx")) {
        (Some(PyValue::Str(kind)), Some(name), Some(idx)) => {
            format!("{} {} #{}", clip(kind, 60), show(name), show(idx))
        }
        _ => show(member),
    }
}

fn opt_json(value: &Option<PyValue>) -> serde_json::Value {
    value.as_ref().map_or(serde_json::Value::Null, plain_json)
}

/// A value read from plain JSON, back as JSON.
fn plain_json(value: &PyValue) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        PyValue::None => J::Null,
        PyValue::Bool(b) => J::Bool(*b),
        PyValue::Int(i) => match i64::try_from(i.get()) {
            Ok(i) => J::from(i),
            Err(_) => match u64::try_from(i.get()) {
                Ok(u) => J::from(u),
                Err(_) => J::from(i.get() as f64),
            },
        },
        PyValue::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
        PyValue::Str(s) => J::String(s.clone()),
        PyValue::List(items) => J::Array(items.iter().map(plain_json).collect()),
        PyValue::Dict(map) => J::Object(
            map.iter()
                .map(|(k, v)| (k.to_string(), plain_json(v)))
                .collect(),
        ),
        other => J::String(other.py_str()),
    }
}
