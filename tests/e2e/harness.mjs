// Helpers for the browser tests (`*.test.mjs` beside this file, run by `node --test` from
// `cargo xtask test`, which builds the site, serves it under a sub-path of a free 127.0.0.1
// port and sets COMMLENS_URL). To run them by hand against `cargo xtask serve`:
//   COMMLENS_URL=http://127.0.0.1:8080/ node --test tests/e2e/
//
//   import { test } from 'node:test';
//   import { openApp } from './harness.mjs';
//   test('opens the example', async (t) => {
//     const app = await openApp(t);             // fresh Chromium; closed when the test ends
//     await app.waitForRendered('svg');          // or any selector
//     await app.dropFile('main', { path: 'examples/llama_fsdp.json.gz' });
//     assert.match(await app.text('h1'), /commlens/);
//     await app.screenshot('after-drop');        // target/artifacts/after-drop.png
//     app.assertNoErrors();                      // console errors, page errors, failed requests
//   });

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const ARTIFACTS = resolve(process.env.COMMLENS_ARTIFACTS || join(REPO, 'target', 'artifacts'));
export const CHROMIUM = process.env.COMMLENS_CHROMIUM || '/usr/bin/chromium';
export const SHARED = resolve(process.env.COMMLENS_SHARED || join(REPO, '..', 'shared'));

/**
 * The timing budgets of the 100k-node browser tests (issues 11, 12 and 14), in ms. They are
 * asserted only when COMMLENS_PERF_STRICT=1 (a shared CI machine's timings vary); the figures
 * are printed either way.
 */
export const BUDGET_MS = {
  /** One 100k-node dump, drop (or link) → painted timeline (issue 12). */
  load100k: 1500,
  /** Re-plan → painted (issue 12). */
  replan: 100,
  /** The compare view of two 100k-node plans: the single-plan budget plus 50% (issue 11). */
  compare100k: 1500 * 1.5,
  /** A plan diff of two 100k-node plans (issue 11). */
  diff100k: 200,
  /** A 1M-node gzipped dump, drop → painted (issue 14). */
  load1m: 5000,
};

/** The served app's URL (ends with '/'); set by `cargo xtask test`. */
export function appUrl() {
  const url = process.env.COMMLENS_URL;
  if (!url) {
    throw new Error(
      'COMMLENS_URL is not set: run the browser tests through `cargo xtask test`, or start ' +
        '`cargo xtask serve` and set COMMLENS_URL=http://127.0.0.1:8080/',
    );
  }
  return url.endsWith('/') ? url : `${url}/`;
}

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  // The embed tests put the app (served on 127.0.0.1) in a review doc of another origin;
  // Chromium's local-network checks would block that frame, as they would not on a real host.
  '--disable-features=LocalNetworkAccessChecks',
];

/**
 * Launches Chromium (Debian's, headless, with a fresh profile: Playwright makes a new
 * temporary user-data-dir for each launch and deletes it on close).
 */
export async function launchBrowser() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
}

/**
 * Opens the app in a fresh browser. Pass the node:test context `t` to close it when the test
 * ends (else call `app.close()` yourself). Options: `path` (relative to the app URL, e.g.
 * '?example=x'), `viewport` ({width, height}), `waitUntil` (default 'load').
 */
export async function openApp(t, options = {}) {
  if (t && !t.after && typeof t === 'object' && !options.path) {
    options = t; // openApp(options)
    t = undefined;
  }
  const browser = await launchBrowser();
  const context = await browser.newContext({ viewport: options.viewport || { width: 1280, height: 800 } });
  // A script to run in the page before the app (to take a browser feature away, say).
  if (options.initScript) await context.addInitScript(options.initScript);
  const page = await context.newPage();
  const app = new App(browser, context, page);
  if (t && t.after) t.after(() => app.close());
  const url = new URL(options.path || '', appUrl()).href;
  const response = await page.goto(url, { waitUntil: options.waitUntil || 'load', timeout: 60_000 });
  assert.ok(response && response.ok(), `GET ${url}: ${response ? response.status() : 'no response'}`);
  return app;
}

