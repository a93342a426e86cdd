//! Valid dumps shaped to find work that grows faster than the graph: each holds one
//! structure a real graph has a few of (a chain of reshapes, a node with many users) at the
//! size of the whole graph. Every command must read, plan, classify and draw them in time
//! that grows with the nodes, as the scale step of `cargo xtask test` checks at 200k nodes.

/// One shape of hostile dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hostile {
    /// A reduce-scatter whose input is a chain of views as long as the graph: every one a
    /// step of its layout preparation (`rs_layout_preparation`).
    LayoutChain,
    /// Untagged FSDP collectives, each on a process group of its own (all in `group_ranks`):
    /// as many groups as collectives, for `--tags roles` and `cost`.
    GroupPerCollective,
    /// Every parameter in one `TransformerBlock`: one bucket as large as the graph allows,
    /// for `diff` (its arguments after, [`Hostile::args_after`], cut it into thousands).
    OneBlock,
    /// One parameter whose name is as many dotted levels deep as the graph has nodes.
    DeepParamName,
    /// `modules` as a chain of nested modules thousands of levels deep (each listed with its
    /// whole path, as `named_modules` does), the deepest a block that owns parameters.
    DeepModules,
    /// A graph and its graph after a pass ([`Hostile::after`]) whose all-gathers record
    /// bucket members by parameter and whose reduce-scatters were rebuilt under other names:
    /// for `audit` and `diff` of the two.
    Rebucketed,
}

impl Hostile {
    /// Every shape.
    pub const ALL: [Hostile; 6] = [
        Hostile::LayoutChain,
        Hostile::GroupPerCollective,
        Hostile::OneBlock,
        Hostile::DeepParamName,
        Hostile::DeepModules,
        Hostile::Rebucketed,
    ];

    /// The shape's name, as `synth_dump N OUT hostile:NAME` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Hostile::LayoutChain => "layout-chain",
            Hostile::GroupPerCollective => "group-per-collective",
            Hostile::OneBlock => "one-block",
            Hostile::DeepParamName => "deep-param-name",
            Hostile::DeepModules => "deep-modules",
            Hostile::Rebucketed => "rebucketed",
        }
    }

    /// The graph after a pass, for the shapes that are a pair (`audit BEFORE AFTER`).
    pub fn after(self, nodes: usize) -> Option<String> {
        match self {
            Hostile::Rebucketed => Some(rebucketed(nodes, true)),
            _ => None,
        }
    }

    /// Planner arguments (`args.json`) to plan the dump with on the after side of a `diff`,
    /// where they change every bucket.
    pub fn args_after(self) -> Option<&'static str> {
        match self {
            Hostile::OneBlock => Some(
                "{\"group_ranks\": {\"fsdp\": [0, 1, 2, 3]}, \"block_module_types\": [\"TransformerBlock\"], \
                 \"policy\": {\"cap_bytes\": 600000}}",
            ),
            _ => None,
        }
    }

    /// The shape named `name`.
    pub fn from_name(name: &str) -> Option<Hostile> {
        Hostile::ALL.into_iter().find(|h| h.name() == name)
    }

    /// The dump, of about `nodes` nodes.
    pub fn dump(self, nodes: usize) -> String {
        let mut dump = Dump::new();
        match self {
            Hostile::LayoutChain => {
                dump.node("x", "placeholder", "x", "", "{}");
                let mut previous = "x".to_string();
                for i in 0..nodes.saturating_sub(4) {
                    let name = format!("view_{i}");
                    let args = format!("{{\"node\": \"{previous}\"}}, [64, 32]");
                    dump.node(&name, "call_function", "aten.view.default", &args, "{}");
                    previous = name;
                }
                let args = format!("{{\"node\": \"{previous}\"}}, \"avg\", 2, \"fsdp\"");
                dump.node("rs", "call_function", REDUCE_SCATTER, &args, &rs_meta("w"));
                dump.node("wait", "call_function", WAIT, "{\"node\": \"rs\"}", "{}");
                dump.node("output", "output", "output", "[{\"node\": \"wait\"}]", "{}");
            }
            Hostile::GroupPerCollective => {
                let units = nodes / Units::NODES;
                let ranks: Vec<String> = (0..units)
                    .map(|i| format!("\"g{i}\": [0, 1, 2, 3]"))
                    .collect();
                dump = Dump::with_header(&format!("\"group_ranks\": {{{}}}", ranks.join(", ")));
                Units {
                    tagged: false,
                    group: &|i| format!("g{i}"),
                    ..Units::fsdp(units, &|i| format!("layers.{i}.w.weight"))
                }
                .write(&mut dump);
            }
            Hostile::OneBlock => {
                dump = Dump::with_header(&format!(
                    "{FSDP_RANKS}, {BLOCK_TYPES}, \"modules\": [{}]",
                    [
                        "{\"fqn\": \"\", \"type\": \"Transformer\"}",
                        "{\"fqn\": \"layers\", \"type\": \"ModuleList\"}",
                        "{\"fqn\": \"layers.0\", \"type\": \"TransformerBlock\"}",
                    ]
                    .join(", ")
                ));
                Units::fsdp(nodes / Units::NODES, &|i| format!("layers.0.sub{i}.w"))
                    .write(&mut dump);
            }
            Hostile::DeepParamName => {
                let deep: String = (0..nodes)
                    .map(|i| format!("m{}.", i % 10))
                    .collect::<String>()
                    + "w";
                dump = Dump::with_header(&format!("{FSDP_RANKS}, {BLOCK_TYPES}"));
                let param = |i| match i {
                    0 => deep.clone(),
                    _ => format!("layers.{i}.w.weight"),
                };
                Units::fsdp(50, &param).write(&mut dump);
            }
            Hostile::DeepModules => {
                // A path of `levels` levels is about 3 bytes a level, and each module lists
                // its whole path: the text grows with the square of the depth.
                let levels = ((nodes as f64).sqrt() * 7.0) as usize;
                let mut path = String::new();
                let mut modules = vec!["{\"fqn\": \"\", \"type\": \"Transformer\"}".to_string()];
                for level in 0..levels {
                    if level > 0 {
                        path.push('.');
                    }
                    path.push_str(&format!("m{}", level % 10));
                    let kind = if level + 1 == levels {
                        "TransformerBlock"
                    } else {
                        "Sub"
                    };
                    modules.push(format!("{{\"fqn\": \"{path}\", \"type\": \"{kind}\"}}"));
                }
                dump = Dump::with_header(&format!(
                    "{FSDP_RANKS}, {BLOCK_TYPES}, \"modules\": [{}]",
                    modules.join(", ")
                ));
                Units::fsdp(16, &|i| format!("{path}.w{i}")).write(&mut dump);
            }
            Hostile::Rebucketed => return rebucketed(nodes, false),
        }
        dump.finish()
    }
}

