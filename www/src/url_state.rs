//! The view in the address bar: what a link reproduces, parsed from and written to a query
//! string. Pure (no browser), so it is tested natively (`cargo test -p commlens-www`).
//!
//! | parameter | meaning |
//! |---|---|
//! | `src=URL`, `example=KEY` | the dump or trace log |
//! | `graph=K` | a trace log's post-grad graph (0-based, as `commlens graphs` numbers them) |
//! | `cap`, `mid`, `mcd` | `cap_bytes`, `max_input_distance`, `max_consumer_distance` |
//! | `tags=roles` | plan with FSDP tags derived from semantic roles (`--tags roles`) |
//! | `plans`, `ptext` | module plans (`dump`, `parents`, `blocks`, `explicit`, `none`) and their text |
//! | `sel=n:INDEX`, `sel=b:BUCKET` | the selected node, or the bucket (by id) |
//! | `x0`, `x1` | the graph positions in view |
//! | `filter`, `q` | the overview filter, the table search |
//! | `gpu`, `gpn`, `nvlink=0`, `intra`, `inter` | time estimates on this hardware (`commlens cost --gpu --gpus-per-node --no-nvlink --intra-bw --inter-bw`) |
//! | `x=time` | the x axis is the estimated time (with `gpu`) |
//! | `embed=timeline` | the chart alone, for an iframe |
//! | `limit_mb` | the largest dump to read, in MiB |
//!
//! To add a parameter (a compared `base=` dump, a `view=` for another page, a graph picker's
//! `graph=`): one field in [`UrlState`], one arm in [`UrlState::parse`], one line in
//! [`UrlState::to_query`], and a round-trip case in the tests. Parameters this version does
//! not know are kept (`other`) and written back, so a link made by a newer app survives a
//! round trip through an older one.

use crate::model::{PlansMode, Settings};
use commlens::cost::Network;
use commlens::identity::Code;
use commlens::planner::{Action, Reason};
use commlens::timeline::Viewport;

/// Where the dump comes from, when a link can say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceRef {
    /// A URL, absolute or relative to the page.
    Url(String),
    /// A built-in example by key.
    Example(String),
}

/// A selection as a link names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectionRef {
    Node(u32),
    /// A bucket id (`bucket_3`, or with its signature prefix).
    Bucket(String),
}

/// What the overview filters the table (and dims the chart) by.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Filter {
    /// A role, or `unclassified`.
    Role(String),
    /// `explicit`, `inferred` or `unclassified`.
    Source(String),
    /// A process group, or `(unknown)`.
    Group(String),
    Decision(Action, Reason),
    Diagnostic(Code),
}

impl Filter {
    /// In words, for the overview.
    pub fn label(&self) -> String {
        match self {
            Filter::Role(r) => format!("role = {r}"),
            Filter::Source(s) => format!("source = {s}"),
            Filter::Group(g) => format!("group = {g}"),
            Filter::Decision(a, r) => format!("{} = {}", a.as_str(), r.as_str()),
            Filter::Diagnostic(c) => format!("diagnostic = {}", c.as_str()),
        }
    }

    pub fn encode(&self) -> String {
        match self {
            Filter::Role(r) => format!("role:{r}"),
            Filter::Source(s) => format!("source:{s}"),
            Filter::Group(g) => format!("group:{g}"),
            Filter::Decision(a, r) => format!("{}:{}", a.as_str(), r.as_str()),
            Filter::Diagnostic(c) => format!("diag:{}", c.as_str()),
        }
    }

    pub fn decode(s: &str) -> Option<Filter> {
        let (k, v) = s.split_once(':')?;
        Some(match k {
            "role" => Filter::Role(v.into()),
            "source" => Filter::Source(v.into()),
            "group" => Filter::Group(v.into()),
            "skip" | "split" | "singleton" => {
                let action = match k {
                    "skip" => Action::Skip,
                    "split" => Action::Split,
                    _ => Action::Singleton,
                };
                Filter::Decision(action, Reason::parse(v)?)
            }
            "diag" => Filter::Diagnostic(Code::ALL.into_iter().find(|c| c.as_str() == v)?),
            _ => return None,
        })
    }
}

