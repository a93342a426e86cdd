//! Synthetic graph dumps for benchmarks and scale tests: a Llama-like joint forward +
//! backward graph with the FSDP pass's tags (forward gathers with reshard frees, backward
//! re-gathers, reduce-scatters into the output), shaped like the traced conformance graphs
//! but of any size. Real graphs come from the Python exporter; these only exist to measure.

mod hostile;
pub use hostile::Hostile;

use crate::pyjson::write_string;

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynthSpec {
    /// Transformer blocks.
    pub layers: usize,
    /// FSDP degree (size of group `fsdp`).
    pub degree: usize,
    /// Hidden size; parameter shapes derive from it.
    pub hidden: usize,
}

impl SynthSpec {
    /// About how many nodes one layer adds.
    pub const NODES_PER_LAYER: usize = 158;

    /// A spec whose dump has roughly `nodes` nodes.
    pub fn with_nodes(nodes: usize) -> SynthSpec {
        SynthSpec {
            layers: (nodes / Self::NODES_PER_LAYER).max(1),
            degree: 4,
            hidden: 256,
        }
    }
}

const PARAMS: [(&str, &str); 9] = [
    ("attention_norm", "weight"),
    ("attention.wq", "weight"),
    ("attention.wk", "weight"),
    ("attention.wv", "weight"),
    ("attention.wo", "weight"),
    ("ffn_norm", "weight"),
    ("feed_forward.w1", "weight"),
    ("feed_forward.w2", "weight"),
    ("feed_forward.w3", "weight"),
];

struct Writer {
    out: String,
    count: usize,
}

impl Writer {
    #[allow(clippy::too_many_arguments)]
    fn node(
        &mut self,
        name: &str,
        op: &str,
        target: &str,
        args: &[Arg],
        meta: &str,
        alias: bool,
        impure: bool,
        repr_target: &str,
    ) {
        if self.count > 0 {
            self.out.push_str(",\n");
        }
        self.count += 1;
        self.out.push_str("{\"name\": ");
        write_string(&mut self.out, name);
        self.out.push_str(", \"op\": \"");
        self.out.push_str(op);
        self.out.push_str("\", \"target\": ");
        write_string(&mut self.out, target);
        self.out.push_str(", \"args\": [");
        let mut repr_args = String::from("(");
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
                repr_args.push_str(", ");
            }
            match arg {
                Arg::Node(n) => {
                    self.out.push_str("{\"node\": ");
                    write_string(&mut self.out, n);
                    self.out.push('}');
                    repr_args.push_str(n);
                }
                Arg::Int(i) => {
                    self.out.push_str(&i.to_string());
                    repr_args.push_str(&i.to_string());
                }
                Arg::Str(s) => {
                    write_string(&mut self.out, s);
                    repr_args.push_str(&format!("'{s}'"));
                }
                Arg::Nodes(ns) => {
                    self.out.push('[');
                    repr_args.push('[');
                    for (k, n) in ns.iter().enumerate() {
                        if k > 0 {
                            self.out.push_str(", ");
                            repr_args.push_str(", ");
                        }
                        self.out.push_str("{\"node\": ");
                        write_string(&mut self.out, n);
                        self.out.push('}');
                        repr_args.push_str(n);
                    }
                    self.out.push(']');
                    repr_args.push(']');
                }
            }
        }
        if args.len() == 1 {
            repr_args.push(',');
        }
        repr_args.push(')');
        self.out.push_str("], \"kwargs\": {}, \"meta\": {");
        self.out.push_str(meta);
        self.out.push_str("}, \"alias\": ");
        self.out.push_str(if alias { "true" } else { "false" });
        self.out.push_str(", \"impure\": ");
        self.out.push_str(if impure { "true" } else { "false" });
        self.out.push_str(", \"repr\": {\"target\": ");
        write_string(&mut self.out, repr_target);
        self.out.push_str(", \"args\": ");
        write_string(&mut self.out, &repr_args);
        self.out.push_str(", \"kwargs\": \"{}\"}}");
    }

    fn call(&mut self, name: &str, target: &str, args: &[Arg], meta: &str, alias: bool) {
        self.node(
            name,
            "call_function",
            target,
            args,
            meta,
            alias,
            false,
            target,
        );
    }
}

