//! The panels, one file each: small function components with props and callbacks, reading
//! the state the app's reducer holds (`crate::state`).

pub mod chart;
pub mod controls;
pub mod cost;
pub mod detail;
pub mod embed;
pub mod graphs;
pub mod loader;
pub mod overview;
pub mod status;
pub mod table;
pub mod tags;

use commlens::identity::Source;
use commlens::timeline::collectives::source_label;
use yew::prelude::*;

/// A role with its colour and provenance badge.
pub fn role_badge(role: Option<&str>, source: Option<Source>) -> Html {
    let colour = commlens::timeline::role_colour(role).hex();
    let label = source_label(source);
    html! {
        <span class="role">
            <span class="swatch" style={format!("background:{colour}")} aria-hidden="true"></span>
            { role.unwrap_or("unclassified").to_string() }
            if source.is_some() {
                <span class={classes!("badge", label)}>{ label }</span>
            }
        </span>
    }
}
