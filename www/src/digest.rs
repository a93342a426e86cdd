//! The graph signature digested by the browser rather than the wasm, where the page can:
//! WebCrypto's SHA-256 is native code, where this wasm build has no SHA instructions and
//! hashing was a fifth of a read (docs/performance.md). The reader hands the signature's bytes
//! out ([`commlens::signature::digest_elsewhere`]) to a worker kept from the page's start, the
//! graph is classified meanwhile, and [`settle_signature`] gives the planner its signature
//! before the first plan. Elsewhere (no WebCrypto: plain HTTP on another host; no workers: a
//! content policy) the wasm hashes while reading, as the CLI does; the signature is the same
//! either way.
//!
//! On a machine with cores to spare the page does better still: a second worker, with its
//! own instance of this module ([`SignatureWorker`]), is handed a dump's bytes before the read
//! and makes the signature's records from them itself (`commlens::signature::records_of_dump`, about
//! half a read's work) while the page reads without writing any
//! (`commlens::signature::without_records`): writing the records was about a sixth of the
//! page's read of a 100k-node dump (docs/performance.md).

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
    /// Made beside the read by the signature worker ([`SignatureWorker`]) in `.1` ms (from
    /// the bytes to the digest); the page waited `.0` ms for it.
    Beside(f64, f64),
    /// The browser failed, and the wasm hashed the graph after all.
    Failed,
}

impl Digested {
    /// For the timing line: `" (signature: …)"`.
    pub fn describe(&self) -> String {
        match self {
            Digested::Here => " (signature: wasm)".to_string(),
            Digested::WebCrypto(ms) => format!(" (signature: WebCrypto, waited {ms:.0} ms)"),
            Digested::Beside(ms, worker) => format!(
                " (signature: beside the read, in a worker in {worker:.0} ms, waited {ms:.0} ms)"
            ),
            Digested::Failed => " (signature: wasm, after the browser failed)".to_string(),
        }
    }
}

/// A signature on its way: from the records this read hands out ([`WebDigest`]), or made
/// beside it ([`SignatureWorker`]).
pub enum Pending {
    Records(PendingDigest),
    Beside(PendingSignature),
}

/// Runs `read` (one of the core's readers preparing a planner) with the graph signature
/// made where the page can: `beside` (from [`SignatureWorker::request`], for the same bytes)
/// makes it while `read` writes no records; else the browser digests the records `read`
/// hands out ([`WebDigest`]); else the wasm hashes while reading. The planner's signature is
/// then set by [`settle_signature`], which the caller awaits once it has done what does not
/// need the signature (classifying the graph). The signature is the same either way.
pub fn read_digesting<T>(
    beside: Option<PendingSignature>,
    read: impl FnOnce() -> Result<T, String>,
) -> Result<(T, Option<Pending>), String> {
    if let Some(beside) = beside {
        // On an error the worker's answer, when it comes, has nobody waiting for it.
        let out = commlens::signature::without_records(read)?;
        return Ok((out, Some(Pending::Beside(beside))));
    }
    let Some(digest) = WebDigest::start() else {
        return Ok((read()?, None));
    };
    match commlens::signature::digest_elsewhere(Box::new(digest.pieces()), read) {
        Ok(out) => Ok((out, Some(Pending::Records(digest.request())))),
        Err(e) => {
            digest.unused();
            Err(e)
        }
    }
}

/// Sets the planner's graph signature once it is made ([`read_digesting`]); with nothing
/// pending, the reader already hashed it. When the browser failed, the wasm hashes the graph
/// (its nodes keep their reprs for this).
pub async fn settle_signature(loaded: &mut Loaded, pending: Option<Pending>) -> Digested {
    let Some(pending) = pending else {
        return Digested::Here;
    };
    let waited = now_ms();
    let (hex, worker_ms) = match pending {
        Pending::Records(p) => (p.hex().await, None),
        Pending::Beside(p) => match p.hex().await {
            Ok((hex, worker_ms)) => (Ok(hex), Some(worker_ms)),
            Err(e) => (Err(e), None),
        },
    };
    let ms = now_ms() - waited;
    let Some(planner) = loaded.planner_mut() else {
        // Not reached: nothing shares the planner before its signature is settled.
        return Digested::Failed;
    };
    match hex {
        Ok(hex) => {
            planner.set_signature(hex);
            match worker_ms {
                Some(worker_ms) => Digested::Beside(ms, worker_ms),
                None => Digested::WebCrypto(ms),
            }
        }
        Err(_) => {
            let hex = commlens::signature::graph_signature(planner.graph());
            planner.set_signature(hex);
            Digested::Failed
        }
    }
}

