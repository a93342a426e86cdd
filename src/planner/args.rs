//! Planner arguments and their validation, with the reference's `ValueError` messages in the
//! reference's order: the policy, then `build_module_bucket_plans` (when block types are
//! given), then `normalize_module_bucket_plans`, then the group ranks.

use crate::dotted::{DottedPaths, PathId};
use crate::dump::ModuleEntry;
use crate::value::{py_is_space, py_repr_str, PyValue};
use indexmap::IndexMap;
use serde_json::Value as J;
use std::collections::HashSet;
use std::fmt;

/// Normalised module groups: disjoint FQN prefixes in caller order.
pub type ModulePlans = Vec<Vec<String>>;

/// The arguments of `plan_fsdp_buckets` as written (JSON values with Python meaning), before
/// validation. Built from `args.json`, falling back to the dump's `planner` object, then to the
/// reference's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannerArgs {
    /// `group_ranks`: process-group name → ordered global ranks.
    pub group_ranks: PyValue,
    /// `module_bucket_plans`: `None` (immediate parents), `[]`, or FQNs / lists of FQNs.
    pub module_bucket_plans: PyValue,
    /// `block_module_types` by class name, or `None`.
    pub block_module_types: PyValue,
    /// `BucketPolicy(**policy)`, or `None`.
    pub policy: PyValue,
    pub pp_degree: PyValue,
    pub dp_mode: PyValue,
}

impl Default for PlannerArgs {
    fn default() -> Self {
        PlannerArgs {
            group_ranks: PyValue::Dict(std::sync::Arc::new(IndexMap::new())),
            module_bucket_plans: PyValue::None,
            block_module_types: PyValue::None,
            policy: PyValue::None,
            pp_degree: PyValue::int(1),
            dp_mode: PyValue::Str("fsdp".into()),
        }
    }
}

/// The keys of `args.json` (and of a dump's `planner` object).
pub const ARG_KEYS: &[&str] = &[
    "group_ranks",
    "module_bucket_plans",
    "block_module_types",
    "policy",
    "pp_degree",
    "dp_mode",
];

impl PlannerArgs {
    /// Arguments for a dump: each key from `args` when present, else from the dump's
    /// `planner` object, else (for `group_ranks`) the dump's `group_ranks`, else the default.
    pub fn resolve(
        args: Option<&serde_json::Map<String, J>>,
        dump_planner: Option<&J>,
        dump_group_ranks: Option<&PyValue>,
    ) -> PlannerArgs {
        let planner = dump_planner.and_then(J::as_object);
        let pick = |key: &str| -> Option<PyValue> {
            args.and_then(|a| a.get(key))
                .or_else(|| planner.and_then(|p| p.get(key)))
                .map(PyValue::from_plain_json)
        };
        let defaults = PlannerArgs::default();
        PlannerArgs {
            group_ranks: pick("group_ranks")
                .or_else(|| dump_group_ranks.cloned())
                .unwrap_or(defaults.group_ranks),
            module_bucket_plans: pick("module_bucket_plans")
                .unwrap_or(defaults.module_bucket_plans),
            block_module_types: pick("block_module_types").unwrap_or(defaults.block_module_types),
            policy: pick("policy").unwrap_or(defaults.policy),
            pp_degree: pick("pp_degree").unwrap_or(defaults.pp_degree),
            dp_mode: pick("dp_mode").unwrap_or(defaults.dp_mode),
        }
    }

    /// Plain JSON of these arguments (the `args.json` format), for links and reports.
    pub fn to_json(&self) -> PyValue {
        let mut map = IndexMap::new();
        map.insert("group_ranks".into(), self.group_ranks.clone());
        map.insert(
            "module_bucket_plans".into(),
            self.module_bucket_plans.clone(),
        );
        map.insert("block_module_types".into(), self.block_module_types.clone());
        map.insert("policy".into(), self.policy.clone());
        map.insert("pp_degree".into(), self.pp_degree.clone());
        map.insert("dp_mode".into(), self.dp_mode.clone());
        PyValue::Dict(std::sync::Arc::new(map))
    }
}

/// An argument error, as the reference raises it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgError {
    /// The Python exception class: `ValueError` (or `TypeError` where Python itself would
    /// fail before the reference's checks).
    pub kind: &'static str,
    pub message: String,
}

impl ArgError {
    fn value(message: impl Into<String>) -> ArgError {
        ArgError {
            kind: "ValueError",
            message: message.into(),
        }
    }

