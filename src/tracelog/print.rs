//! The inverse of [`super::fx`]: a graph written as `torch.fx` prints it in a trace log
//! (`print_readable` with strides and devices, summary comments, last-use deletions), and a
//! whole log around it. For round-trip tests and synthetic logs of any size (benchmarks); real
//! logs come from PyTorch.

use super::expr::DTYPE_ABBRS;
use super::{ANNOTATION_LIMIT, POST_GRAD_GRAPH};
use crate::dump::{Node, Op};
use crate::value::{py_repr_str, PyValue};
use std::fmt::Write;

/// Namespaces of `torch.ops` the printer writes as `torch.ops.ns.op.overload`; any other
/// target is a Python function, written by its qualified name.
const OP_NAMESPACES: &[&str] = &[
    "aten",
    "prims",
    "_c10d_functional",
    "c10d_functional",
    "_c10d_functional_autograd",
    "higher_order",
    "profiler",
    "symm_mem",
    "_dtensor",
    "inductor",
    "fsdp",
];

/// `print_readable(include_stride=True, include_device=True)` of a graph's nodes.
pub fn readable_code(nodes: &[Node]) -> String {
    let mut out = String::with_capacity(nodes.len() * 160);
    out.push_str("class GraphModule(torch.nn.Module):\n    def forward(self");
    for node in nodes.iter().filter(|n| n.op == Op::Placeholder) {
        out.push_str(", ");
        out.push_str(&node.target);
        annotation(&mut out, node.meta("val"));
        if let Some(default) = node.args.first() {
            out.push_str(" = ");
            value(&mut out, default);
        }
    }
    out.push_str("):\n");
    // The last user of each node, as `delete_unused_values` frees them.
    let mut last_use: Vec<Vec<&str>> = vec![Vec::new(); nodes.len()];
    let mut seen = vec![false; nodes.len()];
    for (i, node) in nodes.iter().enumerate().rev() {
        if node.op == Op::Output {
            continue;
        }
        let mut refs = Vec::new();
        node.args
            .iter()
            .chain(node.kwargs.values())
            .for_each(|v| node_refs(v, &mut refs));
        for r in refs {
            if r < nodes.len() && !seen[r] {
                seen[r] = true;
                if let Some(n) = nodes.get(r) {
                    last_use[i].push(n.name.as_str());
                }
            }
        }
    }
    let mut previous = String::new();
    for (i, node) in nodes.iter().enumerate() {
        match node.op {
            Op::Placeholder => continue,
            Op::Output => {
                out.push_str("        return ");
                match node.args.first() {
                    Some(PyValue::List(items)) => tuple(&mut out, items),
                    Some(v) => value(&mut out, v),
                    None => out.push_str("None"),
                }
                out.push_str("\n        \n");
                continue;
            }
            _ => {}
        }
        let summary = summary(node);
        if summary != previous {
            let _ = write!(out, "        \n        #{summary}\n");
            previous = summary;
        }
        out.push_str("        ");
        out.push_str(&node.name);
        annotation(&mut out, node.meta("val"));
        out.push_str(" = ");
        right_side(&mut out, node);
        if !last_use[i].is_empty() {
            out.push_str(";  ");
            for name in &last_use[i] {
                out.push_str(name);
                out.push_str(" = ");
            }
            out.push_str("None");
        }
        out.push('\n');
    }
    out
}

fn node_refs(v: &PyValue, out: &mut Vec<usize>) {
    match v {
        PyValue::Node(r) => out.extend(r.index),
        PyValue::List(items) => items.iter().for_each(|i| node_refs(i, out)),
        PyValue::Dict(map) => map.values().for_each(|i| node_refs(i, out)),
        _ => {}
    }
}