enum Arg {
    Node(String),
    Int(i64),
    Str(&'static str),
    Nodes(Vec<String>),
}

fn tensor(shape: &[usize], backward: bool) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!(
        "\"val\": {{\"tensor\": {{\"shape\": [{}], \"dtype\": \"torch.float32\", \"device\": \"cuda:0\"}}}}{}",
        dims.join(", "),
        if backward { ", \"autograd_backward\": true" } else { "" }
    )
}

fn shape_of(param: &str, hidden: usize) -> Vec<usize> {
    if param.ends_with("norm") {
        vec![hidden]
    } else if param.starts_with("feed_forward") {
        vec![hidden * 2, hidden]
    } else {
        vec![hidden, hidden]
    }
}

fn spec_json(local: &[usize], full: &[usize]) -> String {
    let show = |s: &[usize]| {
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "\"fsdp_bucket_spec\": {{\"input_shape\": [{}], \"output_shape\": [{}], \"dtype\": \"torch.float32\", \"device\": \"cuda:0\"}}",
        show(local),
        show(full)
    )
}

/// The synthetic graph as a `TORCH_TRACE` log: its one post-grad graph printed as `torch.fx`
/// prints it, alone or (`context`) among what a real log holds around a graph (about seven
/// times its bytes).
pub fn synthetic_trace_log(spec: SynthSpec, context: bool) -> String {
    let dump = crate::read_dump(synthetic_dump(spec).as_bytes()).unwrap_or_else(|_| crate::Dump {
        nodes: Vec::new(),
        group_ranks: None,
        modules: Vec::new(),
        state_fqns: Vec::new(),
        source: None,
        planner: None,
        script_objects: None,
        warnings: Vec::new(),
        signature: None,
    });
    let code = crate::tracelog::print::readable_code(&dump.nodes);
    crate::tracelog::print::trace_log(&code, context)
}

