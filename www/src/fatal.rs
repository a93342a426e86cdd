//! If the app ever panics (a bug: no input should make it), the page says so and keeps what
//! it showed: the last good view stays on screen under the message, which asks for a reload.
//!
//! The wasm build aborts on a panic (`panic = "abort"`), so nothing runs after the hook; the
//! hook writes the message straight into the page's `#fatal` element (index.html), outside
//! the app's own DOM. index.html also catches a wasm trap that reaches the page without a
//! panic (running out of memory) and shows the same banner.

use wasm_bindgen::prelude::*;

/// Installs the panic hook (through yew, which would otherwise install its own).
pub fn install() {
    yew::set_custom_panic_hook(Box::new(|info| {
        let message = format!("{info}");
        show(&message);
        web_sys::console::error_1(&format!("commlens panicked: {message}").into());
    }));
}

/// Shows the banner with `message`.
fn show(message: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Some(el) = doc.get_element_by_id("fatal") else {
        return;
    };
    el.set_text_content(Some(&format!(
        "commlens stopped on an internal error, so this page no longer responds; what you see \
         is the last good view. Reload the page to continue (your link keeps the view). Please \
         report it with the dump if you can: {message}"
    )));
    let _ = el.remove_attribute("hidden");
    let _ = el.set_attribute("data-message", message);
}

/// Panics on purpose: how the browser tests check that a panic shows the banner and keeps
/// the view (`import('./commlens_www.js')` in the page, then `debug_panic()`).
#[wasm_bindgen]
pub fn debug_panic(message: &str) {
    panic!("debug_panic: {message}");
}
