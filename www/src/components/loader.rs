//! Opening a dump: a file picker (a real button, reachable by keyboard), the built-in
//! examples, a URL box (absolute or relative to the page); and the first screen, which says
//! how to make a dump.

use crate::url_state::SourceRef;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// Built-in examples from the exporter's demo (copied into the site by `cargo xtask build`):
/// key, path, title.
pub const EXAMPLES: &[(&str, &str, &str)] = &[
    ("mlp", "examples/mlp_fsdp.json", "2-layer MLP, FSDP"),
    ("llama", "examples/llama_fsdp.json.gz", "Llama, FSDP (gzip)"),
    (
        "trace",
        "examples/simple_fsdp_trace.log.gz",
        "TORCH_TRACE log, SimpleFSDP",
    ),
];

/// What the loader asks the app to open.
#[derive(Clone, Debug, PartialEq)]
pub enum Open {
    Source(SourceRef),
    /// A picked or dropped file, with when the user let go of it.
    File(web_sys::File, f64),
}

/// The path of a built-in example, or why there is none.
pub fn example_path(key: &str) -> Result<&'static str, String> {
    EXAMPLES
        .iter()
        .find(|e| e.0 == key)
        .map(|e| e.1)
        .ok_or_else(|| {
            format!(
                "there is no built-in example “{key}”; the examples are {} (for example ?example={})",
                EXAMPLES
                    .iter()
                    .map(|(k, _, t)| format!("“{k}” ({t})"))
                    .collect::<Vec<_>>()
                    .join(", "),
                EXAMPLES[0].0
            )
        })
}

#[derive(Properties, PartialEq)]
pub struct LoaderProps {
    pub on_open: Callback<Open>,
}

#[function_component(Loader)]
pub fn loader(props: &LoaderProps) -> Html {
    let picker = use_node_ref();
    let url = use_state(String::new);
    let pick = {
        let picker = picker.clone();
        Callback::from(move |_: MouseEvent| {
            if let Some(input) = picker.cast::<HtmlInputElement>() {
                input.click();
            }
        })
    };
    let onchange = {
        let cb = props.on_open.clone();
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            if let Some(file) = input.files().and_then(|l| l.get(0)) {
                cb.emit(Open::File(file, crate::browser::now_ms()));
            }
            // The same file can be picked again.
            input.set_value("");
        })
    };
    let onsubmit = {
        let cb = props.on_open.clone();
        let url = url.clone();
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let u = url.trim().to_string();
            if !u.is_empty() {
                cb.emit(Open::Source(SourceRef::Url(u)));
            }
        })
    };
    let oninput = {
        let url = url.clone();
        Callback::from(move |e: InputEvent| {
            url.set(e.target_unchecked_into::<HtmlInputElement>().value())
        })
    };
    html! {
        <div class="loader">
            <button class="open-file" onclick={pick}>{"Open file…"}</button>
            <input ref={picker} id="file" class="visually-hidden file" type="file" tabindex="-1" aria-hidden="true"
                accept=".json,.gz,.log,.txt,application/json,application/gzip,text/plain" {onchange} />
            { for EXAMPLES.iter().map(|(key, _, title)| {
                let cb = props.on_open.clone();
                let key = key.to_string();
                let onclick = Callback::from(move |_: MouseEvent| cb.emit(Open::Source(SourceRef::Example(key.clone()))));
                html! { <button class="example" {onclick}>{ format!("Example: {title}") }</button> }
            }) }
            <form class="urlform" {onsubmit}>
                <input name="src" type="text" inputmode="url" aria-label="Dump URL (absolute, or relative to this page)"
                    placeholder="https://…/dump.json.gz, dumps/step0.json or a TORCH_TRACE log" value={(*url).clone()} {oninput} />
                <button type="submit">{"Open URL"}</button>
            </form>
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct WelcomeProps {
    pub limit_mb: u64,
    pub on_limit: Callback<Option<u64>>,
}

/// The first screen: what to open and how to make it.
#[function_component(Welcome)]
pub fn welcome(props: &WelcomeProps) -> Html {
    let error = use_state(|| None::<String>);
    let oninput = {
        let cb = props.on_limit.clone();
        let error = error.clone();
        Callback::from(move |e: InputEvent| {
            let text = e.target_unchecked_into::<HtmlInputElement>().value();
            match crate::model::parse_count(&text, 1) {
                Ok(v) => {
                    error.set(None);
                    cb.emit(v);
                }
                Err(e) => error.set(Some(e)),
            }
        })
    };
    html! {
        <div class="welcome">
            <p class="lead">{"Drop a graph dump (.json or .json.gz) or a TORCH_TRACE log (plain or gzip) anywhere on this page, open a file, a URL, or one of the examples."}</p>
            <h2>{"Making a dump"}</h2>
            <p>{"The exporter writes a dump from a live torch.fx GraphModule (it needs only torch):"}</p>
            <pre class="snippet"><code>{"pip install ./python      # from the commlens repository\n\nimport commlens_dump\ncommlens_dump.dump(gm, \"step0.json.gz\", group_ranks={\"fsdp\": [0, 1, 2, 3]}, model=model)"}</code></pre>
            <p>{"Or open the structured trace logs torch.compile already writes: "}<code>{"TORCH_TRACE=/tmp/trace python train.py"}</code>{" leaves one log per rank in /tmp/trace; each post-grad graph in it can be picked."}</p>
            <p>{"For every graph Inductor compiles, the exporter: "}<code>{"commlens_dump.install(\"dumps/\")"}</code>{". "}
               <a href="docs/exporter.md">{"The exporter's guide"}</a>{" · "}<a href="docs/app.md">{"this app's guide"}</a></p>
            <h2>{"Reviewing a change"}</h2>
            <p id="review-links"><a href="?view=compare">{"Compare two plans"}</a>{" (two dumps or reports, or one dump under two settings) · "}
               <a href="?view=audit">{"audit a transform"}</a>{" (a graph before and after a compiler pass) · "}
               <a href="?view=ranks">{"check ranks"}</a>{" (every rank's dump, trace log or report at once)."}</p>
            <details class="limits">
                <summary>{"Limits"}</summary>
                <label for="limit-mb">{"Largest dump to read (MiB)"}</label>
                <input id="limit-mb" type="text" inputmode="numeric" value={props.limit_mb.to_string()} {oninput}
                    aria-invalid={error.is_some().to_string()} />
                if let Some(e) = &*error { <p class="field-error" role="alert">{ e.clone() }</p> }
            </details>
        </div>
    }
}