/// Everything a link carries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UrlState {
    pub source: Option<SourceRef>,
    /// A trace log's graph (`--graph K`).
    pub graph: Option<usize>,
    pub settings: Settings,
    pub selection: Option<SelectionRef>,
    pub viewport: Option<Viewport>,
    pub filter: Option<Filter>,
    pub search: String,
    pub embed: bool,
    pub limit_mb: Option<u64>,
    /// The time estimates' hardware, when they are shown.
    pub hardware: Option<Network>,
    /// The x axis is the estimated time (with time estimates on).
    pub time_axis: bool,
    /// Parameters this version does not know, in order.
    pub other: Vec<(String, String)>,
}

impl UrlState {
    /// Reads a query string (with or without the leading `?`). Values it cannot use are left
    /// out and explained in the returned problems.
    pub fn parse(query: &str) -> (UrlState, Vec<String>) {
        let mut s = UrlState::default();
        let mut problems = Vec::new();
        let mut plans_key: Option<String> = None;
        let mut plans_text = String::new();
        let (mut x0, mut x1) = (None, None);
        let mut hw = Network::default();
        let mut hw_given = false;
        let query = query.strip_prefix('?').unwrap_or(query);
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            let (key, value) = (key.into_owned(), value.into_owned());
            let count = |slot: &mut Option<u64>, minimum: u64, problems: &mut Vec<String>| {
                match crate::model::parse_count(&value, minimum) {
                    Ok(v) => *slot = v,
                    Err(e) => problems.push(format!("{key}={value}: {e}")),
                }
            };
            match key.as_str() {
                "src" if !value.is_empty() => s.source = Some(SourceRef::Url(value)),
                "example" => s.source = Some(SourceRef::Example(value)),
                "graph" => match value.parse() {
                    Ok(k) => s.graph = Some(k),
                    Err(_) => problems.push(format!(
                        "graph={value}: not a graph number (0, 1, ... as `commlens graphs` lists them)"
                    )),
                },
                "cap" => count(&mut s.settings.cap_bytes, 1, &mut problems),
                "mid" => count(&mut s.settings.max_input_distance, 0, &mut problems),
                "mcd" => count(&mut s.settings.max_consumer_distance, 0, &mut problems),
                "limit_mb" => count(&mut s.limit_mb, 1, &mut problems),
                "tags" => match commlens::TagMode::parse(&value) {
                    Some(mode) => s.settings.tags = mode,
                    None => problems.push(format!("tags={value}: expected dump or roles")),
                },
                "plans" => plans_key = Some(value),
                "ptext" => plans_text = value,
                "sel" => match value.split_once(':') {
                    Some(("n", n)) => match n.parse() {
                        Ok(n) => s.selection = Some(SelectionRef::Node(n)),
                        Err(_) => problems.push(format!("sel={value}: not a node index")),
                    },
                    Some(("b", b)) if !b.is_empty() => {
                        s.selection = Some(SelectionRef::Bucket(b.to_string()))
                    }
                    _ => problems.push(format!("sel={value}: expected n:INDEX or b:BUCKET")),
                },
                "x0" => x0 = value.parse::<f64>().ok().filter(|v| v.is_finite()),
                "x1" => x1 = value.parse::<f64>().ok().filter(|v| v.is_finite()),
                "filter" => match Filter::decode(&value) {
                    Some(f) => s.filter = Some(f),
                    None => problems.push(format!("filter={value}: not a filter")),
                },
                "q" => s.search = value,
                "embed" => s.embed = value != "0" && value != "false",
                "x" if value == "time" => s.time_axis = true,
                "x" if value == "position" => s.time_axis = false,
                "x" => problems.push(format!("x={value}: expected time or position")),
                "gpu" => match commlens::cost::GpuGeneration::parse(&value) {
                    Some(g) => {
                        hw.gpu = g;
                        hw_given = true;
                    }
                    None => problems.push(format!(
                        "gpu={value}: expected {}",
                        commlens::cost::report::generations()
                    )),
                },
                "gpn" => match value.parse::<u64>() {
                    Ok(n) if n >= 1 => {
                        hw.gpus_per_node = n;
                        hw_given = true;
                    }
                    _ => problems.push(format!("gpn={value}: GPUs per node is a whole number, 1 or more")),
                },
                "nvlink" => {
                    hw.nvlink = value != "0" && value != "false";
                    hw_given = true;
                }
                "intra" | "inter" => match crate::model::parse_bandwidth(&value) {
                    Ok(bw) => {
                        if key == "intra" {
                            hw.intra_node_bw = bw;
                        } else {
                            hw.inter_node_bw = bw;
                        }
                        hw_given = true;
                    }
                    Err(e) => problems.push(format!("{key}={value}: {e}")),
                },
                _ => s.other.push((key, value)),
            }
        }
        if hw_given {
            s.hardware = Some(hw);
        }
        if let Some(key) = plans_key {
            match PlansMode::from_key(&key, plans_text) {
                Some(mode) => s.settings.plans = mode,
                None => problems.push(format!(
                    "plans={key}: expected dump, parents, blocks, explicit or none"
                )),
            }
        }
        if let (Some(x0), Some(x1)) = (x0, x1) {
            if x1 > x0 {
                s.viewport = Some(Viewport { x0, x1 });
            } else {
                problems.push(format!("x0={x0}, x1={x1}: the range is empty"));
            }
        }
        (s, problems)
    }

    /// The query string (without `?`), parameters in a fixed order.
    pub fn to_query(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        match &self.source {
            Some(SourceRef::Url(u)) => {
                q.append_pair("src", u);
            }
            Some(SourceRef::Example(k)) => {
                q.append_pair("example", k);
            }
            None => {}
        }
        if let Some(k) = self.graph {
            q.append_pair("graph", &k.to_string());
        }
        let st = &self.settings;
        for (k, v) in [
            ("cap", st.cap_bytes),
            ("mid", st.max_input_distance),
            ("mcd", st.max_consumer_distance),
        ] {
            if let Some(v) = v {
                q.append_pair(k, &v.to_string());
            }
        }
        if st.tags != commlens::TagMode::Dump {
            q.append_pair("tags", st.tags.as_str());
        }
        if st.plans != PlansMode::Dump {
            q.append_pair("plans", st.plans.key());
            if !st.plans.text().is_empty() {
                q.append_pair("ptext", st.plans.text());
            }
        }
        match &self.selection {
            Some(SelectionRef::Node(n)) => {
                q.append_pair("sel", &format!("n:{n}"));
            }
            Some(SelectionRef::Bucket(b)) => {
                q.append_pair("sel", &format!("b:{b}"));
            }
            None => {}
        }
        if let Some(vp) = self.viewport {
            q.append_pair("x0", &format!("{:.2}", vp.x0));
            q.append_pair("x1", &format!("{:.2}", vp.x1));
        }
        if let Some(f) = &self.filter {
            q.append_pair("filter", &f.encode());
        }
        if !self.search.is_empty() {
            q.append_pair("q", &self.search);
        }
        if let Some(l) = self.limit_mb {
            q.append_pair("limit_mb", &l.to_string());
        }
        if let Some(hw) = &self.hardware {
            q.append_pair("gpu", hw.gpu.as_str());
            if hw.gpus_per_node != Network::default().gpus_per_node {
                q.append_pair("gpn", &hw.gpus_per_node.to_string());
            }
            if !hw.nvlink {
                q.append_pair("nvlink", "0");
            }
            if let Some(bw) = hw.intra_node_bw {
                q.append_pair("intra", &bw.to_string());
            }
            if let Some(bw) = hw.inter_node_bw {
                q.append_pair("inter", &bw.to_string());
            }
            if self.time_axis {
                q.append_pair("x", "time");
            }
        }
        for (k, v) in &self.other {
            q.append_pair(k, v);
        }
        if self.embed {
            q.append_pair("embed", "timeline");
        }
        q.finish()
    }

    /// The same view in the full app (for the embed's "open in commlens" link).
    pub fn without_embed(&self) -> UrlState {
        UrlState {
            embed: false,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(s: &UrlState) {
        let q = s.to_query();
        let (back, problems) = UrlState::parse(&q);
        assert!(problems.is_empty(), "{q}: {problems:?}");
        assert_eq!(&back, s, "{q}");
    }

    #[test]
    fn a_full_view_round_trips() {
        let s = UrlState {
            source: Some(SourceRef::Url(
                "https://host/a b/dump.json.gz?x=1&y=2".into(),
            )),
            graph: Some(3),
            settings: Settings {
                cap_bytes: Some(4000),
                max_input_distance: Some(0),
                max_consumer_distance: None,
                plans: PlansMode::Explicit("layers.0, layers.1\nnorm".into()),
                tags: commlens::TagMode::Roles,
            },
            selection: Some(SelectionRef::Bucket("b344ac8e8d51:bucket_7".into())),
            viewport: Some(Viewport {
                x0: 12.5,
                x1: 300.25,
            }),
            filter: Some(Filter::Decision(Action::Singleton, Reason::Oversized)),
            search: "wq.weight & more".into(),
            embed: true,
            limit_mb: Some(2048),
            hardware: Some(Network {
                gpu: commlens::cost::GpuGeneration::Hopper,
                gpus_per_node: 4,
                nvlink: false,
                intra_node_bw: Some(150.5),
                inter_node_bw: Some(25.0),
            }),
            time_axis: true,
            other: vec![("base".into(), "other.json".into())],
        };
        round_trip(&s);
        round_trip(&UrlState::default());
        round_trip(&UrlState {
            hardware: Some(Network::default()),
            ..Default::default()
        });
        round_trip(&UrlState {
            source: Some(SourceRef::Example("llama".into())),
            selection: Some(SelectionRef::Node(42)),
            filter: Some(Filter::Diagnostic(Code::HeuristicMismatch)),
            ..Default::default()
        });
        for f in [
            Filter::Role("fsdp.param_unshard".into()),
            Filter::Source("inferred".into()),
            Filter::Group("(unknown)".into()),
            Filter::Decision(Action::Skip, Reason::OutsideModulePlan),
            Filter::Decision(Action::Split, Reason::InterveningCollective),
        ] {
            round_trip(&UrlState {
                filter: Some(f),
                ..Default::default()
            });
        }
    }

    #[test]
    fn links_from_the_previous_app_still_read() {
        let (s, problems) =
            UrlState::parse("?example=llama&cap=30000&plans=parents&sel=b:b344ac8e8d51:bucket_3&x0=10.00&x1=90.50&filter=split:capacity&q=wq");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(s.source, Some(SourceRef::Example("llama".into())));
        assert_eq!(s.settings.cap_bytes, Some(30000));
        assert_eq!(s.settings.plans, PlansMode::Parents);
        assert_eq!(
            s.selection,
            Some(SelectionRef::Bucket("b344ac8e8d51:bucket_3".into()))
        );
        assert_eq!(s.viewport, Some(Viewport { x0: 10.0, x1: 90.5 }));
        assert_eq!(
            s.filter,
            Some(Filter::Decision(Action::Split, Reason::Capacity))
        );
        assert_eq!(s.search, "wq");
    }

    #[test]
    fn bad_values_are_explained_not_applied() {
        let (s, problems) = UrlState::parse(
            "cap=0&mid=-5&mcd=1e3&sel=x&filter=nope&plans=weird&x0=5&x1=5&limit_mb=abc&graph=-1&tags=all&gpu=tpu&gpn=0&intra=-3",
        );
        assert_eq!(s.settings.cap_bytes, None);
        assert_eq!(s.settings.max_input_distance, None);
        assert_eq!(
            s.settings.max_consumer_distance,
            Some(1000),
            "1e3 is a whole number"
        );
        assert_eq!(s.selection, None);
        assert_eq!(s.filter, None);
        assert_eq!(s.settings.plans, PlansMode::Dump);
        assert_eq!(s.viewport, None);
        assert_eq!(s.limit_mb, None);
        assert_eq!(s.graph, None);
        let text = problems.join("\n");
        for needle in [
            "cap=0",
            "mid=-5",
            "sel=x",
            "filter=nope",
            "plans=weird",
            "x0=5",
            "limit_mb=abc",
            "graph=-1",
            "tags=all",
            "gpu=tpu",
            "gpn=0",
            "intra=-3",
        ] {
            assert!(text.contains(needle), "{needle} not explained in:\n{text}");
        }
    }

    #[test]
    fn unknown_parameters_survive() {
        let (s, _) = UrlState::parse("example=mlp&base=x.json&view=compare");
        assert_eq!(
            s.other,
            vec![
                ("base".into(), "x.json".into()),
                ("view".into(), "compare".into())
            ]
        );
        assert!(s.to_query().contains("base=x.json&view=compare"));
    }

    #[test]
    fn the_embed_link_opens_the_same_view_in_the_app() {
        let (s, _) = UrlState::parse("example=mlp&cap=5000&embed=timeline&x0=1&x1=9");
        let full = s.without_embed().to_query();
        assert!(!full.contains("embed"));
        assert!(full.contains("cap=5000") && full.contains("x0=1.00"));
    }
}
