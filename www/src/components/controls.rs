//! The planner controls: `cap_bytes`, the two distances and the module plans, re-planning on
//! every valid change. What cannot be used is said next to the control that holds it (and is
//! not applied: the plan on screen stays the last valid one). Also sharing and exports.

use crate::model::{self, Loaded, PlansMode, Settings, Shared};
use web_sys::{HtmlInputElement, HtmlSelectElement, HtmlTextAreaElement};
use yew::prelude::*;

/// What an export button asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Export {
    /// The timeline SVG, recording its settings.
    Svg,
    /// The plan report JSON, exactly `commlens plan`'s.
    Report,
    /// The settings the report was made with, beside it.
    Settings,
    /// The Chrome trace, recording its settings.
    Trace,
}

#[derive(Properties, PartialEq)]
pub struct ControlsProps {
    pub loaded: Shared<Loaded>,
    pub settings: Settings,
    pub share_url: AttrValue,
    pub on_settings: Callback<Settings>,
    pub on_export: Callback<Export>,
}

/// A number field's text and what is wrong with it.
#[derive(Clone, Default, PartialEq)]
struct Draft {
    text: String,
    error: Option<String>,
}

fn shown(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

#[function_component(Controls)]
pub fn controls(props: &ControlsProps) -> Html {
    let s = &props.settings;
    let drafts = use_state(|| {
        [s.cap_bytes, s.max_input_distance, s.max_consumer_distance].map(|v| Draft {
            text: shown(v),
            error: None,
        })
    });
    let plans_text = use_state(|| s.plans.text().to_string());
    // The mode chosen in the list: it shows its text box even before its text is valid.
    let plans_key = use_state(|| s.plans.key());
    let plans_error = use_state(|| None::<String>);
    let copied = use_state(|| false);
    // Settings changed elsewhere (a new dump, a link): the fields follow, unless what is typed
    // already means the same.
    {
        let drafts = drafts.clone();
        let plans_text = plans_text.clone();
        let plans_error = plans_error.clone();
        let plans_key = plans_key.clone();
        use_effect_with(props.settings.clone(), move |s| {
            let values = [s.cap_bytes, s.max_input_distance, s.max_consumer_distance];
            let mut next = (*drafts).clone();
            let mut changed = false;
            for (d, v) in next.iter_mut().zip(values) {
                let minimum = 0;
                let means = model::parse_count(&d.text, minimum).ok().flatten();
                if means != v && d.error.is_none() {
                    *d = Draft {
                        text: shown(v),
                        error: None,
                    };
                    changed = true;
                }
            }
            if changed {
                drafts.set(next);
            }
            if plans_error.is_none() {
                if *plans_key != s.plans.key() {
                    plans_key.set(s.plans.key());
                }
                if s.plans.names_modules() && *plans_text != s.plans.text() {
                    plans_text.set(s.plans.text().to_string());
                }
            }
        });
    }
    let loaded = &props.loaded;
    let dump_policy = loaded
        .graph
        .dump
        .planner
        .as_ref()
        .and_then(|p| p.get("policy"))
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    let placeholder = |k: &str| match dump_policy.get(k) {
        Some(v) if !v.is_null() => format!("dump: {v}"),
        _ => "no limit".to_string(),
    };
    let number = |slot: usize, id: &'static str, label: &'static str, minimum: u64| {
        let draft = drafts[slot].clone();
        let oninput = {
            let drafts = drafts.clone();
            let settings = props.settings.clone();
            let on_settings = props.on_settings.clone();
            Callback::from(move |e: InputEvent| {
                let text = e.target_unchecked_into::<HtmlInputElement>().value();
                let parsed = model::parse_count(&text, minimum);
                let mut next = (*drafts).clone();
                next[slot] = Draft {
                    text,
                    error: parsed.clone().err().map(|e| {
                        if minimum == 1 && e.contains("too small") {
                            format!("{e} ({label} must be positive; leave it empty for no limit)")
                        } else {
                            e
                        }
                    }),
                };
                drafts.set(next);
                if let Ok(v) = parsed {
                    let mut s = settings.clone();
                    match slot {
                        0 => s.cap_bytes = v,
                        1 => s.max_input_distance = v,
                        _ => s.max_consumer_distance = v,
                    }
                    on_settings.emit(s);
                }
            })
        };
        let error_id = format!("{id}-error");
        html! {
            <div class={classes!("field", draft.error.is_some().then_some("invalid"))}>
                <label for={id}>{ label }</label>
                <input {id} class={id} type="text" inputmode="numeric" autocomplete="off" placeholder={placeholder(label)}
                    value={draft.text.clone()} {oninput}
                    aria-invalid={draft.error.is_some().to_string()}
                    aria-describedby={draft.error.is_some().then(|| error_id.clone())} />
                if let Some(e) = &draft.error {
                    <p class="field-error" id={error_id} role="alert">{ format!("Not applied: {e}") }</p>
                }
            </div>
        }
    };
    let key = *plans_key;
    let on_plans_key = {
        let settings = props.settings.clone();
        let on_settings = props.on_settings.clone();
        let plans_text = plans_text.clone();
        let plans_error = plans_error.clone();
        let loaded = props.loaded.clone();
        let plans_key = plans_key.clone();
        Callback::from(move |e: Event| {
            let key = e.target_unchecked_into::<HtmlSelectElement>().value();
            let mut text = (*plans_text).clone();
            if text.is_empty() && key == "blocks" {
                text = default_block_types(&loaded);
            }
            let Some(mode) = PlansMode::from_key(&key, text.clone()) else {
                return;
            };
            plans_key.set(mode.key());
            plans_text.set(text);
            match model::plans_problem(&loaded.graph, &mode) {
                Some(problem) => plans_error.set(Some(problem)),
                None => {
                    plans_error.set(None);
                    let mut s = settings.clone();
                    s.plans = mode;
                    on_settings.emit(s);
                }
            }
        })
    };
    let on_plans_text = {
        let settings = props.settings.clone();
        let on_settings = props.on_settings.clone();
        let plans_text = plans_text.clone();
        let plans_error = plans_error.clone();
        let loaded = props.loaded.clone();
        let key = key.to_string();
        move |text: String| {
            plans_text.set(text.clone());
            let Some(mode) = PlansMode::from_key(&key, text) else {
                return;
            };
            match model::plans_problem(&loaded.graph, &mode) {
                Some(problem) => plans_error.set(Some(problem)),
                None => {
                    plans_error.set(None);
                    let mut s = settings.clone();
                    s.plans = mode;
                    on_settings.emit(s);
                }
            }
        }
    };
    let plans_invalid = plans_error.is_some();
    let plans_described = plans_invalid.then(|| AttrValue::from("ptext-error"));
    let export = |kind: Export| {
        let cb = props.on_export.clone();
        Callback::from(move |_: MouseEvent| cb.emit(kind))
    };
    let copy = {
        let url = props.share_url.clone();
        let copied = copied.clone();
        Callback::from(move |_: MouseEvent| {
            crate::browser::copy_text(&url);
            copied.set(true);
        })
    };
    {
        let copied = copied.clone();
        use_effect_with(props.share_url.clone(), move |_| {
            if *copied {
                copied.set(false);
            }
        });
    }
    html! {
        <section class="controls" aria-label="Planner">
            <h2>{"Planner"}</h2>
            <div class="source">
                <span class="file" title={loaded.label.clone()}>{ loaded.label.clone() }</span>
                <span class="muted">{ format!(" · {} nodes · {}", loaded.graph.len(), commlens::timeline::scene::human_bytes(loaded.bytes as u64)) }</span>
            </div>
            { number(0, "cap", "cap_bytes", 1) }
            { number(1, "mid", "max_input_distance", 0) }
            { number(2, "mcd", "max_consumer_distance", 0) }
            <div class={classes!("field", plans_invalid.then_some("invalid"))}>
                <label for="plans">{"module plans"}</label>
                <select id="plans" class="plans" onchange={on_plans_key}>
                    { for PlansMode::KEYS.iter().map(|(k, t)| html! { <option value={*k} selected={*k == key}>{ *t }</option> }) }
                </select>
            </div>
            if key == "blocks" {
                <div class={classes!("field", plans_invalid.then_some("invalid"))}>
                    <label for="ptext">{"block types (comma-separated)"}</label>
                    <input id="ptext" class="ptext" type="text" value={(*plans_text).clone()}
                        aria-invalid={plans_invalid.to_string()} aria-describedby={plans_described.clone()}
                        oninput={Callback::from(move |e: InputEvent| on_plans_text(e.target_unchecked_into::<HtmlInputElement>().value()))} />
                </div>
            } else if key == "explicit" {
                <div class={classes!("field", plans_invalid.then_some("invalid"))}>
                    <label for="ptext">{"groups (one per line, FQNs comma-separated)"}</label>
                    <textarea id="ptext" class="ptext" rows="4" value={(*plans_text).clone()}
                        aria-invalid={plans_invalid.to_string()} aria-describedby={plans_described.clone()}
                        oninput={Callback::from(move |e: InputEvent| on_plans_text(e.target_unchecked_into::<HtmlTextAreaElement>().value()))} />
                </div>
            }
            if let Some(e) = &*plans_error {
                <p class="field-error" id="ptext-error" role="alert">{ format!("Not applied: {e}") }</p>
            }
            <div class="share">
                <button id="copy-link" class="copy-link" onclick={copy}>{ if *copied { "Link copied" } else { "Copy link" } }</button>
                <input id="share-url" class="share-url" aria-label="Link to this view" readonly=true value={props.share_url.clone()} />
                if loaded.source.is_none() {
                    <p class="muted">{"A dropped file cannot be linked: the link reproduces the settings, selection and zoom once the same file is loaded."}</p>
                }
            </div>
            if loaded.source.is_some() {
                // The review page's base plan is the dump's own settings (`bplans=dump`).
                <p class="compare-link"><a id="compare-link" href={format!("{}{}bplans=dump",
                    props.share_url, if props.share_url.contains('?') { "&" } else { "?" })}>
                    {"Compare these settings with the dump's own"}</a></p>
            }
            <div class="exports">
                <button id="export-svg" class="export-svg" onclick={export(Export::Svg)}>{"Timeline SVG"}</button>
                <button id="export-report" class="export-report" onclick={export(Export::Report)}>{"Plan report JSON"}</button>
                <button id="export-settings" class="export-settings" onclick={export(Export::Settings)}>{"Plan settings JSON"}</button>
                <button id="export-trace" class="export-trace" onclick={export(Export::Trace)}>{"Chrome trace"}</button>
            </div>
        </section>
    }
}

/// The block type to offer first: a module class named like a block or layer.
fn default_block_types(loaded: &Loaded) -> String {
    loaded
        .graph
        .dump
        .modules
        .iter()
        .find(|m| m.type_name.ends_with("Block") || m.type_name.ends_with("Layer"))
        .map(|m| {
            m.type_name
                .rsplit('.')
                .next()
                .unwrap_or(&m.type_name)
                .to_string()
        })
        .unwrap_or_default()
}