export class App {
  constructor(browser, context, page) {
    this.browser = browser;
    this.context = context;
    /** The Playwright page: use it for anything the helpers do not cover. */
    this.page = page;
    /** Console errors, uncaught page errors and failed requests, as strings. */
    this.errors = [];
    /** Every console message as "type: text". */
    this.console = [];
    page.on('console', (msg) => {
      this.console.push(`${msg.type()}: ${msg.text()}`);
      if (msg.type() !== 'error') return;
      const where = msg.location()?.url || '';
      // The browser's own favicon probe is not the app's doing.
      if (where.endsWith('/favicon.ico')) return;
      this.errors.push(`console.error: ${msg.text()}${where ? ` (${where})` : ''}`);
    });
    page.on('pageerror', (err) => this.errors.push(`page error: ${err.stack || err.message || err}`));
    // Which document made each request: leaving a page aborts what it had in flight (a
    // worker's script still loading, say), and that abort is the navigation's, not an error.
    let documents = 0;
    const madeBy = new WeakMap();
    page.on('request', (req) => {
      // A new document starts with its own request (history.pushState makes none).
      if (req.isNavigationRequest() && mainFrameOf(req, page)) documents += 1;
      madeBy.set(req, documents);
    });
    page.on('requestfailed', (req) => {
      const why = req.failure()?.errorText;
      if (why === 'net::ERR_ABORTED' && madeBy.has(req) && madeBy.get(req) < documents) return;
      this.errors.push(`request failed: ${req.url()} (${why})`);
    });
    page.on('response', (res) => {
      if (res.status() >= 400 && !res.url().endsWith('/favicon.ico')) {
        this.errors.push(`HTTP ${res.status()}: ${res.url()}`);
      }
    });
  }

  /** Fails the test when any console error, page error or failed request was seen. */
  assertNoErrors(ignore = []) {
    const errors = this.errors.filter((e) => !ignore.some((re) => (re instanceof RegExp ? re.test(e) : e.includes(re))));
    assert.deepEqual(errors, [], `errors in the page:\n${errors.join('\n')}`);
  }

  /**
   * Waits until the app has rendered: `selector` is visible, or (without one) the body holds
   * some visible element other than scripts. Page errors while waiting fail fast.
   */
  async waitForRendered(selector, timeout = 30_000) {
    const rendered = selector
      ? this.page.waitForSelector(selector, { state: 'visible', timeout })
      : this.page.waitForFunction(
          () =>
            [...document.body.querySelectorAll('*')].some(
              (el) => !['SCRIPT', 'NOSCRIPT', 'STYLE', 'LINK'].includes(el.tagName) && el.getClientRects().length > 0,
            ) && document.body.innerText.trim().length > 0,
          null,
          { timeout },
        );
    const failed = new Promise((_, reject) => {
      const check = setInterval(() => {
        const pageErrors = this.errors.filter((e) => e.startsWith('page error'));
        if (pageErrors.length) {
          clearInterval(check);
          reject(new Error(`the page failed while rendering:\n${pageErrors.join('\n')}`));
        }
      }, 100);
      rendered.finally(() => clearInterval(check)).catch(() => {});
    });
    await Promise.race([rendered, failed]);
  }

  /** Saves a full-page PNG to target/artifacts/<name>.png and returns its path. */
  async screenshot(name) {
    mkdirSync(ARTIFACTS, { recursive: true });
    const file = join(ARTIFACTS, `${String(name).replace(/[^\w.-]+/g, '_')}.png`);
    await this.page.screenshot({ path: file, fullPage: true });
    return file;
  }

  /** The visible text of the first element matching `selector` (default: the body). */
  async text(selector = 'body') {
    return this.page.locator(selector).first().innerText();
  }

  /** The visible texts of every element matching `selector`. */
  async texts(selector) {
    return this.page.locator(selector).allInnerTexts();
  }

  /** Sets a file `<input type=file>` (selector) to a file: see `fileSpec` for the forms. */
  async setFile(selector, file) {
    const f = fileSpec(file);
    await this.page.setInputFiles(selector, { name: f.name, mimeType: f.mimeType, buffer: f.bytes });
  }