/// Writes a synthetic dump as JSON text.
pub fn synthetic_dump(spec: SynthSpec) -> String {
    let degree = spec.degree.max(2);
    let hidden = spec.hidden.max(degree) / degree * degree;
    let mut w = Writer {
        out: String::with_capacity(spec.layers * SynthSpec::NODES_PER_LAYER * 420 + 4096),
        count: 0,
    };
    w.out.push_str(&format!(
        "{{\"format\": \"commlens.graph\", \"version\": 1,\n\"source\": {{\"producer\": \"commlens synth\", \"layers\": {}, \"degree\": {degree}}},\n\"group_ranks\": {{\"fsdp\": [{}]}},\n\"planner\": {{\"block_module_types\": [\"TransformerBlock\"]}},\n\"modules\": [{{\"fqn\": \"\", \"type\": \"Transformer\"}}, {{\"fqn\": \"layers\", \"type\": \"torch.nn.modules.container.ModuleList\"}}",
        spec.layers,
        (0..degree).map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
    ));
    for layer in 0..spec.layers {
        w.out.push_str(&format!(
            ", {{\"fqn\": \"layers.{layer}\", \"type\": \"TransformerBlock\"}}"
        ));
    }
    w.out.push_str("],\n\"nodes\": [\n");
    // Placeholders: every parameter shard, then the input and the tangent.
    let mut state_idx = 0;
    let mut params = Vec::new();
    for layer in 0..spec.layers {
        for (module, leaf) in PARAMS {
            let fqn = format!("layers.{layer}.{module}.{leaf}");
            let full = shape_of(module, hidden);
            let mut local = full.clone();
            local[0] /= degree;
            let name = format!("primals_{}", state_idx + 1);
            let meta = format!(
                "{}, \"param_name\": \"{fqn}\", \"state_idx\": {state_idx}, \"fsdp_degree\": {degree}, \"is_param\": true",
                tensor(&local, false)
            );
            w.node(&name, "placeholder", &name, &[], &meta, false, true, &name);
            params.push((name, fqn, state_idx, local, full));
            state_idx += 1;
        }
    }
    w.node(
        "x",
        "placeholder",
        "x",
        &[],
        &tensor(&[8, hidden], false),
        false,
        true,
        "x",
    );
    w.node(
        "tangents_1",
        "placeholder",
        "tangents_1",
        &[],
        &tensor(&[8, hidden], false),
        false,
        true,
        "tangents_1",
    );
    let ag = "_c10d_functional.all_gather_into_tensor.default";
    let rs = "_c10d_functional.reduce_scatter_tensor.default";
    let wait = "_c10d_functional.wait_tensor.default";
    let free = "hyper_parallel.compile.passes.parallel.fsdp_pass._free_tensor_storage";
    let gather = |w: &mut Writer,
                  tag: &str,
                  id: usize,
                  param: &(String, String, usize, Vec<usize>, Vec<usize>),
                  backward: bool| {
        let (source, fqn, idx, local, full) = param;
        let name = format!("{tag}_ag_{id}");
        let kind = if backward {
            "fsdp_all_gather_backward"
        } else {
            "fsdp_all_gather"
        };
        let meta = format!(
            "\"comm_type\": \"{kind}\", \"comm_group\": \"fsdp\", \"param_name\": \"{fqn}\", \"state_idx\": {idx}, \"fsdp_degree\": {degree}, {}, {}",
            spec_json(local, full),
            tensor(full, backward)
        );
        w.call(
            &name,
            ag,
            &[
                Arg::Node(source.clone()),
                Arg::Int(degree as i64),
                Arg::Str("fsdp"),
            ],
            &meta,
            false,
        );
        let waited = format!("{tag}_wait_{id}");
        w.node(
            &waited,
            "call_function",
            wait,
            &[Arg::Node(name)],
            &tensor(full, backward),
            false,
            true,
            wait,
        );
        waited
    };
    let release =
        |w: &mut Writer, tag: &str, id: usize, waited: &str, fqn: &str, backward: bool| {
            let kind = if backward {
                "fsdp_reshard_free_backward"
            } else {
                "fsdp_reshard_free"
            };
            let meta = format!(
                "\"comm_type\": \"{kind}\", \"param_name\": \"{fqn}\"{}",
                if backward {
                    ", \"autograd_backward\": true"
                } else {
                    ""
                }
            );
            w.node(
                &format!("{tag}_free_{id}"),
                "call_function",
                free,
                &[Arg::Node(waited.to_string())],
                &meta,
                false,
                true,
                "<function _free_tensor_storage>",
            );
        };
    let mut hidden_state = "x".to_string();
    let mut saved = Vec::new();
    for layer in 0..spec.layers {
        let p = |k: usize| &params[layer * PARAMS.len() + k];
        let tag = format!("l{layer}");
        let fwd = tensor(&[8, hidden], false);
        // A weight gathered, transposed, multiplied into `input`, then released.
        let project = |w: &mut Writer, k: usize, input: &str| -> String {
            let weight = gather(w, &tag, k, p(k), false);
            let t = format!("{tag}_t_{k}");
            w.call(
                &t,
                "aten.t.default",
                &[Arg::Node(weight.clone())],
                &fwd,
                true,
            );
            let mm = format!("{tag}_mm_{k}");
            w.call(
                &mm,
                "aten.mm.default",
                &[Arg::Node(input.to_string()), Arg::Node(t)],
                &fwd,
                false,
            );
            release(w, &tag, k, &weight, &p(k).1, false);
            mm
        };
        // A norm weight gathered, multiplied into `input` as `name`, then released.
        let scale = |w: &mut Writer, k: usize, input: &str, name: &str| {
            let weight = gather(w, &tag, k, p(k), false);
            w.call(
                name,
                "aten.mul.Tensor",
                &[Arg::Node(input.to_string()), Arg::Node(weight.clone())],
                &fwd,
                false,
            );
            release(w, &tag, k, &weight, &p(k).1, false);
        };
        // Attention: norm, q/k/v projections, attention (impure on CPU), output projection.
        let normed = format!("{tag}_rms");
        scale(&mut w, 0, &hidden_state, &normed);
        let mut qkv = Vec::new();
        for k in 1..4 {
            let mm = project(&mut w, k, &normed);
            let view = format!("{tag}_view_{k}");
            w.call(&view, "aten.view.default", &[Arg::Node(mm)], &fwd, true);
            qkv.push(view);
        }
        let attn = format!("{tag}_sdpa");
        w.node(
            &attn,
            "call_function",
            "aten._scaled_dot_product_flash_attention_for_cpu.default",
            &[
                Arg::Node(qkv[0].clone()),
                Arg::Node(qkv[1].clone()),
                Arg::Node(qkv[2].clone()),
            ],
            &fwd,
            false,
            true,
            "aten._scaled_dot_product_flash_attention_for_cpu.default",
        );
        let out = format!("{tag}_attn_out");
        w.call(
            &out,
            "_operator.getitem",
            &[Arg::Node(attn), Arg::Int(0)],
            &fwd,
            true,
        );
        let proj = project(&mut w, 4, &out);
        let h = format!("{tag}_add_0");
        w.call(
            &h,
            "aten.add.Tensor",
            &[Arg::Node(hidden_state.clone()), Arg::Node(proj)],
            &fwd,
            false,
        );
        // Feed-forward: norm, SwiGLU.
        let ffn_in = format!("{tag}_rms_ffn");
        scale(&mut w, 5, &h, &ffn_in);
        let branches: Vec<String> = [6, 8]
            .into_iter()
            .map(|k| project(&mut w, k, &ffn_in))
            .collect();
        let silu = format!("{tag}_silu");
        w.call(
            &silu,
            "aten.silu.default",
            &[Arg::Node(branches[0].clone())],
            &fwd,
            false,
        );
        let gated = format!("{tag}_gate");
        w.call(
            &gated,
            "aten.mul.Tensor",
            &[Arg::Node(silu), Arg::Node(branches[1].clone())],
            &fwd,
            false,
        );
        let down = project(&mut w, 7, &gated);
        let next = format!("{tag}_add_1");
        w.call(
            &next,
            "aten.add.Tensor",
            &[Arg::Node(h.clone()), Arg::Node(down)],
            &fwd,
            false,
        );
        saved.push((normed, ffn_in, gated));
        hidden_state = next;
    }
    let loss = "loss".to_string();
    w.call(
        &loss,
        "aten.sum.default",
        &[Arg::Node(hidden_state)],
        &tensor(&[], false),
        false,
    );
    // Backward, last layer first: re-gather each weight, compute its gradient, reduce-scatter.
    let bwd = tensor(&[8, hidden], true);
    let mut grad = "tangents_1".to_string();
    let mut outputs = vec![loss];
    for layer in (0..spec.layers).rev() {
        let tag = format!("b{layer}");
        let (normed, ffn_in, gated) = &saved[layer];
        for k in (0..PARAMS.len()).rev() {
            let param = &params[layer * PARAMS.len() + k];
            let activation = match k {
                0..=4 => normed,
                5 | 6 | 8 => ffn_in,
                _ => gated,
            };
            let weight = gather(&mut w, &tag, k, param, true);
            let t = format!("{tag}_t_{k}");
            w.call(
                &t,
                "aten.t.default",
                &[Arg::Node(weight.clone())],
                &bwd,
                true,
            );
            let dx = format!("{tag}_dx_{k}");
            w.call(
                &dx,
                "aten.mm.default",
                &[Arg::Node(grad.clone()), Arg::Node(t)],
                &bwd,
                false,
            );
            release(&mut w, &tag, k, &weight, &param.1, true);
            let gt = format!("{tag}_gt_{k}");
            w.call(
                &gt,
                "aten.t.default",
                &[Arg::Node(grad.clone())],
                &bwd,
                true,
            );
            let dw = format!("{tag}_dw_{k}");
            w.call(
                &dw,
                "aten.mm.default",
                &[Arg::Node(gt), Arg::Node(activation.clone())],
                &tensor(&param.4, true),
                false,
            );
            let dw_view = format!("{tag}_dwv_{k}");
            w.call(
                &dw_view,
                "aten.view.default",
                &[Arg::Node(dw)],
                &tensor(&param.4, true),
                true,
            );
            let reduced = format!("{tag}_rs_{k}");
            let meta = format!(
                "\"comm_type\": \"fsdp_reduce_scatter\", \"comm_group\": \"fsdp\", \"param_name\": \"{}\", \"state_idx\": {}, \"fsdp_degree\": {degree}, {}, {}",
                param.1,
                param.2,
                spec_json(&param.4, &param.3),
                tensor(&param.3, true)
            );
            w.call(
                &reduced,
                rs,
                &[
                    Arg::Node(dw_view),
                    Arg::Str("avg"),
                    Arg::Int(degree as i64),
                    Arg::Str("fsdp"),
                ],
                &meta,
                false,
            );
            let waited = format!("{tag}_rs_wait_{k}");
            w.node(
                &waited,
                "call_function",
                wait,
                &[Arg::Node(reduced)],
                &tensor(&param.3, true),
                false,
                true,
                wait,
            );
            outputs.push(waited);
            let next = format!("{tag}_grad_{k}");
            w.call(
                &next,
                "aten.add.Tensor",
                &[Arg::Node(grad.clone()), Arg::Node(dx)],
                &bwd,
                false,
            );
            grad = next;
        }
    }
    w.node(
        "output",
        "output",
        "output",
        &[Arg::Nodes(outputs)],
        "",
        false,
        true,
        "output",
    );
    w.out.push_str("\n]}\n");
    w.out
}

