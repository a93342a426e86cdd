// Accessibility (issue #12): every control reachable by keyboard (the file picker too); bars,
// split and skip marks focusable, Enter opening their detail; accessible names; text contrast
// at least 4.5:1. And the app's share of issue #13: the input-size limit, and a panic that
// shows an error and keeps the last good view.
import { gzipSync } from 'node:zlib';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openApp, REPO, CASES, nextPaint, seq, counts } from './harness.mjs';

const haveShared = existsSync(CASES);
const wide = { width: 1400, height: 1000 };

test('the file picker, the examples and the URL box are reached by keyboard', async (t) => {
  const app = await openApp(t, { viewport: wide });
  await app.waitForRendered('header');
  // Listening before any key is pressed: Playwright intercepts the chooser only then.
  const chooser = new Promise((resolve) => app.page.once('filechooser', resolve));
  await app.page.waitForTimeout(100);
  const reached = [];
  for (let i = 0; i < 8; i++) {
    await app.page.keyboard.press('Tab');
    reached.push(await app.page.evaluate(() => document.activeElement?.innerText || document.activeElement?.getAttribute('aria-label') || document.activeElement?.tagName));
  }
  assert.ok(reached.includes('Open file…'), `Tab reaches: ${reached.join(' | ')}`);
  await app.page.getByRole('button', { name: 'Open file…' }).focus();
  await app.page.keyboard.press('Enter');
  const opened = await Promise.race([chooser, new Promise((r) => setTimeout(() => r(null), 10_000))]);
  assert.ok(opened, 'Enter on "Open file…" opens the file chooser');
  // The chosen file is read.
  await opened.setFiles(join(REPO, 'examples/mlp_fsdp.json'));
  await app.waitForRendered('#chart svg [data-bucket]');
  app.assertNoErrors();
});

test('bars, splits and skips are focusable and Enter opens their detail', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const app = await openApp(t, { viewport: wide });
  await app.waitForRendered('header');
  const before = await seq(app);
  await app.dropFile('.app', { path: join(CASES, 'llama1_foreign_all_reduce', 'dump.json') });
  await nextPaint(app, before);
  for (const [selector, expect] of [
    ['#chart svg [data-bucket]', /Bucket bucket_\d+/],
    ['#chart svg [data-split]', /Split \((effect_or_storage_release|intervening_collective)\)/],
    ['#chart svg [data-skip]', /Skipped \(outside_module_plan\)/],
  ]) {
    const mark = app.page.locator(selector).first();
    assert.equal(await mark.getAttribute('tabindex'), '0', `${selector} is focusable`);
    assert.ok((await mark.getAttribute('aria-label'))?.length > 5, `${selector} has a name`);
    await mark.focus();
    assert.ok(await mark.evaluate((m) => document.activeElement === m), `${selector} took the focus`);
    await app.page.keyboard.press('Enter');
    await app.page.waitForFunction((re) => new RegExp(re).test(document.querySelector('#detail')?.innerText || ''), expect.source);
  }
  // The chart zooms by keyboard.
  const range = await app.page.evaluate(() => document.querySelector('#chart svg').getAttribute('data-x1'));
  await app.page.locator('#chart').focus();
  await app.page.keyboard.press('+');
  await app.page.waitForFunction((r) => document.querySelector('#chart svg').getAttribute('data-x1') !== r, range);
  app.assertNoErrors();
});

test('table rows are focusable; Enter, Space or a click selects one, which alone is marked and keeps the focus', async (t) => {
  const app = await openApp(t, { path: '?example=mlp', viewport: wide });
  await app.waitForRendered('#collectives tbody tr');
  const rows = app.page.locator('#collectives tbody tr');
  const marked = () => app.page.evaluate(() => [...document.querySelectorAll('#collectives tbody tr')]
    .filter((r) => r.classList.contains('selected') || r.getAttribute('aria-selected') !== 'false')
    .map((r) => [r.dataset.node, r.className, r.getAttribute('aria-selected')]));
  assert.deepEqual(await marked(), [], 'nothing is selected at first');
  const detailNames = (name) => app.page.waitForFunction((n) => (document.querySelector('#detail')?.innerText || '').includes(n), name);
  for (const [k, key] of [[1, 'Enter'], [2, ' ']]) {
    const row = rows.nth(k);
    assert.equal(await row.getAttribute('tabindex'), '0');
    const node = await row.getAttribute('data-node');
    const name = (await row.locator('td.name').innerText()).trim();
    await row.focus();
    await app.page.keyboard.press(key);
    await detailNames(name);
    assert.deepEqual(await marked(), [[node, 'selected', 'true']], `${JSON.stringify(key)} selects row ${k} alone`);
    assert.ok(await row.evaluate((r) => document.activeElement === r), 'the row keeps the focus');
  }
  const third = rows.nth(3);
  const name = (await third.locator('td.name').innerText()).trim();
  await third.locator('td.num').first().click();
  await detailNames(name);
  assert.deepEqual(await marked(), [[await third.getAttribute('data-node'), 'selected', 'true']], 'a click on a cell selects its row');
  app.assertNoErrors();
});

