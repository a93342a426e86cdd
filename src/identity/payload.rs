//! Reading and validating the identity payload and the FSDP pass's `comm_type` tags.

use super::{Phase, Role, Source};
use crate::value::PyValue;

/// The payload's key inside `meta["custom"]`.
pub const PAYLOAD_KEY: &str = "distributed.comm_semantics";
/// The fallback top-level metadata key.
pub const FALLBACK_KEY: &str = "comm_semantics";
/// The producer name given to roles read from `comm_type` tags.
pub const COMM_TYPE_PRODUCER: &str = "hyper_parallel.fsdp_pass";

/// A valid payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Payload {
    pub role: Role,
    pub source: Source,
    pub producer: String,
}

/// A payload problem: the field rule it breaks and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PayloadError {
    /// `payload.shape`, `payload.version`, `payload.role`, `payload.source`, `payload.producer`.
    pub rule: &'static str,
    pub message: String,
}

/// Validates a payload value (everything but transport compatibility). All problems are
/// reported, joined; the first one's rule names the error.
pub fn read_payload(value: &PyValue) -> Result<Payload, PayloadError> {
    let Some(map) = value.as_dict() else {
        return Err(PayloadError {
            rule: "payload.shape",
            message: format!("the payload is not a dict but {}", describe(value)),
        });
    };
    let mut problems: Vec<(&'static str, String)> = Vec::new();
    match map.get("version") {
        Some(PyValue::Int(i)) if i.get() == 1 => {}
        Some(other) => problems.push((
            "payload.version",
            format!("version is {}, expected 1", describe(other)),
        )),
        None => problems.push(("payload.version", "version is missing".into())),
    }
    let role = match map.get("role") {
        Some(PyValue::Str(text)) => match Role::parse(text) {
            Some(role) => Some(role),
            None => {
                problems.push((
                    "payload.role",
                    format!(
                        "role {text:?} is not a known role (fsdp.param_unshard, \
                         fsdp.grad_reduce_shard, fsdp.grad_replicate_reduce, tp.*, cp.*, \
                         ep.*, pp.*, dtensor.*, user)"
                    ),
                ));
                None
            }
        },
        Some(other) => {
            problems.push((
                "payload.role",
                format!("role is {}, expected a string", describe(other)),
            ));
            None
        }
        None => {
            problems.push(("payload.role", "role is missing".into()));
            None
        }
    };
    let source = match map.get("source").and_then(PyValue::as_str) {
        Some("explicit") => Some(Source::Explicit),
        Some("inferred") => Some(Source::Inferred),
        _ => {
            let found = map
                .get("source")
                .map(describe)
                .unwrap_or_else(|| "missing".into());
            problems.push((
                "payload.source",
                format!("source is {found}, expected \"explicit\" or \"inferred\""),
            ));
            None
        }
    };
    let producer = match map.get("producer") {
        Some(PyValue::Str(text)) if !text.trim().is_empty() => Some(text.clone()),
        other => {
            let found = other.map(describe).unwrap_or_else(|| "missing".into());
            problems.push((
                "payload.producer",
                format!("producer is {found}, expected a non-empty string"),
            ));
            None
        }
    };
    match (role, source, producer) {
        (Some(role), Some(source), Some(producer)) if problems.is_empty() => Ok(Payload {
            role,
            source,
            producer,
        }),
        _ => Err(PayloadError {
            rule: problems.first().map(|p| p.0).unwrap_or("payload.shape"),
            message: problems
                .into_iter()
                .map(|p| p.1)
                .collect::<Vec<_>>()
                .join("; "),
        }),
    }
}

/// A short Python-like rendering of a value for messages.
pub fn describe(value: &PyValue) -> String {
    let text = match value {
        PyValue::Str(s) => format!("{s:?}"),
        other => other.py_repr(),
    };
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}...")
    } else {
        text
    }
}

/// Where a payload was found on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    Custom,
    Fallback,
}

impl Location {
    pub fn path(self) -> &'static str {
        match self {
            Location::Custom => "meta[\"custom\"][\"distributed.comm_semantics\"]",
            Location::Fallback => "meta[\"comm_semantics\"]",
        }
    }
}

/// What a `comm_type` tag of the FSDP pass means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommType {
    /// A collective with this role and phase.
    Collective(Role, Phase),
    /// A storage release (`fsdp_reshard_free*`): a memory event, not a collective.
    Free(Phase),
}

/// The spec's `comm_type` table.
pub fn comm_type(tag: &str) -> Option<CommType> {
    Some(match tag {
        "fsdp_all_gather" => CommType::Collective(Role::ParamUnshard, Phase::Forward),
        "fsdp_all_gather_backward" => CommType::Collective(Role::ParamUnshard, Phase::Backward),
        "fsdp_reduce_scatter" => CommType::Collective(Role::GradReduceShard, Phase::Backward),
        "dp_all_reduce" => CommType::Collective(Role::GradReplicateReduce, Phase::Backward),
        "fsdp_reshard_free" => CommType::Free(Phase::Forward),
        "fsdp_reshard_free_backward" => CommType::Free(Phase::Backward),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;

    fn dict(items: &[(&str, PyValue)]) -> PyValue {
        PyValue::Dict(
            items
                .iter()
                .map(|(k, v)| (crate::value::Key::from(*k), v.clone()))
                .collect::<IndexMap<_, _>>()
                .into(),
        )
    }

    #[test]
    fn valid_and_invalid_payloads() {
        let ok = dict(&[
            ("version", PyValue::int(1)),
            ("role", PyValue::Str("fsdp.param_unshard".into())),
            ("source", PyValue::Str("explicit".into())),
            ("producer", PyValue::Str("fsdp".into())),
        ]);
        assert_eq!(read_payload(&ok).unwrap().role, Role::ParamUnshard);
        let bool_version = dict(&[
            ("version", PyValue::Bool(true)),
            ("role", PyValue::Str("tp.colwise".into())),
            ("source", PyValue::Str("explicit".into())),
            ("producer", PyValue::Str("tp".into())),
        ]);
        assert_eq!(
            read_payload(&bool_version).unwrap_err().rule,
            "payload.version"
        );
        assert_eq!(
            read_payload(&PyValue::Str("x".into())).unwrap_err().rule,
            "payload.shape"
        );
        assert!(Role::parse("tp.").is_none());
        assert!(Role::parse("fsdp.other").is_none());
        assert!(Role::parse("dtensor.redistribute").is_some());
    }
}