/// A dump from [`synthetic_dump`] as the exporter lays a dump out
/// (`python/commlens_dump/export.py`: a top-level key a line, a node a line, compact
/// separators), without the nodes' `val`: about 340 bytes a node instead of 450, the shape of
/// the 500k-node dump issue 14 was measured on (173 MB of JSON, 7.9 MB gzipped). Costs that go
/// with the nodes weigh more against a floor that goes with the bytes.
pub fn lean_dump(text: &str) -> Result<String, String> {
    relaid(text, Extra::Nothing)
}

/// [`lean_dump`] without the nodes' `repr`s, which the format allows (the exporter always
/// writes them): the reader then renders each node's Python strings for the signature.
pub fn lean_dump_without_reprs(text: &str) -> Result<String, String> {
    relaid(text, Extra::NoReprs)
}

/// [`lean_dump`] with a `stack_trace` in every node's `meta`, as the exporter writes with
/// `--with-stack-trace`: four frames of Python source a node (about 450 bytes, with escaped
/// quotes and line breaks), each node's different, so no two nodes keep the same metadata.
pub fn lean_dump_with_stack_traces(text: &str) -> Result<String, String> {
    relaid(text, Extra::StackTraces)
}

/// How [`relaid`] changes a node besides dropping its `val`.
#[derive(Clone, Copy, PartialEq)]
enum Extra {
    Nothing,
    StackTraces,
    NoReprs,
}

