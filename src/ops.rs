//! Collective ops as torch names them, for semantic identity: every way a graph can call a
//! collective, what it moves, and where its process group sits in the op's schema.
//!
//! - the functional collectives (`_c10d_functional.*`, and the legacy `c10d_functional.*`),
//!   which `torch.compile`, DTensor and SimpleFSDP emit, completed by `wait_tensor`;
//! - their autograd variants (`_c10d_functional_autograd.*`);
//! - the non-functional c10d ops (`c10d.allreduce_`, `c10d._allgather_base_`, ...) that eager
//!   code such as FSDP2 and DDP leaves in a `make_fx` trace: in-place, taking a process-group
//!   script object and returning a `Work` handle (alone, or beside the output);
//! - opaque communication-compute ops (`symm_mem.fused_*`).
//!
//! The planner's `is_collective` (`planner-helpers.md`) is a narrower, spec-fixed set of
//! functional ops and lives in `graph.rs`; this table is what the classifier lists.

use crate::dump::{Node, Op};
use crate::graph::split_op;
use crate::value::PyValue;

/// What a collective moves, independent of why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transport {
    AllGather,
    ReduceScatter,
    AllReduce,
    AllToAll,
    Broadcast,
    /// c10d `reduce_`: a reduction to one root.
    Reduce,
    /// c10d `gather_`: gather to one root.
    Gather,
    /// c10d `scatter_`: scatter from one root.
    Scatter,
    /// Point-to-point sends and receives (`send`, `recv_`, `isend`, `irecv`, `batch_p2p_ops`).
    PointToPoint,
    /// c10d `barrier`: synchronisation without data.
    Barrier,
    /// An opaque communication-compute op (`symm_mem.fused_all_gather_matmul`, ...).
    Fused,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::AllGather => "all_gather",
            Transport::ReduceScatter => "reduce_scatter",
            Transport::AllReduce => "all_reduce",
            Transport::AllToAll => "all_to_all",
            Transport::Broadcast => "broadcast",
            Transport::Reduce => "reduce",
            Transport::Gather => "gather",
            Transport::Scatter => "scatter",
            Transport::PointToPoint => "point_to_point",
            Transport::Barrier => "barrier",
            Transport::Fused => "fused",
        }
    }
}

/// How the graph calls the collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Api {
    /// `_c10d_functional` or the legacy `c10d_functional`: returns the result, completed by
    /// `wait_tensor`.
    Functional,
    /// `_c10d_functional_autograd`: the differentiable functional collectives.
    FunctionalAutograd,
    /// `c10d`: in-place on its tensors, taking a `ProcessGroup` script object, returning a
    /// `Work` handle.
    C10d,
    /// `symm_mem.fused_*`.
    Fused,
}

impl Api {
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Functional => "functional",
            Api::FunctionalAutograd => "functional_autograd",
            Api::C10d => "c10d",
            Api::Fused => "fused",
        }
    }
}

/// One collective call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollectiveCall<'a> {
    pub api: Api,
    /// The op name without namespace and overload (`all_gather_into_tensor`, `allreduce_`).
    pub op: &'a str,
    pub transport: Transport,
    /// Position of the process group (`group_name`, `process_group`) in the op's schema.
    group_arg: Option<usize>,
}

/// Functional collectives: op, transport, position of `group_name`.
const FUNCTIONAL: &[(&str, Transport, usize)] = &[
    ("all_gather_into_tensor", Transport::AllGather, 2),
    ("all_gather_into_tensor_out", Transport::AllGather, 2),
    ("all_gather_into_tensor_coalesced", Transport::AllGather, 2),
    ("reduce_scatter_tensor", Transport::ReduceScatter, 3),
    ("reduce_scatter_tensor_out", Transport::ReduceScatter, 3),
    (
        "reduce_scatter_tensor_coalesced",
        Transport::ReduceScatter,
        3,
    ),
    ("all_reduce", Transport::AllReduce, 2),
    ("all_reduce_", Transport::AllReduce, 2),
    ("all_reduce_coalesced", Transport::AllReduce, 2),
    ("all_reduce_coalesced_", Transport::AllReduce, 2),
    ("all_to_all_single", Transport::AllToAll, 3),
    ("broadcast", Transport::Broadcast, 2),
    ("broadcast_", Transport::Broadcast, 2),
    ("isend", Transport::PointToPoint, 3),
    ("irecv", Transport::PointToPoint, 3),
    ("batch_p2p_ops", Transport::PointToPoint, 4),
];