/// The signature worker's side of [`SignatureWorker`]: the graph signature's records of the
/// dump `bytes` under the page's input-size limit, or nothing when they cannot be made
/// without reading the dump (`commlens::signature::records_of_dump`).
#[wasm_bindgen]
pub fn signature_records(bytes: &[u8], max_input_bytes: f64) -> Option<Vec<u8>> {
    if !SignatureWorker::takes(bytes) {
        return None;
    }
    commlens::input::set_limits(commlens::input::Limits {
        max_input_bytes: max_input_bytes as u64,
    });
    commlens::signature::records_of_dump(bytes).map(String::into_bytes)
}

/// The worker of [`SignatureWorker`]: starts this module's glue and an instance of the page's
/// compiled module (its code is shared, optimised or not, with the page's instance), then for
/// each dump makes its records and digests them with WebCrypto.
const SIGNATURE_WORKER: &str = r#"
let glue = null;
onmessage = async (e) => {
  const m = e.data;
  if (m.kind === 'start') {
    glue = import(m.glue).then(async (g) => { await g.default({ module_or_path: m.module }); return g; });
    glue.catch(() => {});
    return;
  }
  try {
    const t0 = performance.now();
    const bytes = m.bytes;
    const g = await glue;
    const records = g.signature_records(bytes, m.limit);
    if (records === undefined) { postMessage({ id: m.id, error: 'declined' }); return; }
    const d = new Uint8Array(await crypto.subtle.digest('SHA-256', records));
    const hex = Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
    postMessage({ id: m.id, hex, ms: performance.now() - t0 });
  } catch (err) { postMessage({ id: m.id, error: String(err && err.message || err) }); }
};
"#;

/// The signature worker is started on machines with at least this many cores. With two,
/// the page's read gained nothing from it: on the project's 2-core VM the page's thread did
/// 40 ms less at 100k nodes, but with the worker beside it (and the browser's own threads)
/// it was preempted as much, and whole loads were as long (docs/performance.md).
const MIN_CORES: u32 = 4;

/// Dumps whose text is larger than this are read with their records handed out
/// ([`WebDigest`]): the worker would hold a second copy of the text and the records (about
/// 1.4 times the text in all, on top of the page's read).
const BESIDE_MAX_TEXT: usize = 128 << 20;

/// After a dump of more bytes than this, the signature worker is replaced by a new one
/// ([`SignatureWorker::recycle_if_idle`]); smaller ones leave it a few MB larger.
const RECYCLE_AFTER: usize = 16 << 20;

/// How long the page waits for the signature worker after its read before it hashes the
/// graph itself: the worker does less than the page, so it is late only when something went
/// wrong (killed for memory, say).
const BESIDE_TIMEOUT_MS: i32 = 20_000;

/// A worker with its own instance of this module, started with the page on machines of
/// [`MIN_CORES`] or more, that makes a dump's graph signature from its bytes while the page
/// reads the dump ([`read_digesting`]). Where it is not started (fewer cores, no WebCrypto,
/// no workers, a content policy that refuses them), or once it has failed (no dynamic
/// `import` in workers, say), reads hand their records to [`WebDigest`] as before.
pub struct SignatureWorker;

/// The signature worker and the answers it owes, by request.
struct SignatureWorkerState {
    worker: web_sys::Worker,
    next: u32,
    waiting: std::collections::HashMap<u32, js_sys::Function>,
    failed: bool,
}

thread_local! {
    static SIGNATURE_WORKER_STATE: std::cell::RefCell<Option<SignatureWorkerState>> =
        const { std::cell::RefCell::new(None) };
}

impl SignatureWorker {
    /// Starts the worker, where the page can and the machine has cores to spare: at the
    /// page's start, since a worker started when a read begins cannot finish starting before
    /// the read ends.
    pub fn warm() {
        if !has_web_crypto() || cores() < MIN_CORES {
            return;
        }
        let Some(worker) = Self::start() else { return };
        SIGNATURE_WORKER_STATE.with(|s| {
            *s.borrow_mut() = Some(SignatureWorkerState {
                worker,
                next: 0,
                waiting: Default::default(),
                failed: false,
            })
        });
    }

