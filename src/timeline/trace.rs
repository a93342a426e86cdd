//! Chrome-trace JSON (`{"traceEvents": [...]}`) of a plan: one "X" event per bucket window and
//! per collective, with graph positions as microseconds. Perfetto and chrome://tracing open it.

use super::input::TimelineInput;
use super::lane::Lane;
use crate::identity::Source;
use crate::planner::Action;
use serde_json::{json, Value};

/// The trace; `settings` (how the plan was made) goes into the format's `otherData`.
pub fn chrome_trace(input: &TimelineInput) -> String {
    chrome_trace_with(input, None)
}

/// The trace, recording `settings` in `otherData`.
pub fn chrome_trace_with(input: &TimelineInput, settings: Option<&Value>) -> String {
    let mut events: Vec<Value> = Vec::new();
    // One thread per lane for buckets, one per lane for their collectives, one for skips.
    let mut lanes: Vec<Lane> = input.buckets.iter().map(|b| b.lane).collect();
    lanes.extend(input.decisions.iter().map(|d| d.lane));
    lanes.sort();
    lanes.dedup();
    let tid = |lane: Lane, collectives: bool| -> usize {
        let i = lanes.iter().position(|l| *l == lane).unwrap_or(0);
        1 + 2 * i + collectives as usize
    };
    let skipped_tid = 1 + 2 * lanes.len();
    for (i, lane) in lanes.iter().enumerate() {
        for (offset, what) in [(0, "buckets"), (1, "collectives")] {
            events.push(
                json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": 1 + 2 * i + offset,
                               "args": {"name": format!("{what} · {}", lane.label())}}),
            );
        }
    }
    events.push(
        json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": skipped_tid,
                       "args": {"name": "skipped"}}),
    );
    events.push(
        json!({"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
                       "args": {"name": format!("commlens plan · {} nodes", input.node_count)}}),
    );
    for b in &input.buckets {
        let (s, e) = b.window();
        events.push(json!({
            "name": &*b.id, "cat": "bucket", "ph": "X", "pid": 1, "tid": tid(b.lane, false),
            "ts": s, "dur": (e - s).max(1),
            "args": {"members": b.members.iter().map(|m| m.name.to_string()).collect::<Vec<_>>(),
                     "size_bytes": b.size_bytes, "fusable": b.fusable,
                     "role": b.role().map(|r| r.to_string()), "latest_input": b.latest_input,
                     "earliest_consumer": b.earliest_consumer}
        }));
        for m in &b.members {
            events.push(json!({
                "name": m.param_name.as_deref().unwrap_or(&m.name), "cat": m.lane.transport_label(),
                "ph": "X", "pid": 1, "tid": tid(m.lane, true), "ts": m.node, "dur": 1,
                "args": {"node": &*m.name, "bucket": &*b.id, "role": m.role.as_deref(),
                         "source": m.source.map_or("unclassified", Source::as_str),
                         "size_bytes": m.size_bytes, "group": m.group.as_deref()}
            }));
        }
    }
    for d in &input.decisions {
        let (tid, cat) = match d.action {
            Action::Skip => (skipped_tid, "skip"),
            Action::Split => (tid(d.lane, true), "split"),
            Action::Singleton => (tid(d.lane, true), "singleton"),
        };
        let mut args = json!({"node": &*d.name});
        if let Some(cause) = &d.cause_name {
            args["cause"] = json!(&**cause);
        }
        events.push(json!({
            "name": format!("{}: {}", d.action.as_str(), d.reason.as_str()), "cat": cat, "ph": "i", "s": "t",
            "pid": 1, "tid": tid, "ts": d.node, "args": args
        }));
    }
    let mut trace = json!({"traceEvents": events, "displayTimeUnit": "ns"});
    if let Some(settings) = settings {
        trace["otherData"] = settings.clone();
    }
    serde_json::to_string(&trace).unwrap_or_else(|_| "{\"traceEvents\":[]}".to_string())
}
