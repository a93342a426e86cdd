//! Every collective of a graph as the app's table and the timeline show it: its lane (phase
//! and transport), role and source, process group, parameter and bytes — each from the core's
//! own answer (the identity classifier for role, source, group and phase; the planner's
//! `size_bytes` over `fsdp_bucket_spec` for bytes), so the table, the chart, `commlens roles`
//! and the planner's report never disagree.

use super::lane::Lane;
use crate::dump::lookup;
use crate::graph::{Graph, NodeId};
use crate::identity::{self, Classification, Code, Source};
use crate::ops::Api;
use crate::value::PyValue;
use std::collections::HashMap;
use std::rc::Rc;

/// One collective start node.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveRow {
    pub node: u32,
    pub name: Rc<str>,
    /// The op (`all_gather_into_tensor`, `fused_all_gather_matmul`, ...).
    pub op: Rc<str>,
    /// How the graph calls it (functional, c10d with a `Work` handle, fused).
    pub api: Api,
    /// Where it completes (its first wait; for a c10d op, the user of its `Work` handle),
    /// as the classifier finds it.
    pub completion: Option<u32>,
    /// The FSDP pass's `comm_type` tag, when the node has one.
    pub tag: Option<Rc<str>>,
    pub lane: Lane,
    pub role: Option<Rc<str>>,
    /// `None`: unclassified.
    pub source: Option<Source>,
    /// The process group, as the classifier reads it (the call's group name, else
    /// `meta["comm_group"]`).
    pub group: Option<Rc<str>>,
    pub param: Option<Rc<str>>,
    /// What the planner counts for it: `max(numel(input), numel(output)) * itemsize` of the
    /// node's `fsdp_bucket_spec`; `None` without a static spec in a planned dtype.
    pub bytes: Option<u64>,
    /// Identity diagnostics that name this collective.
    pub diagnostics: Rc<[Code]>,
}

impl CollectiveRow {
    /// `explicit`, `inferred` or `unclassified`.
    pub fn source_label(&self) -> &'static str {
        source_label(self.source)
    }
    /// The role, or `unclassified`.
    pub fn role_label(&self) -> &str {
        self.role.as_deref().unwrap_or(UNCLASSIFIED)
    }
}

/// How many rows ahead [`Collectives::from_classification`] readies a row's metadata.
#[cfg(target_arch = "x86_64")]
const PREFETCH_AHEAD: usize = 4;

/// The label of a collective without a role.
pub const UNCLASSIFIED: &str = "unclassified";

/// `explicit`, `inferred` or `unclassified`.
pub fn source_label(source: Option<Source>) -> &'static str {
    source.map_or(UNCLASSIFIED, Source::as_str)
}

/// One identity diagnostic.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagnosticRow {
    pub code: Code,
    pub nodes: Vec<String>,
    pub message: String,
}

/// The collectives of one graph, classified once; a re-plan reuses them.
#[derive(Clone, Debug, Default)]
pub struct Collectives {
    /// In graph order.
    pub rows: Vec<CollectiveRow>,
    /// Per graph position, the index in `rows` (`u32::MAX`: not a collective). A dense array:
    /// every re-plan looks up each bucket member here.
    index: Vec<u32>,
    pub diagnostics: Vec<DiagnosticRow>,
}

impl Collectives {
    /// Classifies every collective of `graph` (`identity::classify`).
    pub fn classify(graph: &Graph) -> Collectives {
        Collectives::from_classification(graph, identity::classify(graph))
    }

