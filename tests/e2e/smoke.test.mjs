// Smoke test of the harness and the served site: the page loads, the app renders something,
// and nothing failed on the way (no console error, no page error, no failed request).
import { test } from 'node:test';
import assert from 'node:assert/strict';
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