  /**
   * Simulates dropping a file on the element matching `selector`: dispatches dragenter,
   * dragover and drop with a DataTransfer holding the file's bytes.
   */
  async dropFile(selector, file) {
    const f = fileSpec(file);
    const dataTransfer = await this.page.evaluateHandle(
      ({ b64, name, mimeType }) => {
        const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        const dt = new DataTransfer();
        dt.items.add(new File([bytes], name, { type: mimeType }));
        return dt;
      },
      { b64: f.bytes.toString('base64'), name: f.name, mimeType: f.mimeType },
    );
    for (const type of ['dragenter', 'dragover', 'drop']) {
      await this.page.dispatchEvent(selector, type, { dataTransfer });
    }
    await dataTransfer.dispose();
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    await this.browser.close().catch(() => {});
  }
}

/**
 * A file for `setFile` / `dropFile`: `{ path }` (relative to the repo, or absolute; the name
 * defaults to the file's), or `{ name, bytes }` (Buffer, Uint8Array or string); optional
 * `mimeType` (default by extension).
 */
export function fileSpec(file) {
  let { name, bytes, path, mimeType } = typeof file === 'string' ? { path: file } : file;
  if (path) {
    const full = resolve(REPO, path);
    bytes = bytes ?? readFileSync(full);
    name = name ?? basename(full);
  }
  assert.ok(name && bytes !== undefined, 'a file needs { path } or { name, bytes }');
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
  if (!mimeType) {
    mimeType = name.endsWith('.gz') ? 'application/gzip' : name.endsWith('.json') ? 'application/json' : 'application/octet-stream';
  }
  return { name, bytes: buffer, mimeType };
}

// ---------------------------------------------------------------------------------------
// Helpers the app's tests share: the native CLI as the oracle, counts of marks, waiting for
// the next painted view, synthetic dumps, and geometry checks on what the browser drew.

export const CASES = join(SHARED, 'conformance', 'cases');
export const WORK = join(REPO, 'target', 'e2e');
mkdirSync(WORK, { recursive: true });

/** The native CLI (built once if missing). */
export function cli() {
  for (const p of ['target/debug/commlens', 'target/release/commlens']) {
    if (existsSync(join(REPO, p))) return join(REPO, p);
  }
  execFileSync('cargo', ['build', '-q', '-p', 'commlens-cli'], { cwd: REPO, stdio: 'inherit' });
  return join(REPO, 'target/debug/commlens');
}