/// A stack trace as torch records one in a node's `meta`: the frames that made node `i`.
fn stack_trace(i: usize) -> String {
    const FILES: [&str; 4] = [
        "/workspace/train.py",
        "/workspace/model/transformer.py",
        "/workspace/model/attention.py",
        "/usr/lib/python3/site-packages/torch/nn/modules/module.py",
    ];
    (0..4)
        .map(|frame| {
            let line = 1 + (i * 7 + frame * 131) % 1800;
            format!(
                "  File \"{}\", line {line}, in forward\n    h = self.block_{i}(h, mask=mask)  # \"{frame}\"\n",
                FILES[frame]
            )
        })
        .collect()
}

/// The nodes of a [`synthetic_dump`] laid out as the exporter does, without `val`, and
/// changed as `extra` says.
fn relaid(text: &str, extra: Extra) -> Result<String, String> {
    const NODES: &str = "\"nodes\": [\n";
    let at = text.find(NODES).ok_or("no \"nodes\" line")?;
    let head: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&format!("{}\"nodes\": []}}", &text[..at]))
            .map_err(|e| format!("the keys before \"nodes\": {e}"))?;
    let body = text[at + NODES.len()..]
        .strip_suffix("\n]}\n")
        .ok_or("not a synthetic dump's end")?;
    let compact = |value: &serde_json::Value| value.to_string();
    let mut out = String::with_capacity(text.len());
    out.push_str("{\n");
    for (key, value) in head.iter().filter(|(key, _)| *key != "nodes") {
        out.push_str(&format!(
            "{}: {},\n",
            compact(&key.as_str().into()),
            compact(value)
        ));
    }
    out.push_str("\"nodes\": [\n");
    for (i, line) in body.split('\n').enumerate() {
        let line = line.strip_suffix(',').unwrap_or(line);
        let mut node: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("node {i}: {e}"))?;
        if let Some(meta) = node.get_mut("meta").and_then(|m| m.as_object_mut()) {
            meta.shift_remove("val");
            if extra == Extra::StackTraces {
                meta.insert("stack_trace".into(), stack_trace(i).into());
            }
        }
        if let (Extra::NoReprs, Some(fields)) = (extra, node.as_object_mut()) {
            fields.shift_remove("repr");
        }
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&compact(&node));
    }
    out.push_str("\n]\n}\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::PyValue;

    #[test]
    fn synthetic_dumps_read_and_plan() {
        let text = synthetic_dump(SynthSpec {
            layers: 3,
            degree: 4,
            hidden: 64,
        });
        let graph = crate::Graph::new(crate::read_dump(text.as_bytes()).expect("valid dump"));
        let per_layer = (graph.len() - 27 - 4) / 3;
        assert!(
            per_layer.abs_diff(SynthSpec::NODES_PER_LAYER) < 12,
            "{per_layer} nodes per layer"
        );
        let args = crate::resolve_args(&graph, None);
        let plan = crate::plan(&graph, &args).expect("plan");
        assert_eq!(plan.summary.tagged_collectives, 3 * 9 * 3);
        assert_eq!(plan.summary.candidate_collectives, 3 * 9 * 3);
        assert!(plan.buckets.len() > 3 * 3, "{} buckets", plan.buckets.len());
    }

    #[test]
    fn a_lean_dump_is_the_same_graph_in_fewer_bytes() {
        let text = synthetic_dump(SynthSpec {
            layers: 3,
            degree: 4,
            hidden: 64,
        });
        let lean = lean_dump(&text).expect("lean");
        assert!(!lean.contains("\"val\"") && lean.len() * 5 < text.len() * 4);
        let node_lines = lean.lines().filter(|l| l.starts_with("{\"name\":")).count();
        let (full, lean) = (
            crate::read_dump(text.as_bytes()).expect("valid dump"),
            crate::read_dump(lean.as_bytes()).expect("valid lean dump"),
        );
        assert_eq!(full.nodes.len(), lean.nodes.len());
        assert_eq!(node_lines, lean.nodes.len(), "a node a line");
        for (a, b) in full.nodes.iter().zip(&lean.nodes) {
            let mut meta = a.meta.to_dict();
            meta.shift_remove("val");
            assert_eq!(
                (&a.name, &a.args, &meta),
                (&b.name, &b.args, &b.meta.to_dict())
            );
        }
        let plan = |dump| {
            let graph = crate::Graph::new(dump);
            let args = crate::resolve_args(&graph, None);
            let plan = crate::plan(&graph, &args).expect("plan");
            crate::planner::report::plan_to_value(&plan, &graph)
        };
        // The planner reads no `val`: the same report, digests and all.
        assert_eq!(plan(full), plan(lean));
    }

    #[test]
    fn stack_traces_are_each_nodes_own_and_read_back_whole() {
        let text = synthetic_dump(SynthSpec {
            layers: 2,
            degree: 4,
            hidden: 64,
        });
        let traced = lean_dump_with_stack_traces(&text).expect("traced");
        let dump = crate::read_dump(traced.as_bytes()).expect("valid traced dump");
        let traces: Vec<String> = dump
            .nodes
            .iter()
            .map(|n| match n.meta.to_dict().get("stack_trace") {
                Some(PyValue::Str(s)) => s.to_string(),
                other => panic!("{}: stack_trace {other:?}", n.name),
            })
            .collect();
        assert_eq!(traces[5], stack_trace(5));
        assert!(
            traces[5].contains("\"/workspace/train.py\", line") && traces[5].lines().count() == 8
        );
        let distinct: std::collections::HashSet<&String> = traces.iter().collect();
        assert_eq!(distinct.len(), traces.len(), "every node's trace differs");
    }
}