/// `_c10d_functional_autograd` ops (same schemas as their functional twins).
const FUNCTIONAL_AUTOGRAD: &[(&str, Transport, usize)] = &[
    ("all_gather_into_tensor", Transport::AllGather, 2),
    ("reduce_scatter_tensor", Transport::ReduceScatter, 3),
    ("all_to_all_single", Transport::AllToAll, 3),
];

/// Non-functional c10d ops: op, transport, position of `process_group`.
const C10D: &[(&str, Transport, usize)] = &[
    ("allreduce_", Transport::AllReduce, 1),
    ("allreduce_coalesced_", Transport::AllReduce, 1),
    ("allgather_", Transport::AllGather, 2),
    ("_allgather_base_", Transport::AllGather, 2),
    ("allgather_coalesced_", Transport::AllGather, 2),
    ("allgather_into_tensor_coalesced_", Transport::AllGather, 2),
    ("reduce_scatter_", Transport::ReduceScatter, 2),
    ("_reduce_scatter_base_", Transport::ReduceScatter, 2),
    (
        "reduce_scatter_tensor_coalesced_",
        Transport::ReduceScatter,
        2,
    ),
    ("alltoall_", Transport::AllToAll, 2),
    ("alltoall_base_", Transport::AllToAll, 2),
    ("broadcast_", Transport::Broadcast, 1),
    ("reduce_", Transport::Reduce, 1),
    ("gather_", Transport::Gather, 2),
    ("scatter_", Transport::Scatter, 2),
    ("send", Transport::PointToPoint, 1),
    ("recv_", Transport::PointToPoint, 1),
    ("recv_any_source_", Transport::PointToPoint, 1),
    ("barrier", Transport::Barrier, 1),
];

/// The collective `node` calls, if any.
pub fn collective_call(node: &Node) -> Option<CollectiveCall<'_>> {
    if node.op != Op::CallFunction {
        return None;
    }
    collective_target(&node.target)
}

/// The collective a `call_function` node of `target` calls, if any: the target alone decides.
pub fn collective_target(target: &str) -> Option<CollectiveCall<'_>> {
    let (namespace, op, _) = split_op(target)?;
    let (api, table): (Api, &[(&str, Transport, usize)]) = match namespace {
        "_c10d_functional" | "c10d_functional" => (Api::Functional, FUNCTIONAL),
        "_c10d_functional_autograd" => (Api::FunctionalAutograd, FUNCTIONAL_AUTOGRAD),
        "c10d" => (Api::C10d, C10D),
        "symm_mem" if op.starts_with("fused_") => {
            return Some(CollectiveCall {
                api: Api::Fused,
                op,
                transport: Transport::Fused,
                group_arg: None,
            })
        }
        _ => return None,
    };
    let &(name, transport, group_arg) = table.iter().find(|(name, _, _)| *name == op)?;
    Some(CollectiveCall {
        api,
        op: name,
        transport,
        group_arg: Some(group_arg),
    })
}

