//! Thin helpers over web-sys: fetching with progress and a size limit, reading files,
//! downloads, the clipboard, the address bar, timing, telling an embedding page our height.

use js_sys::{Array, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// The page's window. The app runs only in a page, where there is always one.
pub fn window() -> web_sys::Window {
    web_sys::window().expect("the app runs in a browser window")
}

pub fn document() -> Option<web_sys::Document> {
    web_sys::window()?.document()
}

/// Eight bytes from the browser's random source (`crypto.getRandomValues`), if it has one.
pub fn random_u64() -> Option<u64> {
    let mut bytes = [0u8; 8];
    web_sys::window()?
        .crypto()
        .ok()?
        .get_random_values_with_u8_array(&mut bytes)
        .ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// `performance.now()` in milliseconds.
pub fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

pub fn js_err(e: JsValue) -> String {
    e.as_string()
        .or_else(|| {
            e.dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
        })
        .unwrap_or_else(|| format!("{e:?}"))
}

/// Yields to the browser so it can paint (a zero-delay timeout).
pub async fn yield_now() {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        let _ = window().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 0);
    });
    let _ = JsFuture::from(p).await;
}

/// Calls `f` once after `ms` milliseconds; returns the timer id (for [`cancel_timeout`]).
pub fn set_timeout(ms: i32, f: impl FnOnce() + 'static) -> Option<i32> {
    let cb = Closure::once_into_js(f);
    window()
        .set_timeout_with_callback_and_timeout_and_arguments_0(cb.unchecked_ref(), ms)
        .ok()
}

pub fn cancel_timeout(id: i32) {
    window().clear_timeout_with_handle(id);
}

/// Why a fetch got no response, in plain words.
fn unreachable(url: &str, why: &str) -> String {
    format!(
        "could not fetch {url}: {why} — the server is unreachable, or it does not allow \
         this page to read it (CORS: the host must send Access-Control-Allow-Origin). \
         Download the file and drop it here instead."
    )
}

fn http_status(url: &str, status: u16, text: &str) -> String {
    format!("could not fetch {url}: HTTP {status} {text}")
}

fn body_failed(url: &str, why: &str) -> String {
    format!("reading {url}: {why}")
}

/// The fetching worker of [`fetch_off_thread`]: streams the body into one buffer (sized from
/// Content-Length when there is one), stops past the limit, and posts the buffer back
/// transferred, or what went wrong for the page to explain.
const FETCH_WORKER: &str = r#"
onmessage = async (e) => {
  const { url, limit } = e.data;
  let resp;
  try { resp = await fetch(url); } catch (err) { postMessage({ kind: 'unreachable', why: String(err && err.message || err) }); return; }
  if (!resp.ok) { postMessage({ kind: 'status', status: resp.status, text: resp.statusText }); return; }
  try {
    const header = resp.headers.get('content-length');
    const total = header === null ? NaN : Number(header);
    if (total > limit) { postMessage({ kind: 'limit', size: total }); return; }
    let buf = new Uint8Array(Number.isFinite(total) ? total : 1 << 20);
    let len = 0;
    const reader = resp.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (len + value.length > limit) { reader.cancel(); postMessage({ kind: 'limit', size: len + value.length }); return; }
      if (len + value.length > buf.length) {
        const grown = new Uint8Array(Math.min(Math.max(buf.length * 2, len + value.length), limit));
        grown.set(buf.subarray(0, len));
        buf = grown;
      }
      buf.set(value, len);
      len += value.length;
    }
    const bytes = len === buf.length ? buf.buffer : buf.slice(0, len).buffer;
    postMessage({ kind: 'ok', bytes }, [bytes]);
  } catch (err) { postMessage({ kind: 'body', why: String(err && err.message || err) }); }
};
"#;