/** The native planner's report text for a dump and optional args object. */
export function nativeReportText(dumpPath, args) {
  const argv = ['plan', dumpPath];
  if (args && Object.keys(args).length) {
    const file = join(WORK, `args-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(args));
    argv.push('--args', file);
  }
  return execFileSync(cli(), argv, { maxBuffer: 1 << 30 }).toString();
}

/** The native planner's report for a dump and optional args object. */
export function nativePlan(dumpPath, args) {
  return JSON.parse(nativeReportText(dumpPath, args));
}

export function expected(report) {
  const count = (a) => report.decisions.filter((d) => d.action === a).length;
  return { bars: report.buckets.length, splits: count('split'), skips: count('skip') };
}

/**
 * Buckets, split marks and skip marks the chart shows: buckets drawn as bars plus those a
 * full lane counts in its overflow strip.
 */
export async function counts(app) {
  return app.page.evaluate(() => ({
    bars: document.querySelectorAll('#chart svg [data-bucket]').length
      + Number(document.querySelector('#chart svg')?.getAttribute('data-not-drawn') || 0),
    splits: document.querySelectorAll('#chart svg [data-split]').length,
    skips: document.querySelectorAll('#chart svg [data-skip]').length,
  }));
}

/** The paint counter (`#perf[data-seq]`, bumped after each timed paint). */
export async function seq(app) {
  return app.page.evaluate(() => Number(document.querySelector('#perf')?.getAttribute('data-seq') || 0));
}

/** Waits for the paint after `after`. */
export async function nextPaint(app, after) {
  await app.page.waitForFunction(
    (n) => Number(document.querySelector('#perf')?.getAttribute('data-seq') || 0) > n,
    after,
    { timeout: 60_000 },
  );
}

/** The view the chart shows: `[x0, x1]` from the SVG. */
export async function shownRange(page) {
  return page.evaluate(() => {
    const svg = document.querySelector('#chart svg');
    return svg ? [Number(svg.getAttribute('data-x0')), Number(svg.getAttribute('data-x1'))] : null;
  });
}

/** Waits until the chart's view differs from `range`. */
export async function rangeChanged(page, range, timeout = 10_000) {
  await page.waitForFunction(
    ([a, b]) => {
      const svg = document.querySelector('#chart svg');
      return svg && (Number(svg.getAttribute('data-x0')) !== a || Number(svg.getAttribute('data-x1')) !== b);
    },
    range,
    { timeout },
  );
}

export function readDump(path) {
  const bytes = readFileSync(path);
  return JSON.parse((bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes).toString());
}

/** A synthetic Llama-like dump of about `nodes` nodes (written once, by the core's `synth`). */
export function synthDump(nodes) {
  const file = join(WORK, `synth_${nodes}.json`);
  if (!existsSync(file)) {
    execFileSync('cargo', ['test', '-q', '-p', 'commlens', '--test', 'timeline', '--', '--ignored', 'write_synthetic_dump'], {
      cwd: REPO,
      stdio: 'inherit',
      env: { ...process.env, COMMLENS_SYNTH_OUT: file, COMMLENS_SYNTH_NODES: String(nodes) },
    });
  }
  return file;
}

/**
 * The hostile dump `name` of about `nodes` nodes (`commlens::synth::Hostile`, written by
 * `synth_dump N DIR hostile` with the others of its size, once): a path under WORK.
 */
export function hostileDump(name, nodes) {
  const dir = join(WORK, `hostile_${nodes}`);
  const file = join(dir, `${name}.json`);
  if (!existsSync(file)) {
    execFileSync('cargo', ['run', '-q', '--release', '-p', 'commlens', '--example', 'synth_dump', '--', String(nodes), dir, 'hostile'], {
      cwd: REPO,
      stdio: 'inherit',
    });
  }
  return file;
}

/**
 * Drops a large file on the page: the bytes go over in chunks, then a real drop event is
 * dispatched inside the page (timed from there). Returns the page's wall time to the paint.
 */
export async function dropLarge(app, path, name) {
  const bytes = readFileSync(path);
  await app.page.evaluate((n) => { window.__bytes = new Uint8Array(n); }, bytes.length);
  const chunk = 4 << 20;
  for (let i = 0; i < bytes.length; i += chunk) {
    await app.page.evaluate(([b64, off]) => {
      const s = atob(b64);
      for (let j = 0; j < s.length; j++) window.__bytes[off + j] = s.charCodeAt(j);
    }, [bytes.subarray(i, i + chunk).toString('base64'), i]);
  }
  return app.page.evaluate(async (name) => {
    const before = Number(document.querySelector('#perf')?.getAttribute('data-seq') || 0);
    const dt = new DataTransfer();
    dt.items.add(new File([window.__bytes], name, { type: 'application/json' }));
    delete window.__bytes;
    const t0 = performance.now();
    document.querySelector('.app').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    await new Promise((res) => {
      const iv = setInterval(() => {
        if (Number(document.querySelector('#perf')?.getAttribute('data-seq') || 0) > before) { clearInterval(iv); res(); }
      }, 2);
    });
    return performance.now() - t0;
  }, name);
}

/**
 * Every text the chart drew, with its box (client pixels), and the SVG's box: for checks
 * that no text overlaps another and none is cut off.
 */
export async function chartTexts(page, selector = '#chart svg') {
  return page.evaluate((sel) => {
    const svg = document.querySelector(sel);
    const box = (r) => ({ left: r.left, right: r.right, top: r.top, bottom: r.bottom });
    return {
      svg: box(svg.getBoundingClientRect()),
      texts: [...svg.querySelectorAll('text')]
        .filter((t) => t.textContent.trim())
        .map((t) => ({ text: t.textContent, ...box(t.getBoundingClientRect()) })),
    };
  }, selector);
}

/** Pairs of boxes that overlap by more than `slack` pixels each way. */
export function overlaps(boxes, slack = 0.5) {
  const out = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.left < b.right - slack && b.left < a.right - slack && a.top < b.bottom - slack && b.top < a.bottom - slack) out.push([a, b]);
    }
  }
  return out;
}

/** Whether `req` was made by `page`'s main frame (a request may have no frame: a worker's). */
function mainFrameOf(req, page) {
  try {
    return req.frame() === page.mainFrame();
  } catch {
    return false;
  }
}
