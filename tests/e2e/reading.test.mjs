// Reading the timeline (issue #12): every split and skip labelled, no text over another or cut
// off, ticks clear of labels, the cause of a split named; the table's search, sort and pages;
// what carries over to the next dump; the first screen. (The 100k view is checked in
// app.test.mjs, with its timings.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  openApp, CASES, chartTexts, overlaps, nativePlan, nextPaint, seq, synthDump, dropLarge,
} from './harness.mjs';

const haveShared = existsSync(CASES);
const wide = { width: 1400, height: 1000 };

/** Checks the drawing: texts apart and inside, every split and skip named, ticks clear. */
async function checkReadable(app, what) {
  const { svg, texts } = await chartTexts(app.page);
  const out = texts.filter((t) => t.left < svg.left - 1 || t.right > svg.right + 1 || t.top < svg.top - 1 || t.bottom > svg.bottom + 1);
  assert.deepEqual(out.map((t) => t.text), [], `${what}: texts cut off`);
  const pairs = overlaps(texts, 1);
  assert.deepEqual(pairs.map(([a, b]) => `${a.text} × ${b.text}`), [], `${what}: overlapping texts`);
  const unnamed = await app.page.evaluate(() => {
    const marks = [...document.querySelectorAll('#chart svg [data-split], #chart svg [data-skip]')];
    const byIndex = (kind, i) => document.querySelector(`#chart svg [${kind}][data-mark="${i}"]`);
    return marks.filter((m) => {
      if (m.querySelector('text')) return false;
      const kind = m.hasAttribute('data-split') ? 'data-split' : 'data-skip';
      const by = m.getAttribute('data-labelled-by');
      return !(by !== null && byIndex(kind, by)?.querySelector('text'));
    }).map((m) => `${m.getAttribute('data-split') || m.getAttribute('data-skip')} at ${m.getAttribute('data-node')}`);
  });
  assert.deepEqual(unnamed, [], `${what}: marks without a label`);
  const ticksOverLabels = await app.page.evaluate(() => {
    const labels = [...document.querySelectorAll('#chart svg [data-bucket] text')].map((t) => t.getBoundingClientRect());
    const ticks = [...document.querySelectorAll('#chart svg .ticks path, #chart svg .ticks polyline, #chart svg .ticks line')].map((p) => p.getBoundingClientRect());
    let n = 0;
    for (const t of ticks) for (const l of labels) if (t.left < l.right && l.left < t.right + 0.5 && t.top < l.bottom - 0.5 && l.top < t.bottom - 0.5) n++;
    return n;
  });
  assert.equal(ticksOverLabels, 0, `${what}: launch ticks over bar labels`);
}

test('every split and skip is labelled and no text overlaps another or is cut off', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  for (const viewport of [wide, { width: 700, height: 900 }]) {
    const app = await openApp(t, { path: '?example=llama&cap=6000', viewport });
    await app.waitForRendered('#chart svg [data-bucket]');
    await checkReadable(app, `llama cap=6000 at ${viewport.width}px`);
    // Adjacent splits (effect_or_storage_release, then intervening_collective) and skips.
    const before = await seq(app);
    await app.dropFile('.app, .embed', { path: join(CASES, 'llama1_foreign_all_reduce', 'dump.json') });
    await nextPaint(app, before);
    await checkReadable(app, `llama1_foreign_all_reduce at ${viewport.width}px`);
    const labels = await app.page.evaluate(() => [...document.querySelectorAll('#chart svg [data-split] text')].map((t) => t.textContent.trim()));
    assert.ok(labels.some((l) => l.startsWith('intervening')), `intervening_collective is labelled: ${labels}`);
    app.assertNoErrors();
    await app.close();
  }
});