/// [`Hostile::Rebucketed`]'s graph, before the pass or `after` it.
fn rebucketed(nodes: usize, after: bool) -> String {
    let mut dump = Dump::with_header(&format!("{FSDP_RANKS}, {BLOCK_TYPES}"));
    Units {
        members: after,
        renamed: after,
        ..Units::fsdp(nodes / Units::NODES, &|i| format!("layers.0.w{i}"))
    }
    .write(&mut dump);
    dump.finish()
}

const FSDP_RANKS: &str = "\"group_ranks\": {\"fsdp\": [0, 1, 2, 3]}";
const BLOCK_TYPES: &str = "\"planner\": {\"block_module_types\": [\"TransformerBlock\"]}";
const ALL_GATHER: &str = "_c10d_functional.all_gather_into_tensor.default";

/// FSDP units, one a parameter: its forward all-gather, wait and use, and (after every
/// forward) its gradient's reduce-scatter and wait, into the output.
struct Units<'a> {
    count: usize,
    /// With the FSDP pass's tags, or none (roles are then inferred).
    tagged: bool,
    group: &'a dyn Fn(usize) -> String,
    param: &'a dyn Fn(usize) -> String,
    /// The group size the collectives' arguments say.
    ranks: usize,
    /// Each all-gather records the FSDP pass's bucket members (`fsdp_bucket_members`): its
    /// own parameter and the next one's, as an after graph of bucketing does.
    members: bool,
    /// The reduce-scatters and their waits named differently (`rsx`, `rwx`), as a pass that
    /// rebuilt them names them.
    renamed: bool,
}

impl<'a> Units<'a> {
    /// Nodes a unit adds.
    const NODES: usize = 7;

