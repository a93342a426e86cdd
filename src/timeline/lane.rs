//! Lanes: where a collective sits in the timeline, and what the lane is called.
//!
//! A lane is a phase and a transport, both the identity module's values
//! ([`Phase`], [`Transport`]): a collective's lane is what its classification says, and a
//! planner bucket's is its kind's ([`Lane::of_kind`], the one mapping from the FSDP pass's
//! `comm_type` kinds to lanes). The table's "kind · phase" column, the chart's lane labels
//! and the Chrome trace's thread names all read [`Lane::label`].

use crate::identity::{Phase, Transport};
use crate::planner::CollectiveKind;

/// A phase and a transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lane {
    pub phase: PhaseKey,
    pub transport: Transport,
}

/// [`Phase`] with an order (forward first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PhaseKey(u8);

impl PhaseKey {
    pub fn of(phase: Phase) -> PhaseKey {
        PhaseKey(match phase {
            Phase::Forward => 0,
            Phase::Backward => 1,
        })
    }
    pub fn phase(self) -> Phase {
        if self.0 == 0 {
            Phase::Forward
        } else {
            Phase::Backward
        }
    }
}

impl Lane {
    pub fn new(phase: Phase, transport: Transport) -> Lane {
        Lane {
            phase: PhaseKey::of(phase),
            transport,
        }
    }

    /// The lane of a planner kind: the FSDP pass's `comm_type` tags
    /// (`fsdp_all_gather`, `fsdp_all_gather_backward`, `fsdp_reduce_scatter`).
    pub fn of_kind(kind: CollectiveKind) -> Lane {
        match kind {
            CollectiveKind::AllGather => Lane::new(Phase::Forward, Transport::AllGather),
            CollectiveKind::AllGatherBackward => Lane::new(Phase::Backward, Transport::AllGather),
            CollectiveKind::ReduceScatter => Lane::new(Phase::Backward, Transport::ReduceScatter),
        }
    }

    pub fn phase(self) -> Phase {
        self.phase.phase()
    }

    pub fn transport(self) -> Transport {
        self.transport
    }

    pub fn backward(self) -> bool {
        self.phase() == Phase::Backward
    }

    /// `all-gather`, `reduce-scatter`, ...: the transport in words.
    pub fn transport_label(self) -> &'static str {
        match self.transport() {
            Transport::AllGather => "all-gather",
            Transport::ReduceScatter => "reduce-scatter",
            Transport::AllReduce => "all-reduce",
            Transport::AllToAll => "all-to-all",
            Transport::Broadcast => "broadcast",
            Transport::Reduce => "reduce",
            Transport::Gather => "gather",
            Transport::Scatter => "scatter",
            Transport::PointToPoint => "send/recv",
            Transport::Barrier => "barrier",
            Transport::Fused => "fused",
        }
    }

    /// `forward · all-gather`.
    pub fn label(self) -> String {
        format!("{} · {}", self.phase().as_str(), self.transport_label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_their_lanes_and_lanes_order_forward_first() {
        let lanes: Vec<Lane> = [
            CollectiveKind::ReduceScatter,
            CollectiveKind::AllGatherBackward,
            CollectiveKind::AllGather,
        ]
        .map(Lane::of_kind)
        .to_vec();
        let mut sorted = lanes.clone();
        sorted.sort();
        assert_eq!(
            sorted.iter().map(|l| l.label()).collect::<Vec<_>>(),
            [
                "forward · all-gather",
                "backward · all-gather",
                "backward · reduce-scatter"
            ]
        );
    }
}