impl CollectiveCall<'_> {
    /// The process-group argument as written: the `group_name` (`process_group`) keyword,
    /// else the schema position.
    pub fn group_argument<'n>(&self, node: &'n Node) -> Option<&'n PyValue> {
        let keyword = match self.api {
            Api::C10d => "process_group",
            _ => "group_name",
        };
        node.kwargs
            .get(keyword)
            .or_else(|| self.group_arg.and_then(|i| node.args.get(i)))
    }

    /// Whether this is `_c10d_functional.<op>` exactly as Inductor's predicates test it
    /// (`node.target is torch.ops._c10d_functional.<op>.default`; a dump's op packet counts
    /// as its `.default` overload).
    pub fn is_inductor_op(&self, node: &Node, op: &str) -> bool {
        self.op == op
            && matches!(split_op(&node.target),
                Some(("_c10d_functional", _, overload)) if overload.is_none_or(|o| o == "default"))
    }
}

/// Whether `node` is `_c10d_functional.wait_tensor` as Inductor's `is_wait_tensor` tests it.
pub fn is_inductor_wait(node: &Node) -> bool {
    node.op == Op::CallFunction
        && matches!(split_op(&node.target),
            Some(("_c10d_functional", "wait_tensor", overload)) if overload.is_none_or(|o| o == "default"))
}

/// Whether `node` waits on a collective: `wait_tensor` of either functional namespace.
pub fn is_wait(node: &Node) -> bool {
    node.op == Op::CallFunction && is_wait_target(&node.target)
}

/// Whether a `call_function` node of `target` is a functional `wait_tensor` ([`is_wait`]).
pub fn is_wait_target(target: &str) -> bool {
    matches!(
        split_op(target),
        Some(("_c10d_functional" | "c10d_functional", "wait_tensor", _))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(target: &str, args: Vec<PyValue>) -> Node {
        Node {
            name: "n".into(),
            op: Op::CallFunction,
            target: target.into(),
            args,
            kwargs: Default::default(),
            meta: Default::default(),
            alias: None,
            impure: None,
            repr: None,
        }
    }

    #[test]
    fn every_api_is_recognised() {
        let cases = [
            (
                "_c10d_functional.all_gather_into_tensor.default",
                Api::Functional,
                Transport::AllGather,
            ),
            (
                "c10d_functional.all_reduce.default",
                Api::Functional,
                Transport::AllReduce,
            ),
            (
                "_c10d_functional.reduce_scatter_tensor",
                Api::Functional,
                Transport::ReduceScatter,
            ),
            (
                "_c10d_functional_autograd.all_to_all_single.default",
                Api::FunctionalAutograd,
                Transport::AllToAll,
            ),
            (
                "c10d._allgather_base_.default",
                Api::C10d,
                Transport::AllGather,
            ),
            ("c10d.allreduce_.default", Api::C10d, Transport::AllReduce),
            ("c10d.send.default", Api::C10d, Transport::PointToPoint),
            (
                "symm_mem.fused_all_gather_matmul.default",
                Api::Fused,
                Transport::Fused,
            ),
        ];
        for (target, api, transport) in cases {
            let node = call(target, vec![]);
            let c = collective_call(&node).unwrap_or_else(|| panic!("{target}"));
            assert_eq!((c.api, c.transport), (api, transport), "{target}");
        }
        for target in [
            "aten.mm.default",
            "c10d.unknown_op.default",
            "_c10d_functional.wait_tensor.default",
        ] {
            assert!(collective_call(&call(target, vec![])).is_none(), "{target}");
        }
    }

    #[test]
    fn group_argument_follows_the_schema() {
        let node = call(
            "_c10d_functional.reduce_scatter_tensor.default",
            vec![
                PyValue::None,
                PyValue::Str("sum".into()),
                PyValue::int(2),
                PyValue::Str("3".into()),
            ],
        );
        let c = collective_call(&node).unwrap();
        assert_eq!(c.group_argument(&node), Some(&PyValue::Str("3".into())));
        assert!(c.is_inductor_op(&node, "reduce_scatter_tensor"));
        let legacy = call("c10d_functional.reduce_scatter_tensor.default", vec![]);
        let c = collective_call(&legacy).unwrap();
        assert!(!c.is_inductor_op(&legacy, "reduce_scatter_tensor"));
    }
}