    /// `count` units with the FSDP pass's tags on group `fsdp` of 4 ranks, parameter `i`
    /// named `param(i)`.
    fn fsdp(count: usize, param: &'a dyn Fn(usize) -> String) -> Units<'a> {
        fn fsdp_group(_: usize) -> String {
            "fsdp".into()
        }
        Units {
            count,
            tagged: true,
            group: &fsdp_group,
            param,
            ranks: 4,
            members: false,
            renamed: false,
        }
    }

    fn write(&self, dump: &mut Dump) {
        for i in 0..self.count {
            let meta = format!(
                "{{\"param_name\": \"{}\", \"state_idx\": {i}, \"fsdp_degree\": 4, \"is_param\": true}}",
                (self.param)(i)
            );
            dump.node(&format!("p{i}"), "placeholder", &format!("p{i}"), "", &meta);
        }
        dump.node("x", "placeholder", "x", "", "{}");
        dump.node("tangents_1", "placeholder", "tangents_1", "", "{}");
        let mut current = "x".to_string();
        for i in 0..self.count {
            let (group, param) = ((self.group)(i), (self.param)(i));
            let meta = match self.tagged {
                true => format!(
                    "{{\"comm_type\": \"fsdp_all_gather\", \"comm_group\": \"{group}\", \
                     \"param_name\": \"{param}\", \"state_idx\": {i}, \"fsdp_degree\": 4, \
                     \"fsdp_bucket_spec\": {{\"input_shape\": [64, 256], \"output_shape\": [256, 256], \
                     \"dtype\": \"torch.float32\", \"device\": \"cuda:0\"}}{}}}",
                    match self.members {
                        true => format!(
                            ", \"fsdp_bucket_members\": [\"{param}\", \"{}\"]",
                            (self.param)((i + 1) % self.count)
                        ),
                        false => String::new(),
                    }
                ),
                false => "{}".into(),
            };
            let args = format!("{{\"node\": \"p{i}\"}}, {}, \"{group}\"", self.ranks);
            dump.node(&format!("ag{i}"), "call_function", ALL_GATHER, &args, &meta);
            let wait = format!("{{\"node\": \"ag{i}\"}}");
            dump.node(&format!("w{i}"), "call_function", WAIT, &wait, "{}");
            let args = format!("{{\"node\": \"{current}\"}}, {{\"node\": \"w{i}\"}}");
            dump.node(
                &format!("mm{i}"),
                "call_function",
                "aten.mm.default",
                &args,
                "{}",
            );
            current = format!("mm{i}");
        }
        let mut outputs = vec![format!("{{\"node\": \"{current}\"}}")];
        let mut gradient = "tangents_1".to_string();
        const BACKWARD: &str = "{\"autograd_backward\": true}";
        let (rs, rw) = match self.renamed {
            true => ("rsx", "rwx"),
            false => ("rs", "rw"),
        };
        for i in (0..self.count).rev() {
            let (group, param) = ((self.group)(i), (self.param)(i));
            let args = format!("{{\"node\": \"{gradient}\"}}, {{\"node\": \"mm{i}\"}}");
            dump.node(
                &format!("g{i}"),
                "call_function",
                "aten.mm.default",
                &args,
                BACKWARD,
            );
            let meta = match self.tagged {
                true => format!(
                    "{{\"comm_type\": \"fsdp_reduce_scatter\", \"comm_group\": \"{group}\", \
                     \"param_name\": \"{param}\", \"state_idx\": {i}, \"fsdp_degree\": 4, \
                     \"autograd_backward\": true, \"fsdp_bucket_spec\": {{\"input_shape\": [256, 256], \
                     \"output_shape\": [64, 256], \"dtype\": \"torch.float32\", \"device\": \"cuda:0\"}}}}"
                ),
                false => BACKWARD.into(),
            };
            let args = format!(
                "{{\"node\": \"g{i}\"}}, \"avg\", {}, \"{group}\"",
                self.ranks
            );
            dump.node(
                &format!("{rs}{i}"),
                "call_function",
                REDUCE_SCATTER,
                &args,
                &meta,
            );
            let wait = format!("{{\"node\": \"{rs}{i}\"}}");
            dump.node(&format!("{rw}{i}"), "call_function", WAIT, &wait, BACKWARD);
            outputs.push(format!("{{\"node\": \"{rw}{i}\"}}"));
            gradient = format!("g{i}");
        }
        dump.node(
            "output",
            "output",
            "output",
            &format!("[{}]", outputs.join(", ")),
            "{}",
        );
    }
}

const REDUCE_SCATTER: &str = "_c10d_functional.reduce_scatter_tensor.default";
const WAIT: &str = "_c10d_functional.wait_tensor.default";

/// The FSDP pass's tags on a gradient's reduce-scatter of parameter `param`.
fn rs_meta(param: &str) -> String {
    format!(
        "{{\"comm_type\": \"fsdp_reduce_scatter\", \"comm_group\": \"fsdp\", \"fsdp_degree\": 2, \
         \"param_name\": \"{param}\", \"autograd_backward\": true, \"fsdp_bucket_spec\": \
         {{\"input_shape\": [64, 32], \"output_shape\": [32, 32], \"dtype\": \"torch.float32\", \
         \"device\": \"cuda:0\"}}}}"
    )
}

/// A dump's text, a node a line as the exporter writes it.
struct Dump {
    out: String,
    nodes: usize,
}

impl Dump {
    fn new() -> Dump {
        Dump::with_header("\"group_ranks\": {\"fsdp\": [0, 1]}")
    }