/// The comment `torch.fx` writes before a group of nodes.
fn summary(node: &Node) -> String {
    let mut s = String::new();
    if let Some(PyValue::Dict(custom)) = node.meta("custom") {
        if !custom.is_empty() {
            s.push_str(" Annotation: {");
            for (k, (key, v)) in custom.iter().enumerate() {
                if k > 0 {
                    s.push_str(", ");
                }
                s.push_str(&py_repr_str(key));
                s.push_str(": ");
                let text = v.py_str();
                if text.chars().count() > ANNOTATION_LIMIT {
                    let cut: String = text.chars().take(ANNOTATION_LIMIT).collect();
                    s.push_str(&py_repr_str(&format!("{cut}...")));
                } else {
                    s.push_str(&v.py_repr());
                }
            }
            s.push('}');
        }
    }
    let policy = |v: &PyValue| {
        let text = v.py_str();
        text.rsplit('.').next().unwrap_or("").to_string()
    };
    match (node.meta("recompute"), node.meta("ac_graph_id")) {
        (Some(r), Some(id)) => {
            let _ = write!(s, " ac_graph_id: {} - {}", id.py_str(), policy(r));
        }
        (Some(r), None) => {
            let _ = write!(s, " recompute: {}", policy(r));
        }
        (None, Some(id)) => {
            let _ = write!(s, " ac_graph_id: {}", id.py_str());
        }
        (None, None) => {}
    }
    match node.meta_str("stack_trace").and_then(frame) {
        Some(frame) => {
            s.push(' ');
            if node.meta_flag("autograd_backward") {
                s.push_str("Backward of forward node: ");
            }
            s.push_str(&frame);
        }
        None => s.push_str(" No stacktrace found for following nodes"),
    }
    s
}

/// `File: PATH:LINE in FUNCTION, code: CODE` of a traceback's innermost frame.
fn frame(trace: &str) -> Option<String> {
    let lines: Vec<&str> = trace.trim().lines().collect();
    // The innermost frame is the last `File "..."` line followed by its code line.
    (0..lines.len().saturating_sub(1)).rev().find_map(|idx| {
        let rest = lines.get(idx)?.trim().strip_prefix("File \"")?;
        let (path, rest) = rest.split_once("\", line ")?;
        let (lineno, function) = rest.split_once(", in ")?;
        let code = lines.get(idx + 1)?.trim();
        Some(format!("File: {path}:{lineno} in {function}, code: {code}"))
    })
}

fn annotation(out: &mut String, val: Option<&PyValue>) {
    match val {
        Some(PyValue::Sym(expr)) => {
            let _ = write!(out, ": \"Sym({expr})\"");
        }
        Some(PyValue::Tensor(summary)) => {
            let Some(d) = summary.as_dict() else { return };
            let dtype = match d.get("dtype") {
                Some(PyValue::Dtype(s) | PyValue::Str(s)) => s.as_str(),
                _ => return,
            };
            let Some((abbr, _, _)) = DTYPE_ABBRS.iter().find(|(_, name, _)| *name == dtype) else {
                return;
            };
            let shape = d.get("shape").and_then(PyValue::as_list).unwrap_or(&[]);
            let dims: Vec<String> = shape.iter().map(PyValue::py_str).collect();
            let _ = write!(out, ": \"{abbr}[{}]", dims.join(", "));
            // Contiguous strides, when every size is known.
            let sizes: Option<Vec<i128>> = shape.iter().map(PyValue::static_int).collect();
            if let Some(sizes) = sizes {
                let mut strides = vec![1i128; sizes.len()];
                for k in (0..sizes.len().saturating_sub(1)).rev() {
                    strides[k] = strides[k + 1].saturating_mul(sizes[k + 1].max(1));
                }
                let strides: Vec<String> = strides.iter().map(i128::to_string).collect();
                let _ = write!(out, "[{}]", strides.join(", "));
            }
            if let Some(PyValue::Str(device)) = d.get("device") {
                out.push_str(device);
            }
            out.push('"');
        }
        _ => {}
    }
}

fn right_side(out: &mut String, node: &Node) {
    let args = &node.args;
    match node.op {
        Op::GetAttr => {
            let _ = write!(out, "self.{}", node.target);
            return;
        }
        Op::CallModule => {
            let _ = write!(out, "self.{}(", node.target);
            call_args(out, args, node);
            return;
        }
        Op::CallMethod => {
            if let Some((first, rest)) = args.split_first() {
                value(out, first);
                let _ = write!(out, ".{}(", node.target);
                call_args(out, rest, node);
                return;
            }
        }
        _ => {}
    }
    let target = node.target.as_str();
    if let Some(op) = target.strip_prefix("_operator.") {
        let symbol = match op {
            "add" => Some("+"),
            "sub" => Some("-"),
            "mul" => Some("*"),
            "truediv" => Some("/"),
            "floordiv" => Some("//"),
            "mod" => Some("%"),
            "pow" => Some("**"),
            "eq" => Some("=="),
            "ne" => Some("!="),
            "lt" => Some("<"),
            "gt" => Some(">"),
            "le" => Some("<="),
            "ge" => Some(">="),
            _ => None,
        };
        match (op, args.as_slice(), symbol) {
            ("getitem", [a, b], _) => {
                value(out, a);
                out.push('[');
                value(out, b);
                out.push(']');
                return;
            }
            ("neg", [a], _) => {
                out.push('-');
                value(out, a);
                return;
            }
            (_, [a, b], Some(symbol)) => {
                value(out, a);
                let _ = write!(out, " {symbol} ");
                value(out, b);
                return;
            }
            _ => {}
        }
    }
    let namespace = target.split('.').next().unwrap_or("");
    if OP_NAMESPACES.contains(&namespace) {
        out.push_str("torch.ops.");
        out.push_str(target);
    } else if let Some(builtin) = target.strip_prefix("builtins.") {
        out.push_str(builtin);
    } else {
        out.push_str(target);
    }
    out.push('(');
    call_args(out, args, node);
}