/// Fetches `url` (absolute) in a worker of its own, so that the download goes on while this
/// page's thread is busy: the compare view reads and plans one dump while the other
/// downloads. The same limit and explanations as [`fetch_bytes`]. The promise resolves to a
/// `Uint8Array` of the body (not yet copied into the wasm memory) and rejects with the
/// explanation as a string. Where a worker cannot be made (a content policy), the fetch runs
/// on this thread.
pub fn fetch_off_thread(url: &str, limit: u64) -> js_sys::Promise {
    match fetch_worker() {
        Ok(worker) => worker_fetch(worker, url.to_string(), limit),
        Err(_) => {
            let url = url.to_string();
            wasm_bindgen_futures::future_to_promise(async move {
                let bytes = fetch_bytes(&url, limit, |_, _| {})
                    .await
                    .map_err(|e| JsValue::from_str(&e))?;
                Ok(Uint8Array::from(&bytes[..]).into())
            })
        }
    }
}

fn fetch_worker() -> Result<web_sys::Worker, JsValue> {
    script_worker(FETCH_WORKER)
}

/// A worker running `script` (from a blob: URL, so the site needs no second file).
pub fn script_worker(script: &str) -> Result<web_sys::Worker, JsValue> {
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("text/javascript");
    let parts = Array::of1(&JsValue::from_str(script));
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob)?;
    let worker = web_sys::Worker::new(&url);
    let _ = web_sys::Url::revoke_object_url(&url);
    worker
}

fn worker_fetch(worker: web_sys::Worker, url: String, limit: u64) -> js_sys::Promise {
    js_sys::Promise::new(&mut |resolve, reject| {
        let (w, url2, reject1) = (worker.clone(), url.clone(), reject.clone());
        let on_message = Closure::once_into_js(move |e: web_sys::MessageEvent| {
            w.terminate();
            let data = e.data();
            let field = |k: &str| js_sys::Reflect::get(&data, &k.into()).unwrap_or_default();
            let text = |k: &str| field(k).as_string().unwrap_or_default();
            let outcome = match text("kind").as_str() {
                "ok" => Ok(Uint8Array::new(&field("bytes"))),
                "unreachable" => Err(unreachable(&url2, &text("why"))),
                "status" => Err(http_status(
                    &url2,
                    field("status").as_f64().unwrap_or(0.0) as u16,
                    &text("text"),
                )),
                "limit" => {
                    let size = field("size").as_f64().unwrap_or(f64::MAX) as u64;
                    Err(crate::limits::check(&url2, size, limit)
                        .err()
                        .unwrap_or_else(|| format!("{url2} is over the input-size limit")))
                }
                _ => Err(body_failed(&url2, &text("why"))),
            };
            let _ = match outcome {
                Ok(bytes) => resolve.call1(&JsValue::NULL, &bytes),
                Err(e) => reject1.call1(&JsValue::NULL, &JsValue::from_str(&e)),
            };
        });
        worker.set_onmessage(Some(on_message.unchecked_ref()));
        let (w, url3, reject2) = (worker.clone(), url.clone(), reject.clone());
        let on_error = Closure::once_into_js(move |_: web_sys::Event| {
            w.terminate();
            let _ = reject2.call1(
                &JsValue::NULL,
                &JsValue::from_str(&unreachable(&url3, "the fetching worker failed")),
            );
        });
        worker.set_onerror(Some(on_error.unchecked_ref()));
        let message = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&message, &"url".into(), &JsValue::from_str(&url));
        let _ = js_sys::Reflect::set(&message, &"limit".into(), &JsValue::from_f64(limit as f64));
        if let Err(e) = worker.post_message(&message) {
            worker.terminate();
            let _ = reject.call1(&JsValue::NULL, &JsValue::from_str(&js_err(e)));
        }
    })
}

