//! The graph signature digested by the browser rather than the wasm, where the page can:
//! WebCrypto's SHA-256 is native code, where this wasm build has no SHA instructions and
//! hashing was a fifth of a read (docs/performance.md). The reader hands the signature's bytes
//! out ([`commlens::signature::digest_elsewhere`]) to a worker kept from the page's start, the
//! graph is classified meanwhile, and [`settle_signature`] gives the planner its signature
//! before the first plan. Elsewhere (no WebCrypto: plain HTTP on another host; no workers: a
//! content policy) the wasm hashes while reading, as the CLI does; the signature is the same
//! either way.

use crate::browser::{now_ms, script_worker};
use crate::model::Loaded;
use js_sys::{Array, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// How a read's graph signature was digested, for the timing line.
pub enum Digested {
    /// By the wasm, while reading (as the CLI does).
    Here,
    /// By the browser's WebCrypto in a worker; the page waited this many ms for it.
    WebCrypto(f64),
    /// The browser failed, and the wasm hashed the graph after all.
    Failed,
}

impl Digested {
    /// For the timing line: `" (signature: …)"`.
    pub fn describe(&self) -> String {
        match self {
            Digested::Here => " (signature: wasm)".to_string(),
            Digested::WebCrypto(ms) => format!(" (signature: WebCrypto, waited {ms:.0} ms)"),
            Digested::Failed => " (signature: wasm, after the browser failed)".to_string(),
        }
    }
}

/// Runs `read` (one of the core's readers preparing a planner) with the graph signature
/// digested by the browser where the page can ([`WebDigest`]): the planner's
/// signature is then set by [`settle_signature`], which the caller awaits once it
/// has done what does not need the signature (classifying the graph). The signature is the
/// same either way.
pub fn read_digesting<T>(
    read: impl FnOnce() -> Result<T, String>,
) -> Result<(T, Option<PendingDigest>), String> {
    let Some(digest) = WebDigest::start() else {
        return Ok((read()?, None));
    };
    match commlens::signature::digest_elsewhere(Box::new(digest.pieces()), read) {
        Ok(out) => Ok((out, Some(digest.request()))),
        Err(e) => {
            digest.unused();
            Err(e)
        }
    }
}

/// Sets the planner's graph signature once the browser has digested it
/// ([`read_digesting`]); with no digest pending, the reader already hashed it.
pub async fn settle_signature(loaded: &mut Loaded, pending: Option<PendingDigest>) -> Digested {
    let Some(pending) = pending else {
        return Digested::Here;
    };
    let waited = now_ms();
    let hex = pending.hex().await;
    let ms = now_ms() - waited;
    let Some(planner) = loaded.planner_mut() else {
        // Not reached: nothing shares the planner before its signature is settled.
        return Digested::Failed;
    };
    match hex {
        Ok(hex) => {
            planner.set_signature(hex);
            Digested::WebCrypto(ms)
        }
        Err(_) => {
            let hex = commlens::signature::graph_signature(planner.graph());
            planner.set_signature(hex);
            Digested::Failed
        }
    }
}

/// The worker of [`WebDigest`]: joins the pieces it is sent (transferred, not copied) as they
/// come, and on `digest` digests them with WebCrypto, all off the page's thread.
const DIGEST_WORKER: &str = r#"
let all = new Uint8Array(1 << 20), len = 0;
onmessage = async (e) => {
  const m = e.data;
  if (m.kind === 'restart') { len = 0; return; }
  if (m.kind === 'piece') {
    // Joined as they come (while the page reads on), so that only the digest is left at the end.
    if (len + m.bytes.length > all.length) {
      const grown = new Uint8Array(Math.max(all.length * 2, len + m.bytes.length));
      grown.set(all.subarray(0, len));
      all = grown;
    }
    all.set(m.bytes, len);
    len += m.bytes.length;
    return;
  }
  try {
    const d = new Uint8Array(await crypto.subtle.digest('SHA-256', all.subarray(0, len)));
    postMessage({ hex: Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('') });
  } catch (err) { postMessage({ error: String(err && err.message || err) }); }
};
"#;

/// The graph signature's SHA-256, digested by the browser: WebCrypto's SHA-256 is native
/// code, where this wasm build has no SHA instructions and hashing was a fifth of a read
/// (docs/performance.md). The reader hands the signature's bytes here a piece at a time
/// ([`commlens::signature::digest_elsewhere`]); each is copied out of the wasm memory once and
/// sent to a worker, which joins them as they come and digests them, off the page's thread.
///
/// The worker is started with the page ([`WebDigest::warm`]) and kept: a worker started when a
/// read begins cannot finish starting until the page's thread is free, that is, until the read
/// is over, and then everything would be left to do at the end.
pub struct WebDigest {
    worker: web_sys::Worker,
}

thread_local! {
    /// The kept worker, while no read uses it.
    static IDLE_DIGEST_WORKER: std::cell::RefCell<Option<web_sys::Worker>> =
        const { std::cell::RefCell::new(None) };
}

impl WebDigest {
    /// Starts the worker that digests the next read's signature, where the page can.
    pub fn warm() {
        if let Some(worker) = Self::new_worker() {
            IDLE_DIGEST_WORKER.with(|w| *w.borrow_mut() = Some(worker));
        }
    }

    /// A worker, where the page has WebCrypto (secure contexts: HTTPS and localhost) and may
    /// start workers.
    fn new_worker() -> Option<web_sys::Worker> {
        if !cfg!(target_arch = "wasm32") {
            return None;
        }
        let crypto = web_sys::window()?.crypto().ok()?;
        let subtle = js_sys::Reflect::get(&crypto, &"subtle".into()).ok()?;
        if subtle.is_undefined() || subtle.is_null() {
            return None;
        }
        script_worker(DIGEST_WORKER).ok()
    }

    /// A digest for the next read: the kept worker, or a new one while it is busy; `None`
    /// where the page cannot, and the wasm hashes as the CLI does.
    pub fn start() -> Option<WebDigest> {
        let worker = IDLE_DIGEST_WORKER
            .with(|w| w.borrow_mut().take())
            .or_else(Self::new_worker)?;
        Some(WebDigest { worker })
    }

    /// Where the reader hands this digest's bytes.
    pub fn pieces(&self) -> DigestPieces {
        DigestPieces(self.worker.clone())
    }

    /// Gives the worker back unused (the read failed): the next read starts it over.
    pub fn unused(self) {
        IDLE_DIGEST_WORKER.with(|w| *w.borrow_mut() = Some(self.worker));
    }

    /// Asks for the SHA-256 of the bytes handed here; the worker digests them while the page
    /// goes on (classifying the graph, say) until [`PendingDigest::hex`].
    pub fn request(self) -> PendingDigest {
        let worker = self.worker.clone();
        let answer = js_sys::Promise::new(&mut |resolve, reject| {
            let reject_message = reject.clone();
            let on_message = Closure::once_into_js(move |e: web_sys::MessageEvent| {
                let data = e.data();
                let field = |k: &str| js_sys::Reflect::get(&data, &k.into()).unwrap_or_default();
                let _ = match field("hex").as_string() {
                    Some(hex) => resolve.call1(&JsValue::NULL, &hex.into()),
                    None => reject_message.call1(&JsValue::NULL, &field("error")),
                };
            });
            worker.set_onmessage(Some(on_message.unchecked_ref()));
            // A worker that could not start (a content policy) says so here, not earlier:
            // its events wait while the page's thread reads.
            let on_error = Closure::once_into_js(move |_: web_sys::Event| {
                let _ = reject.call1(&JsValue::NULL, &"the digest worker failed".into());
            });
            worker.set_onerror(Some(on_error.unchecked_ref()));
        });
        let answer = match send(&self.worker, "digest", None) {
            Ok(()) => answer,
            Err(e) => js_sys::Promise::reject(&e),
        };
        PendingDigest {
            worker: self.worker,
            answer,
        }
    }
}

/// A digest asked of the worker ([`WebDigest::request`]).
pub struct PendingDigest {
    worker: web_sys::Worker,
    answer: js_sys::Promise,
}

impl PendingDigest {
    /// The hex SHA-256. The worker is kept for the next read when it answered, and ended
    /// when it failed.
    pub async fn hex(self) -> Result<String, String> {
        let hex = JsFuture::from(self.answer)
            .await
            .ok()
            .and_then(|hex| hex.as_string());
        match hex {
            Some(hex) => {
                IDLE_DIGEST_WORKER.with(|w| *w.borrow_mut() = Some(self.worker));
                Ok(hex)
            }
            None => {
                self.worker.terminate();
                Err("the browser could not digest the signature".to_string())
            }
        }
    }
}

fn send(worker: &web_sys::Worker, kind: &str, bytes: Option<Uint8Array>) -> Result<(), JsValue> {
    let message = js_sys::Object::new();
    js_sys::Reflect::set(&message, &"kind".into(), &kind.into())?;
    match bytes {
        Some(bytes) => {
            js_sys::Reflect::set(&message, &"bytes".into(), &bytes)?;
            worker.post_message_with_transfer(&message, &Array::of1(&bytes.buffer()))
        }
        None => worker.post_message(&message),
    }
}

/// The reader's side of a [`WebDigest`]: each piece is copied out of the wasm memory and
/// transferred to the worker.
pub struct DigestPieces(web_sys::Worker);

impl commlens::signature::RecordSink for DigestPieces {
    fn restart(&mut self) {
        let _ = send(&self.0, "restart", None);
    }

    fn write(&mut self, bytes: &[u8]) {
        let _ = send(&self.0, "piece", Some(Uint8Array::from(bytes)));
    }
}