    /// The rows of `classification`, a classification of `graph`.
    pub fn from_classification(graph: &Graph, classification: Classification) -> Collectives {
        // The storage releases are not rows: given back before the rows are made (at 500k
        // nodes, 57k of them and 7 MB, held while `render` plans on the other thread).
        let Classification {
            collectives,
            diagnostics,
            memory_events,
            ..
        } = classification;
        drop(memory_events);
        let mut diags_of: HashMap<&str, Vec<Code>> = HashMap::new();
        for d in &diagnostics {
            for n in &d.nodes {
                let codes = diags_of.entry(n.as_str()).or_default();
                if !codes.contains(&d.code) {
                    codes.push(d.code);
                }
            }
        }
        let mut strings: crate::hashing::FastMap<String, Rc<str>> = Default::default();
        let mut share = |s: &str| -> Rc<str> {
            if let Some(r) = strings.get(s) {
                return r.clone();
            }
            let r: Rc<str> = Rc::from(s);
            strings.insert(s.to_string(), r.clone());
            r
        };
        let no_codes: Rc<[Code]> = Rc::from(Vec::new());
        let mut rows = Vec::with_capacity(collectives.len());
        let mut index = vec![u32::MAX; graph.len()];
        // Each row reads its node's metadata, a cache miss at each of two hops (the node, then
        // its entries) on a large graph: readied a few rows ahead, one hop at a time (where
        // there is a prefetch instruction; elsewhere the first hop would be a load).
        #[cfg(target_arch = "x86_64")]
        let ids: Vec<NodeId> = collectives.iter().map(|c| c.node).collect();
        #[cfg(not(target_arch = "x86_64"))]
        let ready = |_: usize| {};
        #[cfg(target_arch = "x86_64")]
        let ready = |k: usize| {
            if let Some(&id) = ids.get(k + 2 * PREFETCH_AHEAD) {
                crate::hashing::prefetch(&graph.node(id).meta);
            }
            if let Some(&id) = ids.get(k + PREFETCH_AHEAD) {
                graph.node(id).meta.prefetch_entries();
            }
        };
        // Each identity is dropped as its row is made, so the rows take the memory it held.
        for (k, c) in collectives.into_iter().enumerate() {
            ready(k);
            let node = graph.node(c.node);
            let Ok(position) = u32::try_from(c.node) else {
                continue;
            };
            if let Some(slot) = index.get_mut(c.node) {
                *slot = u32::try_from(rows.len()).unwrap_or(u32::MAX);
            }
            rows.push(CollectiveRow {
                node: position,
                name: Rc::from(c.name.as_str()),
                op: share(&c.op),
                api: c.api,
                completion: c.waits.first().and_then(|w| u32::try_from(*w).ok()),
                tag: node.meta_str("comm_type").map(&mut share),
                lane: Lane::new(c.phase, c.transport),
                role: c.role.as_ref().map(|r| share(r.as_str())),
                source: c.role.as_ref().and(c.source),
                group: c.group.as_deref().map(&mut share),
                param: node.meta_str("param_name").map(Rc::from),
                bytes: spec_bytes(graph, c.node),
                diagnostics: diags_of
                    .get(c.name.as_str())
                    .map(|d| Rc::from(d.as_slice()))
                    .unwrap_or_else(|| no_codes.clone()),
            });
        }
        let diagnostics = diagnostics
            .into_iter()
            .map(|d| DiagnosticRow {
                code: d.code,
                nodes: d.nodes,
                message: d.message,
            })
            .collect();
        Collectives {
            rows,
            index,
            diagnostics,
        }
    }

    /// The row of a collective start node.
    pub fn get(&self, node: NodeId) -> Option<&CollectiveRow> {
        self.rows.get(self.position(u32::try_from(node).ok()?)?)
    }

    /// The index in `rows` of a collective start node.
    pub fn position(&self, node: u32) -> Option<usize> {
        match self.index.get(node as usize) {
            Some(&i) if i != u32::MAX => Some(i as usize),
            _ => None,
        }
    }
}

/// The bytes the planner counts for a tagged collective: `max(numel(input_shape),
/// numel(output_shape)) * itemsize(dtype)` of its `fsdp_bucket_spec` (`planner::size_bytes`),
/// when the spec has static positive shapes and one of the planner's dtypes.
pub fn spec_bytes(graph: &Graph, node: NodeId) -> Option<u64> {
    let spec = graph.node(node).meta("fsdp_bucket_spec")?.as_dict()?;
    let input = crate::planner::static_shape(lookup(spec, "input_shape"))?;
    let output = crate::planner::static_shape(lookup(spec, "output_shape"))?;
    let dtype = match lookup(spec, "dtype")? {
        PyValue::Dtype(d) | PyValue::Str(d) => d.as_str(),
        _ => return None,
    };
    if !crate::planner::is_planned_dtype(dtype) {
        return None;
    }
    u64::try_from(crate::planner::size_bytes(&input, &output, dtype)).ok()
}