/// Fetches `url`, calling `progress(received, total)` as the body streams in, and stopping
/// with an explanation past `limit` bytes. A network or CORS failure and an HTTP error status
/// are explained in plain words.
pub async fn fetch_bytes(
    url: &str,
    limit: u64,
    progress: impl Fn(usize, Option<usize>),
) -> Result<Vec<u8>, String> {
    let resp = JsFuture::from(window().fetch_with_str(url))
        .await
        .map_err(|e| unreachable(url, &js_err(e)))?;
    let resp: web_sys::Response = resp.dyn_into().map_err(js_err)?;
    if !resp.ok() {
        return Err(http_status(url, resp.status(), &resp.status_text()));
    }
    let total = resp
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|s| s.parse::<usize>().ok());
    if let Some(t) = total {
        crate::limits::check(url, t as u64, limit)?;
    }
    // Small bodies in one piece; large ones streamed, with progress and the limit.
    let small = total.is_some_and(|t| t < (4 << 20));
    let body = if small { None } else { resp.body() };
    let Some(body) = body else {
        let buf = JsFuture::from(resp.array_buffer().map_err(js_err)?)
            .await
            .map_err(js_err)?;
        let bytes = Uint8Array::new(&buf);
        crate::limits::check(url, bytes.length() as u64, limit)?;
        return Ok(bytes.to_vec());
    };
    let reader: web_sys::ReadableStreamDefaultReader = body
        .get_reader()
        .dyn_into()
        .map_err(|_| "not a stream reader".to_string())?;
    // Each piece is copied straight into the wasm memory, into room reserved from
    // Content-Length when there is one. Reserved, not zeroed: growing a `Vec` by `resize`
    // zeroed each piece before copying over it (70 ms of a 44 MB download's time in a
    // profile), and gathering the body in a JS buffer first cost a second copy of it (36 ms).
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(total.unwrap_or(1 << 20))
        .map_err(|_| format!("{url} is too large to read"))?;
    loop {
        let chunk = JsFuture::from(reader.read())
            .await
            .map_err(|e| body_failed(url, &js_err(e)))?;
        let done = js_sys::Reflect::get(&chunk, &"done".into()).map_err(js_err)?;
        if done.as_bool().unwrap_or(false) {
            break;
        }
        let value = js_sys::Reflect::get(&chunk, &"value".into()).map_err(js_err)?;
        let bytes: Uint8Array = value.dyn_into().map_err(js_err)?;
        let piece = bytes.length() as usize;
        let grown = out.len() as u64 + piece as u64;
        if let Err(e) = crate::limits::check(url, grown, limit) {
            let _ = reader.cancel();
            return Err(e);
        }
        if out.capacity() - out.len() < piece {
            out.try_reserve(piece.max(out.capacity()))
                .map_err(|_| format!("{url} is too large to read"))?;
        }
        // SAFETY: the room was reserved above, and the copy writes exactly `piece` bytes
        // there before the length takes them in.
        unsafe {
            bytes.raw_copy_to_ptr(out.as_mut_ptr().add(out.len()));
            out.set_len(out.len() + piece);
        }
        progress(out.len(), total);
    }
    Ok(out)
}

/// Reads a dropped or picked file, after checking its size against `limit`.
///
/// The room for its bytes is reserved and written to while the browser reads the file, which
/// leaves this thread idle: the fresh memory's pages are then faulted in before the copy
/// rather than during it.
pub async fn read_file(file: &web_sys::File, limit: u64) -> Result<Vec<u8>, String> {
    Ok(read_file_keeping(file, limit).await?.0)
}

/// [`read_file`], and the file's bytes as the browser read them (an `ArrayBuffer`), for the
/// page to hand on (transferred to a worker, not copied).
pub async fn read_file_keeping(
    file: &web_sys::File,
    limit: u64,
) -> Result<(Vec<u8>, js_sys::ArrayBuffer), String> {
    let (name, size) = (file.name(), file.size() as u64);
    crate::limits::check(&name, size, limit)?;
    let pending = file.array_buffer();
    let mut out: Vec<u8> = Vec::new();
    let too_large = |_| format!("{name} is too large to read");
    out.try_reserve_exact(size as usize).map_err(too_large)?;
    touch_pages(out.spare_capacity_mut());
    let buf = JsFuture::from(pending)
        .await
        .map_err(|e| format!("could not read {name}: {}", js_err(e)))?;
    let bytes = Uint8Array::new(&buf);
    let len = bytes.length() as usize;
    // The file may have changed since its size was read.
    crate::limits::check(&name, len as u64, limit)?;
    out.try_reserve_exact(len).map_err(too_large)?;
    let copied = bytes
        .copy_to_uninit(&mut out.spare_capacity_mut()[..len])
        .len();
    // SAFETY: `copy_to_uninit` wrote the first `copied` (= `len`) bytes of the spare room.
    unsafe { out.set_len(copied) };
    Ok((out, bytes.buffer()))
}

