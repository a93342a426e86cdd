//! Chrome-trace JSON (`{"traceEvents": [...]}`) of a plan: one "X" event per bucket window and
//! per collective, with graph positions as microseconds. Perfetto and chrome://tracing open it.

use super::input::{Action, TimelineInput};
use super::scene::bucket_role;
use serde_json::{json, Value};

pub fn chrome_trace(input: &TimelineInput) -> String {
    let mut events: Vec<Value> = Vec::new();
    let lanes = [
        (1, "buckets · forward"),
        (2, "buckets · backward"),
        (3, "collectives · forward"),
        (4, "collectives · backward"),
        (5, "skipped"),
    ];
    for (tid, name) in lanes {
        events.push(
            json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
                           "args": {"name": name}}),
        );
    }
    events.push(
        json!({"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
                       "args": {"name": format!("commlens plan · {} nodes", input.node_count)}}),
    );
    for b in &input.buckets {
        let backward = b.members.first().map(|m| m.backward).unwrap_or(false);
        let s = b.latest_input.min(b.earliest_consumer);
        let e = b.latest_input.max(b.earliest_consumer);
        events.push(json!({
            "name": b.id, "cat": "bucket", "ph": "X", "pid": 1, "tid": if backward { 2 } else { 1 },
            "ts": s, "dur": (e - s).max(1),
            "args": {"members": b.members.iter().map(|m| m.name.to_string()).collect::<Vec<_>>(),
                     "size_bytes": b.size_bytes, "fusable": b.fusable,
                     "role": bucket_role(b), "latest_input": b.latest_input,
                     "earliest_consumer": b.earliest_consumer}
        }));
        for m in &b.members {
            events.push(json!({
                "name": m.param_name.as_deref().unwrap_or(&m.name), "cat": &*m.kind,
                "ph": "X", "pid": 1, "tid": if m.backward { 4 } else { 3 }, "ts": m.node, "dur": 1,
                "args": {"node": &*m.name, "bucket": b.id, "role": m.role.as_deref(), "source": m.source.as_str(),
                         "size_bytes": m.size_bytes, "group": m.group.as_deref()}
            }));
        }
    }
    for d in &input.decisions {
        let (tid, cat) = match d.action {
            Action::Skip => (5, "skip"),
            Action::Split => (if d.backward { 4 } else { 3 }, "split"),
            Action::Singleton => (if d.backward { 4 } else { 3 }, "singleton"),
        };
        events.push(json!({
            "name": format!("{}: {}", d.action.as_str(), d.reason), "cat": cat, "ph": "i", "s": "t",
            "pid": 1, "tid": tid, "ts": d.node, "args": {"node": d.name}
        }));
    }
    serde_json::to_string(&json!({"traceEvents": events, "displayTimeUnit": "ns"}))
        .unwrap_or_else(|_| "{\"traceEvents\":[]}".to_string())
}