    fn type_error(message: impl Into<String>) -> ArgError {
        ArgError {
            kind: "TypeError",
            message: message.into(),
        }
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ArgError {}

/// `BucketPolicy`: optional physical limits inside a module group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BucketPolicy {
    pub cap_bytes: Option<u128>,
    pub max_input_distance: Option<u128>,
    pub max_consumer_distance: Option<u128>,
}

const POLICY_FIELDS: [&str; 3] = ["cap_bytes", "max_input_distance", "max_consumer_distance"];

impl BucketPolicy {
    /// `BucketPolicy(**policy)` with `__post_init__`'s checks; `None` is the default policy.
    pub fn from_value(policy: &PyValue) -> Result<BucketPolicy, ArgError> {
        let map = match policy {
            PyValue::None => return Ok(BucketPolicy::default()),
            PyValue::Dict(map) => map,
            other => {
                return Err(ArgError::type_error(format!(
                    "BucketPolicy() argument after ** must be a mapping, not {}",
                    python_type_name(other)
                )))
            }
        };
        if let Some(key) = map.keys().find(|k| !POLICY_FIELDS.contains(&k.as_str())) {
            return Err(ArgError::type_error(format!(
                "BucketPolicy.__init__() got an unexpected keyword argument {}",
                py_repr_str(key)
            )));
        }
        let mut values = [None; 3];
        for (slot, name) in POLICY_FIELDS.iter().enumerate() {
            let value = map.get(*name).unwrap_or(&PyValue::None);
            if matches!(value, PyValue::None) {
                continue;
            }
            let minimum = if *name == "cap_bytes" { 1 } else { 0 };
            match value.static_int() {
                Some(v) if v >= minimum => values[slot] = Some(v as u128),
                _ => {
                    return Err(ArgError::value(format!(
                        "{name} must be None or a non-negative integer (cap_bytes must be positive)"
                    )))
                }
            }
        }
        Ok(BucketPolicy {
            cap_bytes: values[0],
            max_input_distance: values[1],
            max_consumer_distance: values[2],
        })
    }

    /// The policy as `args.json` writes it.
    pub fn to_value(&self) -> PyValue {
        let field = |v: Option<u128>| v.map_or(PyValue::None, |v| PyValue::int(v as i128));
        let mut map = IndexMap::new();
        map.insert("cap_bytes".into(), field(self.cap_bytes));
        map.insert("max_input_distance".into(), field(self.max_input_distance));
        map.insert(
            "max_consumer_distance".into(),
            field(self.max_consumer_distance),
        );
        PyValue::Dict(std::sync::Arc::new(map))
    }
}

/// Python's `type(value).__name__` for messages.
fn python_type_name(value: &PyValue) -> &'static str {
    match value {
        PyValue::None => "NoneType",
        PyValue::Bool(_) => "bool",
        PyValue::Int(_) => "int",
        PyValue::Float(_) => "float",
        PyValue::Str(_) => "str",
        PyValue::List(_) => "list",
        PyValue::Dict(_) => "dict",
        _ => "object",
    }
}

/// `normalize_module_bucket_plans`: freeze groups, reject ambiguous or wildcard ownership.
pub fn normalize_module_bucket_plans(plans: &PyValue) -> Result<ModulePlans, ArgError> {
    let PyValue::List(entries) = plans else {
        return Err(ArgError::value(
            "module_bucket_plans must be a list or tuple of module groups",
        ));
    };
    let mut groups = Vec::with_capacity(entries.len());
    // Overlap checks on the FQNs' paths (`dotted`: each dot-boundary prefix found from the
    // one before, not hashed whole): the paths taken, and the paths above them.
    let mut paths = DottedPaths::default();
    let (mut taken, mut ancestor): (Vec<bool>, Vec<bool>) = Default::default();
    let mut path: Vec<PathId> = Vec::new();
    for entry in entries {
        let single;
        let group: &[PyValue] = match entry {
            PyValue::Str(_) => {
                single = [entry.clone()];
                &single
            }
            PyValue::List(items) if !items.is_empty() => items,
            _ => {
                return Err(ArgError::value(
                    "Each module bucket group must be a FQN or a nonempty list/tuple",
                ))
            }
        };
        let mut names = Vec::with_capacity(group.len());
        for fqn in group {
            let valid = match fqn {
                PyValue::Str(s) => {
                    !s.is_empty()
                        && !s.contains(['*', '?', '[', ']'])
                        && s.split('.')
                            .all(|part| !part.is_empty() && part.trim_matches(py_is_space) == part)
                }
                _ => false,
            };
            if !valid {
                return Err(ArgError::value(format!(
                    "Invalid explicit module FQN: {}",
                    fqn.py_repr()
                )));
            }
            let name = fqn.as_str().unwrap_or_default();
            path.clear();
            let own = paths.insert_each(name, |id| path.push(id)) as usize;
            taken.resize(paths.len(), false);
            ancestor.resize(paths.len(), false);
            let above = &path[..path.len() - 1];
            // Taken before, above one taken before, or below one taken before.
            let overlaps = taken[own] || ancestor[own] || above.iter().any(|&p| taken[p as usize]);
            if overlaps {
                return Err(ArgError::value(format!(
                    "Overlapping module bucket scopes: {}",
                    py_repr_str(name)
                )));
            }
            taken[own] = true;
            for &p in above {
                ancestor[p as usize] = true;
            }
            names.push(name.to_string());
        }
        groups.push(names);
    }
    Ok(groups)
}

