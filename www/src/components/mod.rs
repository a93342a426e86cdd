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
    let mut out = String::new();
    push_role_badge(&mut out, role, source);
    Html::from_html_unchecked(out.into())
}

/// [`role_badge`] as HTML text (the collectives table writes its rows as text).
pub fn push_role_badge(out: &mut String, role: Option<&str>, source: Option<Source>) {
    let colour = commlens::timeline::role_colour(role).hex();
    out.push_str("<span class=\"role\"><span class=\"swatch\" style=\"background:");
    out.push_str(&colour);
    out.push_str("\" aria-hidden=\"true\"></span>");
    push_html_escaped(out, role.unwrap_or("unclassified"));
    if source.is_some() {
        let label = source_label(source);
        out.push_str("<span class=\"badge ");
        out.push_str(label);
        out.push_str("\">");
        out.push_str(label);
        out.push_str("</span>");
    }
    out.push_str("</span>");
}

/// `s` as HTML text or a quoted attribute value: the five characters that markup reads
/// escaped, everything else as it is (the browser's parser, unlike XML, takes any text).
pub fn push_html_escaped(out: &mut String, s: &str) {
    let mut rest = s;
    while let Some(at) = rest.find(['<', '>', '&', '"', '\'']) {
        out.push_str(&rest[..at]);
        out.push_str(match rest.as_bytes()[at] {
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'&' => "&amp;",
            b'"' => "&quot;",
            _ => "&#39;",
        });
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
}