    fn start() -> Option<web_sys::Worker> {
        let base = crate::browser::document()?.base_uri().ok()??;
        let glue = web_sys::Url::new_with_base("commlens_www.js", &base)
            .ok()?
            .href();
        let worker = script_worker(SIGNATURE_WORKER).ok()?;
        let on_message =
            Closure::<dyn FnMut(web_sys::MessageEvent)>::new(|e: web_sys::MessageEvent| {
                let data = e.data();
                let id = js_sys::Reflect::get(&data, &"id".into())
                    .ok()
                    .and_then(|id| id.as_f64())
                    .map(|id| id as u32);
                let resolve = id.and_then(|id| {
                    SIGNATURE_WORKER_STATE.with(|s| s.borrow_mut().as_mut()?.waiting.remove(&id))
                });
                if let Some(resolve) = resolve {
                    let _ = resolve.call1(&JsValue::NULL, &data);
                }
            });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        on_message.forget();
        // A worker that cannot start, or a module that cannot start in it, fails every
        // answer it owes, and is not asked again.
        let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(|_: web_sys::Event| {
            Self::fail_all();
        });
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();
        let message = js_sys::Object::new();
        js_sys::Reflect::set(&message, &"kind".into(), &"start".into()).ok()?;
        js_sys::Reflect::set(&message, &"glue".into(), &glue.into()).ok()?;
        js_sys::Reflect::set(&message, &"module".into(), &wasm_bindgen::module()).ok()?;
        worker.post_message(&message).ok()?;
        Some(worker)
    }

    /// Replaces the worker with a new one, unless it owes an answer: its memory grew to hold
    /// the last dump and its records (wasm memory does not shrink), and a new instance of the
    /// compiled module starts in a few milliseconds.
    fn recycle_if_idle() {
        let idle = SIGNATURE_WORKER_STATE.with(|s| {
            s.borrow()
                .as_ref()
                .is_some_and(|state| !state.failed && state.waiting.is_empty())
        });
        if !idle {
            return;
        }
        let Some(fresh) = Self::start() else { return };
        SIGNATURE_WORKER_STATE.with(|s| {
            if let Some(state) = s.borrow_mut().as_mut() {
                std::mem::replace(&mut state.worker, fresh).terminate();
            }
        });
    }

    /// Ends the worker: every answer it owes is an error, and reads hand out their records.
    fn fail_all() {
        let waiting = SIGNATURE_WORKER_STATE.with(|s| {
            let mut s = s.borrow_mut();
            let state = s.as_mut()?;
            state.failed = true;
            state.worker.terminate();
            Some(std::mem::take(&mut state.waiting))
        });
        let error = js_sys::Object::new();
        let _ = js_sys::Reflect::set(
            &error,
            &"error".into(),
            &"the signature worker failed".into(),
        );
        for resolve in waiting.into_iter().flatten().map(|(_, r)| r) {
            let _ = resolve.call1(&JsValue::NULL, &error);
        }
    }

    /// Whether the signature worker makes the signature of `bytes` (else it declines them):
    /// a dump, whose text is at most [`BESIDE_MAX_TEXT`].
    pub fn takes(bytes: &[u8]) -> bool {
        let text = match bytes.starts_with(&[0x1f, 0x8b]) {
            true => commlens::dump::gzip_size_hint(bytes),
            false => bytes.len(),
        };
        text <= BESIDE_MAX_TEXT && commlens::input::holds_a_dump(bytes)
    }

    /// Hands the worker a copy of `bytes` to make their signature, when it takes them
    /// ([`SignatureWorker::takes`]) and has not failed; `None` otherwise.
    pub fn request(bytes: &[u8]) -> Option<PendingSignature> {
        if !Self::available() || !Self::takes(bytes) {
            return None;
        }
        let copy = Uint8Array::new_with_length(bytes.len() as u32);
        copy.copy_from(bytes);
        Self::send(
            ("bytes", copy.clone().into()),
            Some(copy.buffer()),
            bytes.len(),
        )
    }

    /// [`SignatureWorker::request`] for bytes the page read from a file: `buffer` (the file's
    /// bytes as the browser read them, already copied into `bytes`) is transferred to the
    /// worker, not copied. (Given the `File` itself, the worker read it while the page did,
    /// and the page's read of it took 20 ms longer on two cores.)
    pub fn request_buffer(bytes: &[u8], buffer: js_sys::ArrayBuffer) -> Option<PendingSignature> {
        if !Self::available() || !Self::takes(bytes) {
            return None;
        }
        let view = Uint8Array::new(&buffer);
        Self::send(("bytes", view.into()), Some(buffer), bytes.len())
    }

