//! What is happening: a progress line, an error (the previous view stays), a notice.

use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct StatusProps {
    pub busy: Option<AttrValue>,
    pub error: Option<AttrValue>,
    pub notice: Option<AttrValue>,
    /// Whether a previous graph is still on screen.
    pub showing: bool,
    pub on_dismiss_error: Callback<()>,
    pub on_dismiss_notice: Callback<()>,
}

#[function_component(Status)]
pub fn status(props: &StatusProps) -> Html {
    let dismiss = |cb: &Callback<()>| {
        let cb = cb.clone();
        Callback::from(move |_: MouseEvent| cb.emit(()))
    };
    html! {
        <>
            if let Some(b) = &props.busy {
                <div class="busy" id="busy" role="status"><span class="spinner" aria-hidden="true"></span>{ b.clone() }</div>
            }
            if let Some(e) = &props.error {
                <div class="error" id="error" role="alert">
                    <button class="dismiss" aria-label="Dismiss the error" onclick={dismiss(&props.on_dismiss_error)}>{"×"}</button>
                    <strong>{"Could not load: "}</strong>{ e.clone() }
                    if props.showing { <em>{" (still showing the previous graph)"}</em> }
                </div>
            }
            if let Some(n) = &props.notice {
                <div class="notice" id="notice" role="status">
                    <button class="dismiss" aria-label="Dismiss the notice" onclick={dismiss(&props.on_dismiss_notice)}>{"×"}</button>
                    { n.clone() }
                </div>
            }
        </>
    }
}
