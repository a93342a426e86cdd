//! Planning graphs that carry no FSDP tags (`--tags roles`): the tags the FSDP pass would
//! have written, derived from semantic identity, so the unchanged reference planner can run
//! on a stock PyTorch graph (a `make_fx` joint graph, an Inductor post-grad graph of a
//! SimpleFSDP or DTensor model).
//!
//! For each collective with an FSDP role (explicit or inferred) that the dump has not tagged:
//!
//! - `comm_type` from role and phase: `fsdp.param_unshard` → `fsdp_all_gather` (forward) or
//!   `fsdp_all_gather_backward`, `fsdp.grad_reduce_shard` → `fsdp_reduce_scatter`,
//!   `fsdp.grad_replicate_reduce` → `dp_all_reduce` (which the planner does not bucket);
//! - `comm_group` from the call's group argument;
//! - `param_name`, the parameter's fully qualified name, from the first source that has it:
//!   the node's own `param_name`, AOTAutograd's input/output descriptors
//!   (`ParamAOTInput(target=...)`, `GradAOTOutput(grad_of=...)`), the dump's `state_fqns`,
//!   the `nn_module_stack` (`fwd_nn_module_stack` for backward nodes) of the collective (a
//!   SimpleFSDP parametrization's module path names the parameter), else the bare name of
//!   the placeholder (all-gathers) or of the gradient's input descriptor or node
//!   (reduce-scatters) — with a bare name every parameter is its own scope;
//! - `state_idx`: parameters numbered in order of first appearance, so a parameter's gather
//!   and its gradient's reduce-scatter share it;
//! - `fsdp_bucket_spec` from the recorded input and output tensors;
//! - `autograd_backward` from the phase; a joint graph traced without autograd metadata also
//!   gets it on every node after its gradient seed, as the planner's phase boundary needs.
//!
//! Process groups whose ranks the dump does not record are assumed to be ranks `0..size`
//! (the size from the call), and the plan says so.

use crate::dump::{Dump, Node, Op};
use crate::graph::{Graph, NodeId};
use crate::identity::{phase_rules, Classification, CollectiveIdentity, Phase, Role, Source};
use crate::value::{Key, PyValue};
use std::collections::HashMap;

/// Where the planner's FSDP tags come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TagMode {
    /// The tags the dump carries (`meta["comm_type"]`, ...): the reference's behaviour.
    #[default]
    Dump,
    /// Tags derived from semantic roles for every FSDP collective the dump did not tag.
    Roles,
}

impl TagMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TagMode::Dump => "dump",
            TagMode::Roles => "roles",
        }
    }

    pub fn parse(text: &str) -> Option<TagMode> {
        match text {
            "dump" => Some(TagMode::Dump),
            "roles" => Some(TagMode::Roles),
            _ => None,
        }
    }
}

/// Where a derived `param_name` came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NameSource {
    /// The collective's own `meta["param_name"]`.
    Meta,
    /// AOTAutograd's descriptor of the parameter input (or of the gradient output).
    AotDescriptor,
    /// The dump's `state_fqns`, by placeholder position.
    StateFqns,
    /// The module path of the collective's `nn_module_stack` / `fwd_nn_module_stack`.
    ModuleStack,
    /// The bare name of the placeholder, input descriptor or node: no module path.
    Bare,
}

impl NameSource {
    pub fn as_str(self) -> &'static str {
        match self {
            NameSource::Meta => "param_name",
            NameSource::AotDescriptor => "aot_descriptor",
            NameSource::StateFqns => "state_fqns",
            NameSource::ModuleStack => "nn_module_stack",
            NameSource::Bare => "bare_name",
        }
    }
}

/// The tags derived for one collective.
#[derive(Clone, Debug, PartialEq)]
pub struct DerivedTag {
    pub node: NodeId,
    pub comm_type: &'static str,
    pub group: Option<String>,
    pub param_name: String,
    pub name_source: NameSource,
    pub state_idx: usize,
    pub role: Role,
    pub source: Source,
    pub phase: Phase,
}

