//! The embed (`?embed=timeline`): the chart alone, a title line with a link to the full app
//! at the same view, the detail of a click below, and the page's height sent to the host
//! (`{type: "commlens:height", height}`) whenever it changes, so the host can size the iframe
//! and nothing is cut off.

use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct EmbedProps {
    pub title: AttrValue,
    /// The same view in the full app.
    pub open_url: AttrValue,
    pub children: Html,
}

/// Sends the root's height to the host.
fn report(root: &NodeRef) {
    if let Some(el) = root.cast::<web_sys::Element>() {
        let r = el.get_bounding_client_rect();
        crate::browser::post_height(r.height() + r.top().max(0.0));
    }
}

#[function_component(Embed)]
pub fn embed(props: &EmbedProps) -> Html {
    let root = use_node_ref();
    // After every render: browsers pause resize observers in frames scrolled out of view, and
    // the host must know the height before the reader scrolls there.
    {
        let root = root.clone();
        use_effect(move || report(&root));
    }
    {
        let root = root.clone();
        use_effect_with((), move |_| {
            let observer = root.cast::<web_sys::Element>().and_then(|el| {
                let watched = root.clone();
                let cb = wasm_bindgen::closure::Closure::<dyn FnMut(js_sys::Array)>::new(
                    move |_: js_sys::Array| report(&watched),
                );
                let o =
                    web_sys::ResizeObserver::new(wasm_bindgen::JsCast::unchecked_ref(cb.as_ref()))
                        .ok()?;
                o.observe(&el);
                Some((o, cb))
            });
            move || {
                if let Some((o, _cb)) = observer {
                    o.disconnect();
                }
            }
        });
    }
    html! {
        <div class="embed" ref={root}>
            <div class="embed-bar">
                <span class="embed-title">{ props.title.clone() }</span>
                <a class="open-full" href={props.open_url.clone()} target="_blank" rel="noopener">{"Open in commlens ↗"}</a>
            </div>
            { props.children.clone() }
        </div>
    }
}