    /// Whether the worker is there to ask.
    fn available() -> bool {
        SIGNATURE_WORKER_STATE.with(|s| s.borrow().as_ref().is_some_and(|state| !state.failed))
    }

    fn send(
        (field, input): (&str, JsValue),
        transfer: Option<js_sys::ArrayBuffer>,
        size: usize,
    ) -> Option<PendingSignature> {
        SIGNATURE_WORKER_STATE.with(|s| {
            let mut s = s.borrow_mut();
            let state = s.as_mut().filter(|state| !state.failed)?;
            let id = state.next;
            state.next = state.next.wrapping_add(1);
            let mut answer_to = None;
            let answer = js_sys::Promise::new(&mut |resolve, _| answer_to = Some(resolve));
            let message = js_sys::Object::new();
            js_sys::Reflect::set(&message, &"id".into(), &f64::from(id).into()).ok()?;
            js_sys::Reflect::set(&message, &field.into(), &input).ok()?;
            let limit = commlens::input::limits().max_input_bytes as f64;
            js_sys::Reflect::set(&message, &"limit".into(), &limit.into()).ok()?;
            match transfer {
                Some(buffer) => state
                    .worker
                    .post_message_with_transfer(&message, &Array::of1(&buffer)),
                None => state.worker.post_message(&message),
            }
            .ok()?;
            state.waiting.insert(id, answer_to?);
            Some(PendingSignature {
                answer,
                recycle: size > RECYCLE_AFTER,
            })
        })
    }
}

/// The logical cores the browser says the machine has (`navigator.hardwareConcurrency`).
fn cores() -> u32 {
    web_sys::window().map_or(1, |w| w.navigator().hardware_concurrency() as u32)
}

/// Whether the page has WebCrypto (secure contexts: HTTPS and localhost).
fn has_web_crypto() -> bool {
    if !cfg!(target_arch = "wasm32") {
        return false;
    }
    let subtle = web_sys::window()
        .and_then(|w| w.crypto().ok())
        .and_then(|crypto| js_sys::Reflect::get(&crypto, &"subtle".into()).ok());
    subtle.is_some_and(|s| !s.is_undefined() && !s.is_null())
}

/// A signature asked of the [`SignatureWorker`].
pub struct PendingSignature {
    answer: js_sys::Promise,
    /// Whether the worker is replaced once it answers ([`RECYCLE_AFTER`]).
    recycle: bool,
}

impl PendingSignature {
    /// The hex SHA-256 and the worker's time for it, or why not (the worker declined the
    /// dump, failed, or took longer than [`BESIDE_TIMEOUT_MS`] after the read).
    pub async fn hex(self) -> Result<(String, f64), String> {
        let timeout = js_sys::Promise::new(&mut |resolve, _| {
            let error = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&error, &"error".into(), &"timed out".into());
            let _ = crate::browser::window().set_timeout_with_callback_and_timeout_and_arguments_1(
                &resolve,
                BESIDE_TIMEOUT_MS,
                &error,
            );
        });
        let answer = JsFuture::from(js_sys::Promise::race(&Array::of2(&self.answer, &timeout)))
            .await
            .map_err(crate::browser::js_err)?;
        let field = |k: &str| js_sys::Reflect::get(&answer, &k.into()).unwrap_or_default();
        match field("hex").as_string() {
            Some(hex) => {
                if self.recycle {
                    SignatureWorker::recycle_if_idle();
                }
                Ok((hex, field("ms").as_f64().unwrap_or(0.0)))
            }
            None => {
                // A dump it declines is the dump's doing; anything else (no dynamic `import`
                // in workers, the module failing to start, a timeout) is the worker's, and
                // later reads hand out their records instead.
                let error = field("error").as_string().unwrap_or_default();
                if error != "declined" {
                    SignatureWorker::fail_all();
                }
                Err(error)
            }
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

    /// A worker, where the page has WebCrypto and may start workers.
    fn new_worker() -> Option<web_sys::Worker> {
        has_web_crypto().then(|| script_worker(DIGEST_WORKER).ok())?
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