/// Writes a byte of each page of `room`, so that the engine commits the pages now.
fn touch_pages(room: &mut [std::mem::MaybeUninit<u8>]) {
    for page in room.chunks_mut(4096) {
        page[0].write(0);
    }
}

/// Offers `text` as a download named `name`.
pub fn download(name: &str, mime: &str, text: &str) -> Result<(), String> {
    let parts = Array::new();
    parts.push(&JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts).map_err(js_err)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(js_err)?;
    let doc = document().ok_or("no document")?;
    let a: web_sys::HtmlAnchorElement = doc
        .create_element("a")
        .map_err(js_err)?
        .dyn_into()
        .map_err(|_| "not an anchor")?;
    a.set_href(&url);
    a.set_download(name);
    a.click();
    let _ = web_sys::Url::revoke_object_url(&url);
    Ok(())
}

/// Copies `text` to the clipboard (best effort).
pub fn copy_text(text: &str) {
    let _ = window().navigator().clipboard().write_text(text);
}

/// The page's query string (with its `?`).
pub fn query_string() -> String {
    window().location().search().unwrap_or_default()
}

/// The page URL without its query.
pub fn base_url() -> String {
    let loc = window().location();
    format!(
        "{}{}",
        loc.origin().unwrap_or_default(),
        loc.pathname().unwrap_or_default()
    )
}

/// The page's URL with `query`.
pub fn url_with(query: &str) -> String {
    if query.is_empty() {
        base_url()
    } else {
        format!("{}?{query}", base_url())
    }
}

/// Replaces the address bar's query (no navigation), when it differs.
pub fn replace_query(query: &str) {
    let current = query_string();
    if current.strip_prefix('?').unwrap_or(&current) == query {
        return;
    }
    if let Ok(history) = window().history() {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url_with(query)));
    }
}

/// Resolves `url` against the page (relative paths like `dumps/a.json` work).
pub fn absolute(url: &str) -> String {
    web_sys::Url::new_with_base(url, &window().location().href().unwrap_or_default())
        .map(|u| u.href())
        .unwrap_or_else(|_| url.to_string())
}

/// Calls `f` at the next animation frame.
pub fn next_frame(f: impl FnOnce() + 'static) {
    let cb = Closure::once_into_js(f);
    let _ = window().request_animation_frame(cb.unchecked_ref());
}

/// Whether the page is inside a frame (an embed in a review doc).
pub fn in_frame() -> bool {
    let w = window();
    match w.parent() {
        Ok(Some(parent)) => !js_sys::Object::is(&parent, &w),
        _ => false,
    }
}

/// Tells the embedding page how tall the content is:
/// `{type: "commlens:height", height}` (see www/README.md for the host's snippet).
pub fn post_height(height: f64) {
    thread_local! {
        static LAST: std::cell::Cell<f64> = const { std::cell::Cell::new(-1.0) };
    }
    let height = height.ceil();
    if LAST.with(|l| l.replace(height)) == height || !in_frame() {
        return;
    }
    let Ok(Some(parent)) = window().parent() else {
        return;
    };
    let message = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&message, &"type".into(), &"commlens:height".into());
    let _ = js_sys::Reflect::set(&message, &"height".into(), &JsValue::from_f64(height));
    let _ = parent.post_message(&message, "*");
}