test('the legend draws what the chart draws', async (t) => {
  const app = await openApp(t, { path: '?example=llama', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  const legend = await app.page.evaluate(() => [...document.querySelectorAll('#chart svg .frame text')].map((t) => t.textContent).join(' | '));
  assert.match(legend, /member launch \(where the graph launches it now; may lie outside the window\)/);
  assert.match(legend, /split \(reason\)/);
  app.assertNoErrors();
});

test('a split\'s detail names the node that caused it', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const app = await openApp(t, { viewport: wide });
  await app.waitForRendered('header');
  const before = await seq(app);
  await app.dropFile('.app', { path: join(CASES, 'llama1_foreign_all_reduce', 'dump.json') });
  await nextPaint(app, before);
  const mark = app.page.locator('#chart svg [data-split="intervening_collective"]');
  const cause = await mark.getAttribute('data-cause');
  assert.ok(cause, 'the mark names its cause');
  await mark.locator('text').first().click().catch(async () => mark.click({ force: true }));
  await app.waitForRendered('#detail');
  const detail = await app.text('#detail');
  assert.match(detail, new RegExp(`Caused by ${cause}`));
  app.assertNoErrors();
});

test('the table: a search that finds nothing says so; the bucket column sorts by number; sorting returns to page 1', async (t) => {
  const file = synthDump(12000);
  const app = await openApp(t, { viewport: wide });
  await app.waitForRendered('header');
  await dropLarge(app, file, 'synth_12000.json');
  await app.page.fill('#search', 'no such collective');
  await app.page.locator('#collectives tr.no-match').waitFor();
  assert.match(await app.text('#collectives tr.no-match'), /No collective matches “no such collective”/);
  await app.page.fill('#search', '');
  await app.page.locator('#collectives tbody tr:not(.no-match)').first().waitFor();
  await app.page.getByRole('button', { name: 'Next page' }).click();
  await app.page.waitForFunction(() => /page 2 of/.test(document.querySelector('.table-tools .page')?.innerText || ''));
  await app.page.locator('#collectives th button', { hasText: 'bucket' }).click();
  await app.page.waitForFunction(() => /page 1 of/.test(document.querySelector('.table-tools .page')?.innerText || ''));
  const buckets = await app.page.evaluate(() => [...document.querySelectorAll('#collectives tbody tr')].map((r) => r.children[7].innerText).filter(Boolean));
  const numbers = buckets.map((b) => Number(b.replace('bucket_', '')));
  assert.ok(numbers.length > 20);
  assert.deepEqual(numbers, [...numbers].sort((a, b) => a - b), 'bucket_9 comes before bucket_10');
  assert.ok(numbers.includes(9) && numbers.includes(10));
  app.assertNoErrors();
});

test('the decisions column shows every decision, whole, at 1400 px', async (t) => {
  const app = await openApp(t, { path: '?example=llama&cap=6000', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  const cells = await app.page.evaluate(() => [...document.querySelectorAll('#collectives td.decision')].map((c) => ({ text: c.innerText, cut: c.scrollWidth > c.clientWidth + 1 })));
  assert.ok(cells.some((c) => /split: capacity; singleton: oversized/.test(c.text)), 'a split and a singleton on one row');
  assert.deepEqual(cells.filter((c) => c.cut).map((c) => c.text), [], 'cut off');
  const overflow = await app.page.evaluate(() => { const s = document.querySelector('section.table'); return s.scrollWidth - s.clientWidth; });
  assert.ok(overflow <= 1, `the table scrolls sideways by ${overflow}px`);
  app.assertNoErrors();
});

test('module plans naming the previous graph\'s modules do not carry over; the policy does', async (t) => {
  const app = await openApp(t, { path: '?example=mlp', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  let before = await seq(app);
  await app.page.fill('#cap', '5000');
  await nextPaint(app, before);
  await app.page.selectOption('#plans', 'explicit');
  before = await seq(app);
  await app.page.fill('#ptext', 'l1\nl2');
  await nextPaint(app, before);
  before = await seq(app);
  await app.page.getByRole('button', { name: /Example: Llama/ }).click();
  await nextPaint(app, before);
  assert.equal(await app.page.inputValue('#plans'), 'dump');
  assert.equal(await app.page.inputValue('#cap'), '5000');
  assert.match(await app.text('#notice'), /module plans of the previous dump do not fit/);
  assert.equal(await app.page.locator('.plan-error').count(), 0, 'no planner error');
  app.assertNoErrors();
});

test('the URL box opens a path relative to the page; an unknown example explains itself', async (t) => {
  const app = await openApp(t, { viewport: wide });
  await app.waitForRendered('header');
  await app.page.fill('input[name=src]', 'examples/mlp_fsdp.json');
  await app.page.getByRole('button', { name: 'Open URL' }).click();
  await app.waitForRendered('#chart svg [data-bucket]');
  const bad = await openApp(t, { path: '?example=nope' });
  await bad.waitForRendered('#error');
  assert.match(await bad.text('#error'), /no built-in example “nope”; the examples are “mlp”.*“llama”/);
  app.assertNoErrors();
  bad.assertNoErrors();
});

test('the first screen says how to make a dump and links the guides', async (t) => {
  const app = await openApp(t);
  await app.waitForRendered('.welcome');
  const text = await app.text('.welcome');
  assert.match(text, /commlens_dump\.dump\(gm, "step0\.json\.gz"/);
  for (const href of ['docs/exporter.md', 'docs/app.md']) {
    const link = app.page.locator(`.welcome a[href="${href}"]`);
    assert.equal(await link.count(), 1, href);
    const res = await app.page.request.get(new URL(href, app.page.url()).href);
    assert.equal(res.status(), 200, href);
  }
  assert.match(await (await app.page.request.get(new URL('docs/exporter.md', app.page.url()).href)).text(), /commlens_dump/);
  app.assertNoErrors();
});