    /// A dump whose top-level entries before `nodes` are `entries` (JSON object members).
    fn with_header(entries: &str) -> Dump {
        Dump {
            out: format!(
                "{{\"format\": \"commlens.graph\", \"version\": 1, {entries}, \"nodes\": [\n"
            ),
            nodes: 0,
        }
    }

    /// Appends a node; `args` is the text inside its argument list, `meta` a JSON object.
    fn node(&mut self, name: &str, op: &str, target: &str, args: &str, meta: &str) {
        if self.nodes > 0 {
            self.out.push_str(",\n");
        }
        self.nodes += 1;
        self.out.push_str(&format!(
            "{{\"name\": \"{name}\", \"op\": \"{op}\", \"target\": \"{target}\", \"args\": [{args}], \
             \"kwargs\": {{}}, \"meta\": {meta}}}"
        ));
    }

    fn finish(mut self) -> String {
        self.out.push_str("\n]}\n");
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::Hostile;

    /// Every shape reads; its text grows with the size asked for (most in nodes; the deep
    /// names in levels); the arguments after read as planner arguments.
    #[test]
    fn every_shape_is_a_valid_dump_that_grows_with_the_size_asked() {
        for shape in Hostile::ALL {
            let [small, large] = [2_000, 8_000].map(|n| shape.dump(n));
            let dump = crate::read_dump(small.as_bytes())
                .unwrap_or_else(|e| panic!("{}: {e}", shape.name()));
            assert!(dump.nodes.len() <= 2_100, "{}", shape.name());
            assert!(large.len() >= small.len() + 6_000, "{}", shape.name());
            assert_eq!(Hostile::from_name(shape.name()), Some(shape));
            if let Some(args) = shape.args_after() {
                crate::parse_args_json(args.as_bytes()).expect("planner arguments");
            }
            if let Some(after) = shape.after(2_000) {
                crate::read_dump(after.as_bytes()).expect("the graph after");
            }
        }
    }

    /// The chain is every view, nearest the reduce-scatter first (as the reference walks it).
    /// `--tags roles` assumes ranks for the groups a dump does not record, 2^22 at most in
    /// all: ten groups of 2^20 ranks get four, and the description counts the six left.
    #[test]
    fn ranks_assumed_for_unrecorded_groups_stay_within_their_budget() {
        let mut dump = super::Dump::with_header("\"planner\": {}");
        super::Units {
            tagged: false,
            group: &|i| format!("g{i}"),
            ranks: 1 << 20,
            ..super::Units::fsdp(10, &|i| format!("layers.{i}.w.weight"))
        }
        .write(&mut dump);
        let graph = crate::graph::Graph::new(crate::read_dump(dump.finish().as_bytes()).unwrap());
        let (tagged, derived) = crate::derive_tags(&graph);
        assert_eq!(derived.tags.len(), 20);
        let assumed: Vec<&str> = derived
            .assumed_groups
            .iter()
            .map(|(g, _)| g.as_str())
            .collect();
        assert_eq!(assumed, ["g0", "g1", "g2", "g3"]);
        assert_eq!(derived.unassumed_groups, 6);
        assert!(derived.describe().contains("6 more process group(s)"));
        let Some(crate::value::PyValue::Dict(ranks)) = &tagged.dump.group_ranks else {
            panic!("group ranks")
        };
        assert_eq!(ranks.len(), 4);
    }

    #[test]
    fn a_layout_chain_as_long_as_the_graph_is_walked_whole() {
        let dump = crate::read_dump(Hostile::LayoutChain.dump(50_000).as_bytes()).expect("dump");
        let graph = crate::graph::Graph::new(dump);
        let rs = graph.len() - 3;
        let chain = graph.rs_layout_preparation(rs);
        assert_eq!(chain.len(), rs - 1);
        assert!(chain.iter().rev().copied().eq(1..rs));
    }
}
