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
import { mkdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const ARTIFACTS = resolve(process.env.COMMLENS_ARTIFACTS || join(REPO, 'target', 'artifacts'));
export const CHROMIUM = process.env.COMMLENS_CHROMIUM || '/usr/bin/chromium';
export const SHARED = resolve(process.env.COMMLENS_SHARED || join(REPO, '..', 'shared'));

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
    page.on('requestfailed', (req) => {
      this.errors.push(`request failed: ${req.url()} (${req.failure()?.errorText})`);
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
