// Smoke test of the harness and the served site: the page loads, the app renders something,
// and nothing failed on the way (no console error, no page error, no failed request).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { openApp } from './harness.mjs';

test('the app loads and renders without errors', async (t) => {
  const app = await openApp(t);
  await app.waitForRendered();
  const text = await app.text();
  assert.ok(text.trim().length > 0, 'the page shows no text');
  await app.screenshot('smoke');
  app.assertNoErrors();
});

test('the wasm is served as application/wasm under the site path', async (t) => {
  const app = await openApp(t);
  const res = await app.page.request.get(new URL('commlens_www_bg.wasm', app.page.url()).href);
  assert.equal(res.status(), 200);
  assert.equal(res.headers()['content-type'], 'application/wasm');
});

test('a browser that cannot compile the wasm (no WebAssembly SIMD) is told what the app needs', async (t) => {
  // The engine's own refusal, as a browser without the module's vector instructions gives it.
  const noSimd = () => {
    const refuse = () => Promise.reject(new WebAssembly.CompileError('WebAssembly.instantiate(): invalid SIMD opcode'));
    WebAssembly.instantiateStreaming = refuse;
    WebAssembly.instantiate = refuse;
  };
  const app = await openApp(t, { initScript: noSimd });
  await app.page.waitForSelector('#fatal:not([hidden])', { timeout: 20_000 });
  const text = await app.text('#fatal');
  assert.match(text, /could not start in this browser: .*invalid SIMD opcode/);
  assert.match(text, /WebAssembly with SIMD \(Chrome or Edge 91, Firefox 89, Safari 16\.4/);
  assert.equal(await app.page.locator('header').count(), 0, 'the app did not start');
});

test('the harness lays a request aborted by leaving the page on the navigation, and counts any other failed request', async (t) => {
  // A server that answers nothing: its requests stay in flight until the page gives them up.
  const hanging = [];
  const server = createServer((req, res) => hanging.push(res));
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  t.after(() => {
    for (const res of hanging) res.destroy();
    server.close();
  });
  const hang = `http://127.0.0.1:${server.address().port}/hang`;
  const app = await openApp(t);
  await app.waitForRendered();
  const inFlight = () => new Promise((done) => {
    const check = () => (hanging.length > 0 ? done() : setTimeout(check, 10));
    check();
  });
  const failed = () => app.page.waitForEvent('requestfailed', { predicate: (req) => req.url() === hang, timeout: 30_000 });
  await app.page.evaluate((url) => { fetch(url).catch(() => {}); }, hang);
  await inFlight();
  const leftBehind = failed();
  await app.page.goto(app.page.url());
  await leftBehind;
  await app.waitForRendered();
  app.assertNoErrors();
  // The same abort made by the page itself is reported.
  const aborted = failed();
  await app.page.evaluate(async (url) => {
    const stop = new AbortController();
    const pending = fetch(url, { signal: stop.signal }).catch(() => {});
    await new Promise((done) => setTimeout(done, 200));
    stop.abort();
    await pending;
  }, hang);
  await aborted;
  assert.deepEqual(app.errors.map((e) => e.replace(/\d+/g, 'N')), ['request failed: http://N.N.N.N:N/hang (net::ERR_ABORTED)']);
});
