//! Where the planner's FSDP tags come from: the dump's own (the reference's behaviour), or
//! derived from semantic roles (`commlens plan --tags roles`), for stock PyTorch graphs that
//! no FSDP pass tagged. Says what the plan rests on (the core's words), and offers the switch
//! by itself when the dump's tags planned nothing but its collectives have FSDP roles. The
//! choice is kept in the link (`tags=roles`).

use commlens::TagMode;
use web_sys::HtmlSelectElement;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct TagsProps {
    pub mode: TagMode,
    /// The core's note: what derived tags rest on, or why the dump's tags planned nothing.
    pub note: Option<AttrValue>,
    pub on_mode: Callback<TagMode>,
}

#[function_component(Tags)]
pub fn tags(props: &TagsProps) -> Html {
    let onchange = {
        let cb = props.on_mode.clone();
        Callback::from(move |e: Event| {
            let select: HtmlSelectElement = e.target_unchecked_into();
            if let Some(mode) = TagMode::parse(&select.value()) {
                cb.emit(mode);
            }
        })
    };
    let offer = (props.mode == TagMode::Dump && props.note.is_some()).then(|| {
        let cb = props.on_mode.clone();
        Callback::from(move |_: MouseEvent| cb.emit(TagMode::Roles))
    });
    let option = |mode: TagMode, text: &'static str| {
        html! { <option value={mode.as_str()} selected={props.mode == mode}>{ text }</option> }
    };
    html! {
        <section class="tags" id="tags-panel" aria-label="FSDP tags">
            <label for="tags">{"FSDP tags"}</label>
            <select id="tags" {onchange}>
                { option(TagMode::Dump, "as the dump carries them") }
                { option(TagMode::Roles, "derived from semantic roles (--tags roles)") }
            </select>
            if let Some(note) = &props.note {
                <p id="tags-note" class={classes!("tags-note", offer.is_some().then_some("offer"))}>{ note.clone() }</p>
            }
            if let Some(onclick) = offer {
                <button id="tags-offer" {onclick}>{"Plan from roles"}</button>
            }
        </section>
    }
}