test('buttons, fields and the chart have accessible names', async (t) => {
  const app = await openApp(t, { path: '?example=llama', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  await app.page.locator('#chart svg [data-bucket]').first().click();
  await app.waitForRendered('#detail');
  const unnamed = await app.page.evaluate(() => {
    const name = (el) => {
      if (el.getAttribute('aria-label')) return el.getAttribute('aria-label');
      if (el.id) { const l = document.querySelector(`label[for="${el.id}"]`); if (l) return l.innerText; }
      if (el.closest('label')) return el.closest('label').innerText;
      return el.innerText || el.value || '';
    };
    const meaningful = (s) => /[\p{L}\p{N}]{2,}/u.test(s || '');
    const out = [];
    for (const el of document.querySelectorAll('button, input:not([type=hidden]):not([aria-hidden=true]), select, textarea, [role=button], [tabindex="0"]')) {
      if (el.closest('[aria-hidden=true]')) continue;
      const r = el.getBoundingClientRect();
      if (!r.width && !r.height && !(el instanceof SVGElement)) continue;
      if (!meaningful(name(el))) out.push(el.outerHTML.slice(0, 120));
    }
    return out;
  });
  assert.deepEqual(unnamed, [], 'controls without a name');
  assert.match(await app.page.getAttribute('#chart', 'aria-label'), /Bucket timeline/);
  app.assertNoErrors();
});

/** WCAG contrast of two CSS colours. */
function contrastOf() {
  return `(a, b) => {
    const rgb = (c) => (c.match(/[\\d.]+/g) || []).slice(0, 3).map(Number);
    const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
    const [x, y] = [lum(rgb(a)), lum(rgb(b))];
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  }`;
}

test('text contrasts at least 4.5:1 with what is under it, on the page and on the bars', async (t) => {
  const app = await openApp(t, { path: '?example=llama&cap=20000', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  await app.page.locator('#overview .facet').first().click();
  const low = await app.page.evaluate((src) => {
    const contrast = eval(src);
    const background = (el) => {
      for (let e = el; e; e = e.parentElement) {
        const c = getComputedStyle(e).backgroundColor;
        const m = c.match(/[\d.]+/g);
        if (m && (m.length < 4 || Number(m[3]) > 0.9)) return c;
      }
      return 'rgb(255, 255, 255)';
    };
    const out = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!n.textContent.trim() || el.closest('svg, [aria-hidden=true], #perf, button:disabled, option')) continue;
      if (!el.getClientRects().length) continue;
      const style = getComputedStyle(el);
      if (style.visibility === 'hidden' || Number(style.opacity) < 0.9) continue;
      const ratio = contrast(style.color, background(el));
      if (ratio < 4.5) out.push(`${n.textContent.trim().slice(0, 40)}: ${ratio.toFixed(2)} (${style.color} on ${background(el)})`);
    }
    // Bar labels inside bars: their fill against the bar's.
    for (const g of document.querySelectorAll('#chart svg [data-bucket]')) {
      const text = g.querySelector('text'), rect = g.querySelector('rect');
      if (!text) continue;
      const tr = text.getBoundingClientRect(), rr = rect.getBoundingClientRect();
      if (tr.left >= rr.right - 1) continue; // a label beside its bar sits on the lane
      const ratio = contrast(getComputedStyle(text).fill, getComputedStyle(rect).fill);
      if (ratio < 4.5) out.push(`bar label ${text.textContent}: ${ratio.toFixed(2)}`);
    }
    return out;
  }, contrastOf());
  assert.deepEqual(low, [], 'text under 4.5:1');
  app.assertNoErrors();
});

test('a dump over the input-size limit is refused before reading, saying how to raise it', async (t) => {
  const app = await openApp(t, { path: '?example=mlp&limit_mb=1', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  const good = await counts(app);
  await app.dropFile('.app', { name: 'huge.json', bytes: Buffer.alloc(1536 * 1024, 32) });
  await app.waitForRendered('#error');
  const message = await app.text('#error');
  assert.match(message, /huge\.json is 1\.5 MiB — more than the 1\.0 MiB this page reads/);
  assert.match(message, /limit_mb=2/);
  assert.deepEqual(await counts(app), good, 'the previous view stays');
  app.assertNoErrors();
});

test('a gzip bomb stops at the same limit, in the core, with the CLI\'s message', async (t) => {
  const app = await openApp(t, { path: '?example=mlp&limit_mb=1', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  const good = await counts(app);
  // 4 KB on disk, 4 MiB once decompressed: under the limit as stored, over it inflated.
  const bomb = gzipSync(Buffer.alloc(4 << 20, 32), { level: 9 });
  assert.ok(bomb.length < 64 * 1024);
  await app.dropFile('.app', { name: 'bomb.json.gz', bytes: bomb });
  await app.waitForRendered('#error');
  const message = await app.text('#error');
  assert.match(message, /bomb\.json\.gz: .*decompresses to more than the input-size limit of 1\.0 MiB/);
  assert.deepEqual(await counts(app), good, 'the previous view stays');
  app.assertNoErrors();
});

test('a panic shows an error and keeps the last good view', async (t) => {
  const app = await openApp(t, { path: '?example=llama', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  const good = await counts(app);
  const thrown = await app.page.evaluate(async () => {
    const wasm = await import(new URL('commlens_www.js', location.href).href);
    try { wasm.debug_panic('on purpose'); return null; } catch (e) { return String(e); }
  });
  assert.ok(thrown, 'the panic reached the page as an error');
  await app.waitForRendered('#fatal');
  assert.match(await app.text('#fatal'), /stopped on an internal error.*last good view.*debug_panic: on purpose/s);
  assert.deepEqual(await counts(app), good, 'the view is still there');
  app.assertNoErrors([/panicked|debug_panic|unreachable|RuntimeError/]);
});