/// What `--tags roles` did to a graph.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DerivedTags {
    /// One entry per collective given tags, in graph order.
    pub tags: Vec<DerivedTag>,
    /// Collectives with an FSDP role that the dump had already tagged (left as they are).
    pub already_tagged: usize,
    /// Process groups whose ranks were assumed (`0..size`), with the size.
    pub assumed_groups: Vec<(String, usize)>,
    /// Process groups the dump records no ranks for, past the ranks that are assumed at most
    /// (2^22 in all): left without ranks.
    pub unassumed_groups: usize,
    /// Nodes flagged `autograd_backward` because they follow the gradient seed.
    pub backward_flagged: usize,
}

impl DerivedTags {
    pub fn count(&self, source: Source) -> usize {
        self.tags.iter().filter(|t| t.source == source).count()
    }

    /// Tags whose parameter name is bare (no module path): each its own scope.
    pub fn bare_names(&self) -> usize {
        self.tags
            .iter()
            .filter(|t| t.name_source == NameSource::Bare)
            .count()
    }

    /// One paragraph in plain words: what the plan rests on.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "tags derived from semantic roles (--tags roles): {} collective(s) tagged from \
             their roles ({} explicit, {} inferred)",
            self.tags.len(),
            self.count(Source::Explicit),
            self.count(Source::Inferred)
        );
        if self.already_tagged > 0 {
            text.push_str(&format!(
                ", {} already tagged by the dump",
                self.already_tagged
            ));
        }
        text.push('.');
        let mut by_source: Vec<(&str, usize)> = Vec::new();
        for tag in &self.tags {
            let s = tag.name_source.as_str();
            match by_source.iter_mut().find(|(name, _)| *name == s) {
                Some((_, n)) => *n += 1,
                None => by_source.push((s, 1)),
            }
        }
        if !by_source.is_empty() {
            text.push_str(&format!(
                " Parameter names from: {}.",
                by_source
                    .iter()
                    .map(|(s, n)| format!("{s} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if self.bare_names() > 0 {
            text.push_str(&format!(
                " {} parameter name(s) are bare (no module path): each such parameter is its \
                 own scope, so it buckets alone unless module plans name it.",
                self.bare_names()
            ));
        }
        if !self.assumed_groups.is_empty() {
            text.push_str(&format!(
                " Ranks assumed for process groups the dump does not record: {}.",
                self.assumed_groups
                    .iter()
                    .map(|(g, n)| format!("{g} = 0..{}", n.saturating_sub(1)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if self.unassumed_groups > 0 {
            text.push_str(&format!(
                " {} more process group(s) the dump does not record were left without ranks \
                 (at most 2^22 ranks are assumed in all).",
                self.unassumed_groups
            ));
        }
        if self.backward_flagged > 0 {
            text.push_str(&format!(
                " No autograd metadata: {} node(s) after the gradient seed were marked backward.",
                self.backward_flagged
            ));
        }
        text
    }

    /// The derived tags as the plan report shows them (`derived_tags`), in graph order.
    pub fn to_value(&self, graph: &Graph) -> PyValue {
        let mut items = Vec::with_capacity(self.tags.len());
        for tag in &self.tags {
            let mut d = crate::value::Dict::default();
            d.insert(
                Key::new("node"),
                PyValue::Str(graph.node(tag.node).name.clone()),
            );
            d.insert(Key::new("comm_type"), PyValue::Str(tag.comm_type.into()));
            d.insert(
                Key::new("comm_group"),
                tag.group.clone().map_or(PyValue::None, PyValue::Str),
            );
            d.insert(Key::new("param_name"), PyValue::Str(tag.param_name.clone()));
            d.insert(
                Key::new("param_name_source"),
                PyValue::Str(tag.name_source.as_str().into()),
            );
            d.insert(Key::new("state_idx"), PyValue::int(tag.state_idx as i128));
            d.insert(Key::new("role"), PyValue::Str(tag.role.as_str().into()));
            d.insert(Key::new("source"), PyValue::Str(tag.source.as_str().into()));
            d.insert(Key::new("phase"), PyValue::Str(tag.phase.as_str().into()));
            items.push(PyValue::Dict(std::sync::Arc::new(d)));
        }
        PyValue::List(items)
    }
}

/// The FSDP pass's `comm_type` for a role in a phase.
pub fn comm_type_for(role: &Role, phase: Phase) -> Option<&'static str> {
    match (role, phase) {
        (Role::ParamUnshard, Phase::Forward) => Some("fsdp_all_gather"),
        (Role::ParamUnshard, Phase::Backward) => Some("fsdp_all_gather_backward"),
        (Role::GradReduceShard, _) => Some("fsdp_reduce_scatter"),
        (Role::GradReplicateReduce, _) => Some("dp_all_reduce"),
        (Role::Other(_), _) => None,
    }
}

/// The dump of `graph` with the FSDP pass's tags derived from `classification` (of the same
/// graph), and what was derived. The dump's signature is cleared: the planner hashes the
/// tagged graph, as the reference would on a graph the FSDP pass had tagged.
pub fn derive(graph: &Graph, classification: &Classification) -> (Dump, DerivedTags) {
    let mut dump = graph.dump.clone();
    dump.signature = None;
    let mut derived = DerivedTags::default();
    let names = NameFinder::new(graph);
    let mut state_index: HashMap<String, usize> = HashMap::new();
    let mut group_sizes: Vec<(String, usize)> = Vec::new();
    // The groups in `group_sizes`: a graph may hold as many groups as collectives.
    let mut sized: crate::hashing::FastSet<String> = Default::default();

    for c in &classification.collectives {
        let (Some(role), Some(source)) = (&c.role, c.source) else {
            continue;
        };
        let Some(comm_type) = comm_type_for(role, c.phase) else {
            continue;
        };
        let node = graph.node(c.node);
        if node.meta("comm_type").is_some() {
            derived.already_tagged += 1;
            continue;
        }
        let (param_name, name_source) = names.find(c);
        let next = state_index.len();
        let state_idx = *state_index.entry(param_name.clone()).or_insert(next);
        if let (Some(group), Some(size)) = (&c.group, group_size(node)) {
            if !sized.contains(&**group) {
                sized.insert(group.to_string());
                group_sizes.push((group.to_string(), size));
            }
        }
        let meta = &mut dump.nodes[c.node].meta;
        meta.insert(Key::new("comm_type"), PyValue::Str(comm_type.into()));
        if let Some(group) = &c.group {
            meta.insert(Key::new("comm_group"), PyValue::Str(group.to_string()));
        }
        meta.insert(Key::new("param_name"), PyValue::Str(param_name.clone()));
        meta.insert(Key::new("state_idx"), PyValue::int(state_idx as i128));
        meta.insert(
            Key::new("autograd_backward"),
            PyValue::Bool(c.phase == Phase::Backward),
        );
        if let Some(spec) = bucket_spec(graph, node) {
            meta.insert(Key::new("fsdp_bucket_spec"), spec);
        }
        derived.tags.push(DerivedTag {
            node: c.node,
            comm_type,
            group: c.group.as_deref().map(str::to_string),
            param_name,
            name_source,
            state_idx,
            role: role.clone(),
            source,
            phase: c.phase,
        });
    }

    // A joint graph traced without autograd metadata: the planner's phase boundary reads
    // `autograd_backward` on every node between bucket members.
    let seed = classification
        .collectives
        .iter()
        .find(|c| c.phase_evidence.rule == phase_rules::GRADIENT_SEED)
        .and_then(|c| c.phase_evidence.detail.anchor());
    if let (Some(seed), false) = (seed, derived.tags.is_empty()) {
        for node in dump.nodes.iter_mut().skip(seed + 1) {
            if matches!(node.op, Op::Placeholder | Op::GetAttr | Op::Output) {
                continue;
            }
            if node.meta("autograd_backward").is_none() {
                node.meta
                    .insert(Key::new("autograd_backward"), PyValue::Bool(true));
                derived.backward_flagged += 1;
            }
        }
    }

    // Groups the dump records no ranks for: assume `0..size`, for as many groups as keep the
    // ranks assumed within `ASSUMED_RANKS` (each group may say 2^20 ranks, and a graph may
    // hold a group per collective); the groups past it are left without ranks, as the dump
    // left them.
    const ASSUMED_RANKS: usize = 1 << 22;
    let known: crate::hashing::FastSet<String> = match &dump.group_ranks {
        Some(PyValue::Dict(d)) => d.keys().map(|k| k.as_str().to_string()).collect(),
        _ => Default::default(),
    };
    let mut assumed = 0usize;
    let (missing, past_budget): (Vec<_>, Vec<_>) = group_sizes
        .into_iter()
        .filter(|(g, size)| !known.contains(g) && *size >= 1)
        .partition(|(_, size)| {
            assumed = assumed.saturating_add(*size);
            assumed <= ASSUMED_RANKS
        });
    derived.unassumed_groups = past_budget.len();
    if !missing.is_empty() {
        let mut ranks = match dump.group_ranks.take() {
            Some(PyValue::Dict(d)) => std::sync::Arc::unwrap_or_clone(d),
            _ => crate::value::Dict::default(),
        };
        for (group, size) in &missing {
            ranks.insert(
                Key::new(group),
                PyValue::List((0..*size).map(|r| PyValue::int(r as i128)).collect()),
            );
        }
        dump.group_ranks = Some(PyValue::Dict(std::sync::Arc::new(ranks)));
        derived.assumed_groups = missing;
    }
    (dump, derived)
}

/// The group size a functional all-gather or reduce-scatter is called with.
fn group_size(node: &Node) -> Option<usize> {
    // `(input, group_size, group_name)` and `(input, reduce_op, group_size, group_name)`:
    // the size stands just before the group.
    let size = node
        .args
        .len()
        .checked_sub(2)
        .and_then(|i| node.args.get(i))?;
    match size.static_int() {
        Some(n) if (1..=1 << 20).contains(&n) => usize::try_from(n).ok(),
        _ => None,
    }
}

/// `fsdp_bucket_spec` from the recorded tensors: the collective's input (its first argument)
/// and its output.
fn bucket_spec(graph: &Graph, node: &Node) -> Option<PyValue> {
    let input = node.args.first().and_then(crate::dump::node_index)?;
    let (in_shape, _, _) = tensor_of(graph.node(input))?;
    let (out_shape, dtype, device) = tensor_of(node)?;
    let mut d = crate::value::Dict::default();
    d.insert(Key::new("input_shape"), in_shape);
    d.insert(Key::new("output_shape"), out_shape);
    d.insert(Key::new("dtype"), dtype);
    d.insert(Key::new("device"), device);
    Some(PyValue::Dict(std::sync::Arc::new(d)))
}

/// Shape, dtype and device of a node's recorded value (`meta["val"]`).
fn tensor_of(node: &Node) -> Option<(PyValue, PyValue, PyValue)> {
    let PyValue::Tensor(summary) = node.meta("val")? else {
        return None;
    };
    let d = summary.as_dict()?;
    let dtype = match d.get("dtype")? {
        PyValue::Str(s) | PyValue::Dtype(s) => PyValue::Dtype(s.clone()),
        _ => return None,
    };
    let device = match d.get("device")? {
        PyValue::Str(s) | PyValue::Device(s) => PyValue::Str(s.clone()),
        _ => return None,
    };
    Some((d.get("shape")?.clone(), dtype, device))
}

/// Finds a collective's parameter name.
struct NameFinder<'g> {
    graph: &'g Graph,
    /// Output position → descriptor text, from the output node's `meta["desc"]`.
    output_descs: Vec<Option<String>>,
    /// The output's position of each node it returns (the first, when returned twice): a
    /// graph may return as many gradients as it has reduce-scatters, each looked up here.
    output_position: crate::hashing::FastMap<NodeId, usize>,
    /// Placeholder position (among placeholders) of each placeholder node.
    placeholder_index: HashMap<NodeId, usize>,
}

impl<'g> NameFinder<'g> {
    fn new(graph: &'g Graph) -> NameFinder<'g> {
        let mut output_descs = Vec::new();
        let mut output_position = crate::hashing::FastMap::default();
        if let Some(out) = graph.nodes().iter().rev().find(|n| n.op == Op::Output) {
            if let Some(PyValue::List(descs)) = out.meta("desc") {
                output_descs = descs.iter().map(descriptor_text).collect();
            }
            if let Some(PyValue::List(items)) = out.args.first() {
                for (position, item) in items.iter().enumerate() {
                    if let Some(id) = crate::dump::node_index(item) {
                        output_position.entry(id).or_insert(position);
                    }
                }
            }
        }
        let placeholder_index = graph
            .nodes()
            .iter()
            .enumerate()
            .filter(|(_, n)| n.op == Op::Placeholder)
            .enumerate()
            .map(|(position, (id, _))| (id, position))
            .collect();
        NameFinder {
            graph,
            output_descs,
            output_position,
            placeholder_index,
        }
    }

    fn find(&self, c: &CollectiveIdentity) -> (String, NameSource) {
        let graph = self.graph;
        let node = graph.node(c.node);
        if let Some(name) = node.meta_str("param_name").filter(|s| !s.is_empty()) {
            return (name.to_string(), NameSource::Meta);
        }
        // The parameter's descriptor: its placeholder's (gathers), or the descriptor of the
        // output the gradient is returned as (reduce-scatters).
        let placeholder = c.input_placeholder;
        let descriptor = match placeholder {
            Some(p) => graph.node(p).meta("desc").and_then(descriptor_text),
            None => self.gradient_output_desc(c),
        };
        if let Some(fqn) = descriptor.as_deref().and_then(parameter_target) {
            return (fqn, NameSource::AotDescriptor);
        }
        if let Some(p) = placeholder {
            let position = self.placeholder_index.get(&p).copied();
            if let Some(fqn) = position.and_then(|i| graph.dump.state_fqns.get(i)) {
                if !fqn.is_empty() {
                    return (fqn.clone(), NameSource::StateFqns);
                }
            }
        }
        let stack_key = if c.phase == Phase::Backward {
            ["fwd_nn_module_stack", "nn_module_stack"]
        } else {
            ["nn_module_stack", "fwd_nn_module_stack"]
        };
        let path = stack_key
            .iter()
            .find_map(|key| node.meta(key).and_then(innermost_module_path));
        if let Some(fqn) = path.as_deref().and_then(parametrized_parameter) {
            return (fqn, NameSource::ModuleStack);
        }
        // The same input descriptor names a parameter's gather in the forward graph and its
        // gradient in the backward graph.
        let bare = match (descriptor.as_deref().and_then(plain_input), placeholder) {
            (Some(input), _) => input,
            (None, Some(p)) => graph.node(p).name.clone(),
            (None, None) => c.name.clone(),
        };
        match path.filter(|p| !p.is_empty()) {
            // A module path without a parameter name: the parameter is in that module.
            Some(module) => (format!("{module}.{bare}"), NameSource::ModuleStack),
            None => (bare, NameSource::Bare),
        }
    }

    /// The descriptor of the graph output a reduce-scatter's result is returned as.
    fn gradient_output_desc(&self, c: &CollectiveIdentity) -> Option<String> {
        let graph = self.graph;
        for &wait in &c.waits {
            let mut frontier = vec![wait];
            // The wait itself or a view of it is what the output returns.
            for _ in 0..8 {
                let Some(&current) = frontier.last() else {
                    break;
                };
                if let Some(&position) = self.output_position.get(&current) {
                    return self.output_descs.get(position).cloned().flatten();
                }
                match graph.users(current) {
                    [only] if graph.is_view(*only) => frontier.push(*only),
                    _ => break,
                }
            }
        }
        None
    }
}

/// The text of an AOT descriptor as the dump records it (`{"repr": ...}` or a string).
fn descriptor_text(value: &PyValue) -> Option<String> {
    match value {
        PyValue::Opaque(text) | PyValue::Str(text) => Some(text.clone()),
        _ => None,
    }
}

/// `ParamAOTInput(target='l1.weight')` (possibly wrapped, as in
/// `SubclassGetAttrAOTInput(base=ParamAOTInput(target='w'), attr='_local_tensor')` or
/// `GradAOTOutput(grad_of=ParamAOTInput(target='w'))`) → the parameter's FQN, normalised.
fn parameter_target(desc: &str) -> Option<String> {
    for marker in ["ParamAOTInput(target='", "BufferAOTInput(target='"] {
        if let Some(start) = desc.find(marker) {
            let rest = &desc[start + marker.len()..];
            let end = rest.find('\'')?;
            return Some(normalize_fqn(&rest[..end]));
        }
    }
    None
}

/// The plain graph input a descriptor names (an input, or the input a gradient is of), as a
/// bare name: `SubclassGetAttrAOTInput(base=PlainAOTInput(idx=3), attr='_local_tensor')` and
/// `GradAOTOutput(grad_of=PlainAOTInput(idx=3))` → `input_3`.
fn plain_input(desc: &str) -> Option<String> {
    let marker = "PlainAOTInput(idx=";
    let start = desc.find(marker)? + marker.len();
    let rest = &desc[start..];
    let idx: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if idx.is_empty() {
        return None;
    }
    let attr = desc
        .find("attr='")
        .and_then(|i| desc[i + 6..].split('\'').next())
        .filter(|a| *a != "_local_tensor")
        .map(|a| format!(".{a}"))
        .unwrap_or_default();
    Some(format!("input_{idx}{attr}"))
}

/// The innermost module path of an `nn_module_stack` (`{key: [path, type]}` in stack order),
/// normalised.
fn innermost_module_path(stack: &PyValue) -> Option<String> {
    let entries = stack.as_dict()?;
    let (_, last) = entries.iter().last()?;
    let path = last.as_list()?.first()?.as_str()?;
    Some(normalize_fqn(path))
}

/// A SimpleFSDP parametrization's module path names its parameter:
/// `layers.0.attn.parametrizations.wq.0` → `layers.0.attn.wq`.
fn parametrized_parameter(path: &str) -> Option<String> {
    let marker = "parametrizations.";
    let (module, rest) = if let Some(rest) = path.strip_prefix(marker) {
        ("", rest)
    } else {
        let i = path.find(&format!(".{marker}"))?;
        (&path[..i], &path[i + 1 + marker.len()..])
    };
    let name = rest.split('.').next().filter(|n| !n.is_empty())?;
    Some(if module.is_empty() {
        name.to_string()
    } else {
        format!("{module}.{name}")
    })
}

/// A module or parameter path as dynamo or AOTAutograd writes it, as `named_modules` does:
/// `L['self'].layers[0]._modules['attn']` → `layers.0.attn`; a parametrized parameter's
/// `parametrizations.w.original` → `w`.
pub fn normalize_fqn(path: &str) -> String {
    let mut text = path.trim().to_string();
    // Dynamo's root: `L['self']`, `L['fn']`, `L['mod']`, `G['...']`.
    for prefix in ["L['", "G['"] {
        if text.starts_with(prefix) {
            if let Some(end) = text.find("']") {
                text = text[end + 2..].trim_start_matches('.').to_string();
            }
        }
    }
    let text = text
        .replace("._modules['", ".")
        .replace("_modules['", "")
        .replace("']", "")
        .replace("['", ".")
        .replace('[', ".")
        .replace(']', "");
    let mut parts: Vec<&str> = text.split('.').filter(|p| !p.is_empty()).collect();
    // `parametrizations.<name>.original` → `<name>`.
    if let Some(i) = parts.iter().position(|p| *p == "parametrizations") {
        if parts.get(i + 2) == Some(&"original") && i + 3 == parts.len() {
            let name = parts[i + 1];
            parts.truncate(i);
            parts.push(name);
        }
    }
    parts.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_as_named_modules_writes_them() {
        assert_eq!(
            normalize_fqn("L['fn'].0.parametrizations.weight.0"),
            "0.parametrizations.weight.0"
        );
        assert_eq!(
            normalize_fqn("L['self'].layers[0]._modules['attn']"),
            "layers.0.attn"
        );
        assert_eq!(
            normalize_fqn("m.0.parametrizations.weight.original"),
            "m.0.weight"
        );
        assert_eq!(
            parametrized_parameter("0.parametrizations.weight.0").as_deref(),
            Some("0.weight")
        );
        assert_eq!(
            parametrized_parameter("parametrizations.bias.0").as_deref(),
            Some("bias")
        );
        assert_eq!(parametrized_parameter("layers.0.attn"), None);
        assert_eq!(
            parameter_target(
                "SubclassGetAttrAOTInput(base=ParamAOTInput(target='m.0.parametrizations.weight.original'), attr='_local_tensor')"
            )
            .as_deref(),
            Some("m.0.weight")
        );
        assert_eq!(
            plain_input("SubclassGetAttrAOTOutput(base=GradAOTOutput(grad_of=PlainAOTInput(idx=3)), attr='_local_tensor')").as_deref(),
            Some("input_3")
        );
        assert_eq!(parameter_target("PlainAOTInput(idx=2)"), None);
    }
}