/// `match_module_bucket`: the first group with an FQN that is a dot-boundary prefix of the
/// parameter name, or `None` when unselected. (The planner answers the same question by
/// walking a parameter's module paths, tested against this.)
pub fn match_module_bucket<'a>(param_name: &str, plans: &'a ModulePlans) -> Option<&'a [String]> {
    plans
        .iter()
        .find(|group| {
            group.iter().any(|fqn| {
                param_name
                    .strip_prefix(fqn.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
            })
        })
        .map(Vec::as_slice)
}

/// Whether a module's recorded type is the named block type: equal to the name or ending with
/// `"." + name` (no subclassing is known from a dump).
pub fn type_matches(type_name: &str, block_type: &str) -> bool {
    type_name == block_type
        || type_name
            .strip_suffix(block_type)
            .is_some_and(|head| head.ends_with('.'))
}

/// `build_module_bucket_plans(model, block_module_types=..., module_bucket_plans=plans or [])`
/// over the dump's `modules`.
pub fn build_module_bucket_plans(
    modules: &[ModuleEntry],
    block_module_types: &PyValue,
    module_bucket_plans: &PyValue,
) -> Result<ModulePlans, ArgError> {
    let types: Vec<&str> = match block_module_types {
        PyValue::List(items) => items
            .iter()
            .map(|item| item.as_str())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                ArgError::value("block_module_types must be a tuple of torch.nn.Module subclasses")
            })?,
        _ => {
            return Err(ArgError::value(
                "block_module_types must be a tuple of torch.nn.Module subclasses",
            ))
        }
    };
    let empty = PyValue::List(Vec::new());
    let plans = if module_bucket_plans.truthy() {
        module_bucket_plans
    } else {
        &empty
    };
    let explicit = normalize_module_bucket_plans(plans)?;
    let module_fqns: HashSet<&str> = modules.iter().map(|m| m.fqn.as_str()).collect();
    for group in &explicit {
        for fqn in group {
            if !module_fqns.contains(fqn.as_str()) {
                return Err(ArgError::value(format!(
                    "Module bucket scope does not exist in model: {}",
                    py_repr_str(fqn)
                )));
            }
        }
    }
    let mut blocks: Vec<&str> = Vec::new();
    // Blocks by their paths (`dotted`): whether one stands above a module is asked of each
    // of its dot-boundary prefixes, each found from the one before.
    let mut paths = DottedPaths::default();
    let mut is_block_path: Vec<bool> = Vec::new();
    let mut path: Vec<PathId> = Vec::new();
    let mut seen = HashSet::new();
    for module in modules {
        // `dict(model.named_modules())`: the first entry of a repeated FQN keeps its place.
        if !seen.insert(module.fqn.as_str()) {
            continue;
        }
        let is_block =
            !module.fqn.is_empty() && types.iter().any(|t| type_matches(&module.type_name, t));
        path.clear();
        let own = paths.insert_each(&module.fqn, |id| path.push(id)) as usize;
        is_block_path.resize(paths.len(), false);
        let nested = path[..path.len() - 1]
            .iter()
            .any(|&p| is_block_path[p as usize]);
        if is_block && !nested {
            blocks.push(&module.fqn);
            is_block_path[own] = true;
        }
    }
    let mut combined: Vec<PyValue> = blocks.iter().map(|b| PyValue::Str(b.to_string())).collect();
    combined.extend(
        explicit
            .iter()
            .map(|group| PyValue::List(group.iter().cloned().map(PyValue::Str).collect())),
    );
    normalize_module_bucket_plans(&PyValue::List(combined))
}

