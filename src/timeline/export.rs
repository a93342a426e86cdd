//! What an exported timeline, trace or plan records about how it was made: the dump, the
//! planner arguments, the view. The SVG carries it in `<metadata>` and its `<title>`, the
//! Chrome trace in `otherData`; the plan report stays exactly the reference's, so the app
//! writes these settings beside it, in their own file.

use super::scene::Viewport;
use super::svg::SvgMeta;
use serde_json::{json, Map, Value};

/// The `format` of the settings object.
pub const FORMAT: &str = "commlens.settings";

/// How an export was made.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExportSettings {
    /// What made it (`commlens render`, `commlens app`).
    pub tool: String,
    /// The dump: a file name or the URL it was read from.
    pub dump: String,
    /// The planner arguments in the `args.json` format (`commlens plan --args`): what the
    /// user set; a key it lacks falls back to the dump's own.
    pub args: Map<String, Value>,
    /// Where the FSDP tags came from when not the dump (`roles`: `--tags roles`).
    pub tags: Option<String>,
    /// For a TORCH_TRACE log: which of its graphs (`--graph K`).
    pub graph: Option<usize>,
    /// The graph positions shown, when it is a picture.
    pub viewport: Option<Viewport>,
    pub width: Option<u32>,
    /// A link that reproduces the view in the app.
    pub view_url: Option<String>,
    /// The hardware of the time estimates shown with it (`cost::report::hardware_json`),
    /// when there were any.
    pub hardware: Option<Value>,
}

impl ExportSettings {
    /// The settings as a JSON object (`format`, `version`, then the fields).
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "format": FORMAT,
            "version": 1,
            "tool": self.tool,
            "dump": self.dump,
            "args": Value::Object(self.args.clone()),
        });
        if let Some(tags) = &self.tags {
            v["tags"] = json!(tags);
        }
        if let Some(graph) = self.graph {
            v["graph"] = json!(graph);
        }
        if let Some(vp) = self.viewport {
            v["viewport"] = json!({"from": vp.x0, "to": vp.x1});
        }
        if let Some(w) = self.width {
            v["width"] = json!(w);
        }
        if let Some(url) = &self.view_url {
            v["view_url"] = json!(url);
        }
        if let Some(hw) = &self.hardware {
            v["hardware"] = hw.clone();
        }
        v
    }

    /// The settings in a line of words, for a document title.
    pub fn summary(&self) -> String {
        let args = if self.args.is_empty() {
            "the dump's planner arguments".to_string()
        } else {
            format!(
                "planner arguments {}",
                serde_json::to_string(&self.args).unwrap_or_default()
            )
        };
        let mut s = format!("{}: bucket timeline, {args}", self.dump);
        if let Some(vp) = self.viewport {
            s.push_str(&format!(", graph positions {:.0}–{:.0}", vp.x0, vp.x1));
        }
        s
    }

    /// What an SVG export records.
    pub fn svg_meta(&self) -> SvgMeta {
        SvgMeta {
            title: self.summary(),
            metadata_json: self.to_json().to_string(),
        }
    }
}