fn call_args(out: &mut String, args: &[PyValue], node: &Node) {
    let mut first = true;
    for a in args {
        if !first {
            out.push_str(", ");
        }
        first = false;
        value(out, a);
    }
    for (k, v) in &node.kwargs {
        if !first {
            out.push_str(", ");
        }
        first = false;
        let _ = write!(out, "{} = ", k.as_str());
        value(out, v);
    }
    out.push(')');
}

fn tuple(out: &mut String, items: &[PyValue]) {
    out.push('(');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        value(out, item);
    }
    if items.len() == 1 {
        out.push(',');
    }
    out.push(')');
}

/// `_get_repr` of a value.
fn value(out: &mut String, v: &PyValue) {
    match v {
        PyValue::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                value(out, item);
            }
            out.push(']');
        }
        PyValue::Node(r) => out.push_str(&r.name),
        other => out.push_str(&other.py_repr()),
    }
}

/// A record header in the trace format.
pub fn record_header(out: &mut String, body: &str, line: usize, compile: (usize, usize)) {
    let _ = writeln!(
        out,
        "V1201 00:00:00.{:06} 1000 torch/_inductor/compile_fx.py:{line}] {{{body}, \"rank\": 0, \"frame_id\": {}, \"frame_compile_id\": {}, \"attempt\": 0, \"has_payload\": \"0\"}}",
        line % 1_000_000,
        compile.0,
        compile.1
    );
}

/// Appends `text` as a payload (each line after a tab).
pub fn payload(out: &mut String, text: &str) {
    for line in text.split('\n') {
        out.push('\t');
        out.push_str(line);
        out.push('\n');
    }
}

/// A trace log holding `code` as its one post-grad graph; with `context`, surrounded by what a
/// real log holds around it (timing events, the graph before post-grad passes, the runnable
/// graph, the output code), about seven times its size in all.
pub fn trace_log(code: &str, context: bool) -> String {
    let mut out = String::with_capacity(code.len() * if context { 8 } else { 1 } + 4096);
    let chromium = "{\n\"name\": \"GraphLowering.run\",\n\"ts\": 1796099199258897.0,\n\"args\": {\n\"compile_id\": \"0/0\"\n},\n\"ph\": \"B\",\n\"cat\": \"dynamo_timed\",\n\"tid\": 0,\n\"pid\": 0\n}";
    if context {
        record_header(&mut out, "\"dynamo_start\": {\"stack\": []}", 1, (0, 0));
        for i in 0..200 {
            record_header(&mut out, "\"chromium_event\": {}", 2 + i, (0, 0));
            payload(&mut out, chromium);
        }
        record_header(
            &mut out,
            "\"artifact\": {\"name\": \"before_post_grad_graph\", \"encoding\": \"string\"}",
            1687,
            (0, 0),
        );
        payload(&mut out, code);
        record_header(
            &mut out,
            "\"artifact\": {\"name\": \"fx_graph_runnable\", \"encoding\": \"string\"}",
            1635,
            (0, 0),
        );
        payload(&mut out, code);
    }
    record_header(
        &mut out,
        &format!("\"artifact\": {{\"name\": \"{POST_GRAD_GRAPH}\", \"encoding\": \"string\"}}"),
        1725,
        (0, 0),
    );
    payload(&mut out, code);
    if context {
        for name in [
            "inductor_output_code",
            "aot_joint_graph",
            "aot_forward_graph",
            "aot_backward_graph",
        ] {
            record_header(&mut out, &format!("\"{name}\": {{}}"), 3189, (0, 0));
            payload(&mut out, code);
        }
        for i in 0..200 {
            record_header(&mut out, "\"chromium_event\": {}", 4000 + i, (0, 0));
            payload(&mut out, chromium);
        }
    }
    out
}