/// `_validate_group_ranks` over `{group: tuple(ranks)}`.
pub fn validate_group_ranks(
    group_ranks: &PyValue,
) -> Result<IndexMap<String, Vec<i128>>, ArgError> {
    let message = "group_ranks must map PG names to distinct ordered non-negative global ranks";
    let PyValue::Dict(map) = group_ranks else {
        return Err(ArgError::value(message));
    };
    let mut groups = IndexMap::with_capacity(map.len());
    for (group, ranks) in map.iter() {
        // `tuple(ranks)`: a string iterates its characters, a dict its keys.
        let items: Vec<PyValue> = match ranks {
            PyValue::List(items) => items.clone(),
            PyValue::Str(s) => s.chars().map(|c| PyValue::Str(c.to_string())).collect(),
            PyValue::Dict(m) => m.keys().map(|k| PyValue::Str(k.to_string())).collect(),
            other => {
                return Err(ArgError::type_error(format!(
                    "'{}' object is not iterable",
                    python_type_name(other)
                )))
            }
        };
        let mut out = Vec::with_capacity(items.len());
        // Distinctness by a set: linear in the number of ranks (a million-rank list is
        // checked in milliseconds, not minutes).
        let mut seen = HashSet::with_capacity(items.len());
        for item in &items {
            match item.static_int() {
                Some(rank) if rank >= 0 && seen.insert(rank) => out.push(rank),
                _ => return Err(ArgError::value(message)),
            }
        }
        if out.is_empty() {
            return Err(ArgError::value(message));
        }
        groups.insert(group.to_string(), out);
    }
    Ok(groups)
}

/// Validated arguments, ready for planning.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidatedArgs {
    pub groups: IndexMap<String, Vec<i128>>,
    /// `None`: each parameter's immediate parent module.
    pub module_plans: Option<ModulePlans>,
    pub policy: BucketPolicy,
    /// Whether `pp_degree == 1 and dp_mode == "fsdp"` (else every tagged collective is
    /// skipped with `unsupported_parallel_mode`).
    pub supported_mode: bool,
}

/// Validates in the reference's order (`conformance-contract.md`).
pub fn validate(args: &PlannerArgs, modules: &[ModuleEntry]) -> Result<ValidatedArgs, ArgError> {
    let policy = BucketPolicy::from_value(&args.policy)?;
    let module_plans = if !matches!(args.block_module_types, PyValue::None) {
        Some(build_module_bucket_plans(
            modules,
            &args.block_module_types,
            &args.module_bucket_plans,
        )?)
    } else {
        match &args.module_bucket_plans {
            PyValue::None => None,
            plans => Some(normalize_module_bucket_plans(plans)?),
        }
    };
    let groups = validate_group_ranks(&args.group_ranks)?;
    let supported_mode =
        args.pp_degree.py_eq(&PyValue::int(1)) && args.dp_mode.py_eq(&PyValue::Str("fsdp".into()));
    Ok(ValidatedArgs {
        groups,
        module_plans,
        policy,
        supported_mode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plans(value: serde_json::Value) -> Result<ModulePlans, ArgError> {
        normalize_module_bucket_plans(&PyValue::from_plain_json(&value))
    }

    #[test]
    fn normalize_rejects_like_the_reference() {
        assert_eq!(
            plans(json!("l1")).unwrap_err().message,
            "module_bucket_plans must be a list or tuple of module groups"
        );
        assert_eq!(
            plans(json!([[]])).unwrap_err().message,
            "Each module bucket group must be a FQN or a nonempty list/tuple"
        );
        assert_eq!(
            plans(json!([["l1", ["b"]]])).unwrap_err().message,
            "Invalid explicit module FQN: ['b']"
        );
        assert_eq!(
            plans(json!(["a.b", "a"])).unwrap_err().message,
            "Overlapping module bucket scopes: 'a'"
        );
        assert_eq!(
            plans(json!(["a\u{1f}"])).unwrap_err().message,
            "Invalid explicit module FQN: 'a\\x1f'"
        );
        assert_eq!(
            plans(json!(["ab", "a"])).unwrap(),
            vec![vec!["ab".to_string()], vec!["a".to_string()]]
        );
    }

    #[test]
    fn block_types_match_short_or_qualified_names() {
        assert!(type_matches(
            "torchtitan.models.llama.TransformerBlock",
            "TransformerBlock"
        ));
        assert!(type_matches("TransformerBlock", "TransformerBlock"));
        assert!(!type_matches("MyTransformerBlock", "TransformerBlock"));
    }

    #[test]
    fn policy_checks_in_field_order() {
        let p = |v: serde_json::Value| BucketPolicy::from_value(&PyValue::from_plain_json(&v));
        assert_eq!(
            p(json!({"max_input_distance": -1, "cap_bytes": 0}))
                .unwrap_err()
                .message,
            "cap_bytes must be None or a non-negative integer (cap_bytes must be positive)"
        );
        assert_eq!(p(json!({"bogus": 1})).unwrap_err().kind, "TypeError");
        assert_eq!(p(json!({"cap_bytes": 5})).unwrap().cap_bytes, Some(5));
    }
}
