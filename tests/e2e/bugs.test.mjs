// The bugs of issue #12, seen in a real browser, one test each. Every test here failed on the
// app before the fix (run against that build to see it); the native CLI is the oracle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  openApp, REPO, counts, expected, nativePlan, nextPaint, seq, shownRange, rangeChanged,
  synthDump, dropLarge, readDump,
} from './harness.mjs';

const LLAMA = join(REPO, 'examples/llama_fsdp.json.gz');
const wide = { width: 1400, height: 1000 };

/** A point of the element matching `selector` that hit-tests to it. */
async function clickablePoint(page, selector) {
  return page.evaluate((sel) => {
    for (const g of document.querySelectorAll(sel)) {
      const r = (g.querySelector('rect') || g).getBoundingClientRect();
      for (const fx of [0.5, 0.2, 0.8, 0.05, 0.95]) {
        const x = r.left + r.width * fx, y = r.top + r.height / 2;
        if (document.elementFromPoint(x, y)?.closest('[data-bucket],[data-split],[data-skip],[data-bucket-group],[data-overflow]') === g) {
          return { x, y, id: g.getAttribute('data-bucket') };
        }
      }
    }
    return null;
  }, selector);
}

test('1. the wheel zooms the loaded chart, and the page does not scroll', async (t) => {
  const app = await openApp(t, { path: '?example=llama', viewport: { width: 1400, height: 600 } });
  await app.waitForRendered('#chart svg [data-bucket]');
  const before = await shownRange(app.page);
  const box = await app.page.locator('#chart svg').boundingBox();
  await app.page.mouse.move(box.x + box.width * 0.6, box.y + 60);
  const scrolled = await app.page.evaluate(() => window.scrollY);
  await app.page.mouse.wheel(0, -300);
  await rangeChanged(app.page, before);
  const after = await shownRange(app.page);
  assert.ok(after[1] - after[0] < before[1] - before[0], `zoomed in: ${before} → ${after}`);
  assert.equal(await app.page.evaluate(() => window.scrollY), scrolled, 'the page did not scroll');
  app.assertNoErrors();
});

test('2. bars never overlap: a lane grows (Llama, cap_bytes=6000: 50 buckets, all clickable)', async (t) => {
  const app = await openApp(t, { path: '?example=llama&cap=6000', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  const report = nativePlan(LLAMA, { policy: { cap_bytes: 6000 } });
  assert.equal(report.buckets.length, 50);
  assert.deepEqual(await counts(app), expected(report));
  const rects = await app.page.evaluate(() =>
    [...document.querySelectorAll('#chart svg [data-bucket]')].map((g) => {
      const r = g.querySelector('rect').getBoundingClientRect();
      return { id: g.getAttribute('data-bucket'), left: r.left, right: r.right, top: r.top, bottom: r.bottom };
    }),
  );
  const pairs = [];
  for (let i = 0; i < rects.length; i++) {
    for (let j = i + 1; j < rects.length; j++) {
      const a = rects[i], b = rects[j];
      if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) pairs.push(`${a.id} × ${b.id}`);
    }
  }
  assert.deepEqual(pairs, [], 'overlapping bars');
  const hidden = await app.page.evaluate(() =>
    [...document.querySelectorAll('#chart svg [data-bucket]')].filter((g) => {
      g.scrollIntoView({ block: 'center' });
      const r = g.querySelector('rect').getBoundingClientRect();
      const hit = document.elementFromPoint(r.left + Math.min(r.width / 2, 3), r.top + r.height / 2);
      return hit?.closest('[data-bucket]') !== g;
    }).map((g) => g.getAttribute('data-bucket')),
  );
  assert.deepEqual(hidden, [], 'bars that cannot be clicked');
  app.assertNoErrors();
});

test('3. every overview count is the number of rows its filter shows', async (t) => {
  const app = await openApp(t, { path: '?example=llama&cap=6000', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  const facets = app.page.locator('#overview .facet');
  const n = await facets.count();
  assert.ok(n > 5);
  for (let i = 0; i < n; i++) {
    const facet = facets.nth(i);
    const label = (await facet.locator('.facet-label').innerText()).trim();
    const count = Number((await facet.locator('.count').innerText()).trim());
    await facet.click();
    await app.page.locator('#overview li.active').waitFor();
    await app.page.waitForTimeout(50);
    const shown = Number((await app.text('#row-count')).split(' ')[0]);
    assert.equal(shown, count, `${label}: the facet says ${count}, the table shows ${shown}`);
    await app.page.locator('#overview .facet').nth(i).click(); // clear
  }
  app.assertNoErrors();
});

test('4. a selection follows its collective when the plan changes', async (t) => {
  const app = await openApp(t, { path: '?example=llama', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  const dump = readDump(LLAMA);
  const position = (m) => dump.nodes.findIndex((n) => n.meta && n.meta.param_name === m.param_name && n.meta.comm_type === m.kind);
  const before = nativePlan(LLAMA);
  const after = nativePlan(LLAMA, { policy: { cap_bytes: 6000 } });
  const holding = (plan, node) => plan.buckets.find((b) => b.members.some((m) => position(m) === node));
  // A bucket of several members whose first collective is in a bucket of another id after
  // the re-plan (ids are positional).
  const bucket = before.buckets.find((b) => {
    if (b.members.length < 2) return false;
    const first = Math.min(...b.members.map(position));
    return holding(after, first).bucket_id !== b.bucket_id;
  });
  assert.ok(bucket, 'the example has a bucket whose id changes');
  const first = Math.min(...bucket.members.map(position));
  const name = dump.nodes[first].name;
  const short = bucket.bucket_id.split(':').pop();
  const point = await clickablePoint(app.page, `#chart svg [data-bucket$=":${short}"]`);
  assert.ok(point, `${short} can be clicked`);
  await app.page.mouse.click(point.x, point.y);
  await app.waitForRendered('#detail');
  assert.match(await app.text('#detail'), new RegExp(`\\b${name}\\b`));
  const painted = await seq(app);
  await app.page.fill('#cap', '6000');
  await nextPaint(app, painted);
  const detail = await app.text('#detail');
  assert.match(detail, new RegExp(`\\b${name}\\b`), 'the detail still shows the selected collective');
  const now = holding(after, first).bucket_id.split(':').pop();
  assert.match(detail, new RegExp(`Bucket ${now}\\b`), `it shows ${now}, the bucket that holds it now`);
  assert.match(await app.text('#notice'), new RegExp(`selection follows ${name}, now in ${now}`));
  app.assertNoErrors();
});

test('5. the chart is drawn again at its new width when the window is resized', async (t) => {
  const app = await openApp(t, { path: '?example=llama', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  const scale = () => app.page.evaluate(() => {
    const svg = document.querySelector('#chart svg');
    return svg.getBoundingClientRect().width / Number(svg.getAttribute('width'));
  });
  assert.ok(Math.abs((await scale()) - 1) < 0.02, 'drawn at its box width');
  await app.page.setViewportSize({ width: 800, height: 900 });
  await app.page.waitForFunction(() => {
    const svg = document.querySelector('#chart svg');
    return svg && Math.abs(svg.getBoundingClientRect().width / Number(svg.getAttribute('width')) - 1) < 0.02;
  }, null, { timeout: 10_000 });
  const smallest = await app.page.evaluate(() =>
    Math.min(...[...document.querySelectorAll('#chart svg text')].map((t) => parseFloat(getComputedStyle(t).fontSize) * (t.getScreenCTM()?.a || 1))));
  assert.ok(smallest >= 10, `the smallest text is ${smallest}px`);
  app.assertNoErrors();
});

test('6. bad input in the controls is explained next to the control and not applied', async (t) => {
  const app = await openApp(t, { path: '?example=llama', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  // 1e3 is a thousand.
  let before = await seq(app);
  await app.page.fill('#cap', '1e3');
  await nextPaint(app, before);
  assert.deepEqual(await counts(app), expected(nativePlan(LLAMA, { policy: { cap_bytes: 1000 } })));
  // A negative distance: said next to the field, the previous value kept.
  await app.page.fill('#mid', '30');
  await app.page.waitForFunction(() => document.querySelector('#share-url').value.includes('mid=30'));
  await app.page.fill('#mid', '-5');
  const error = app.page.locator('#mid-error');
  await error.waitFor();
  assert.match(await error.innerText(), /negative/);
  assert.equal(await app.page.getAttribute('#mid', 'aria-invalid'), 'true');
  assert.equal(await app.page.getAttribute('#mid', 'aria-describedby'), 'mid-error');
  assert.match(await app.page.inputValue('#share-url'), /mid=30/, 'the last valid value stays');
  // cap_bytes = 0: said at the field, and the plan does not change.
  const shown = await counts(app);
  await app.page.fill('#cap', '0');
  await app.page.locator('#cap-error').waitFor();
  assert.match(await app.text('#cap-error'), /positive/);
  assert.deepEqual(await counts(app), shown);
  // Explicit groups naming a module twice.
  await app.page.selectOption('#plans', 'explicit');
  await app.page.fill('#ptext', 'layers.0\nlayers.0');
  await app.page.locator('#ptext-error').waitFor();
  assert.match(await app.text('#ptext-error'), /Overlapping module bucket scopes: 'layers.0'/);
  assert.equal(await app.page.getAttribute('#ptext', 'aria-invalid'), 'true');
  app.assertNoErrors();
});

test('7. releasing a drag outside the chart leaves the address bar at the view', async (t) => {
  const app = await openApp(t, { path: '?example=llama&x0=100&x1=300', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  const before = await shownRange(app.page);
  const box = await app.page.locator('#chart svg').boundingBox();
  await app.page.mouse.move(box.x + box.width * 0.5, box.y + 80);
  await app.page.mouse.down();
  await app.page.mouse.move(box.x + box.width * 0.4, box.y + 80, { steps: 4 });
  await app.page.mouse.move(box.x + box.width * 0.3, box.y - 60, { steps: 4 }); // above the chart
  const header = await app.page.locator('header').boundingBox();
  await app.page.mouse.move(header.x + 20, header.y + 10, { steps: 2 });
  await app.page.mouse.up();
  await rangeChanged(app.page, before);
  const [x0, x1] = await shownRange(app.page);
  await app.page.waitForFunction(([a]) => new URLSearchParams(location.search).get('x0') === a.toFixed(2), [x0]);
  const params = new URL(await app.page.url()).searchParams;
  assert.equal(params.get('x0'), x0.toFixed(2));
  assert.equal(params.get('x1'), x1.toFixed(2));
  assert.ok(x0 > before[0], 'the drag panned right');
  app.assertNoErrors();
});

test('8. a zoomed view keeps the buckets whose windows cross it, and columns agree with the zoom they lead to', async (t) => {
  const file = synthDump(30000);
  const app = await openApp(t, { viewport: wide });
  await app.waitForRendered('header');
  await dropLarge(app, file, 'synth_30000.json');
  const report = nativePlan(file);
  // Whole graph: dense, columns by bytes.
  const column = await app.page.evaluate(() => {
    const cols = [...document.querySelectorAll('#chart svg [data-bucket-group]')];
    const g = cols.find((c) => Number(c.getAttribute('data-bucket-group')) >= 2) || cols[0];
    return g && { count: Number(g.getAttribute('data-bucket-group')), lane: g.getAttribute('data-lane'), from: Number(g.getAttribute('data-from')), to: Number(g.getAttribute('data-to')), index: cols.indexOf(g) };
  });
  assert.ok(column, 'the whole view shows columns');
  let before = await shownRange(app.page);
  await app.page.locator('#chart svg [data-bucket-group]').nth(column.index).locator('rect').click();
  await rangeChanged(app.page, before);
  const [x0, x1] = await shownRange(app.page);
  assert.ok(Math.abs(x0 - column.from) < 0.01 && Math.abs(x1 - column.to) < 0.01, `zoomed to the column's range ${column.from}–${column.to}: ${x0}–${x1}`);
  const anchored = await app.page.evaluate((lane) => document.querySelectorAll(`#chart svg [data-bucket][data-lane="${lane}"][data-anchored="true"]`).length, column.lane);
  assert.equal(anchored, column.count, 'the zoomed view shows the buckets the column counted');
  // A middle view (the toolbar zooms around the middle): every bucket whose window meets it
  // is drawn or counted.
  await app.page.click('#zoom-reset');
  for (let i = 0; i < 4; i++) await app.page.click('#zoom-in');
  await app.page.waitForFunction(() => {
    const s = document.querySelector('#chart svg');
    return s && Number(s.getAttribute('data-x1')) - Number(s.getAttribute('data-x0')) < Number(s.getAttribute('data-nodes')) / 15;
  });
  const [v0, v1] = await shownRange(app.page);
  const meets = report.buckets.filter((b) => {
    const s = Math.min(b.latest_input, b.earliest_consumer), e = Math.max(b.latest_input, b.earliest_consumer);
    return e + 1 > v0 && s < v1;
  }).length;
  const shown = await app.page.evaluate(() => {
    const svg = document.querySelector('#chart svg');
    return {
      inView: Number(svg.getAttribute('data-in-view')),
      bars: svg.querySelectorAll('[data-bucket]').length,
      notDrawn: Number(svg.getAttribute('data-not-drawn')),
    };
  });
  assert.ok(meets > 400, `${meets} windows meet the middle view: more than a dense view drops`);
  assert.ok(shown.inView >= meets, `${meets} windows meet ${v0}–${v1}; the chart accounts for ${shown.inView}`);
  assert.equal(shown.bars + shown.notDrawn, shown.inView, 'each is a bar or counted in an overflow strip');
  app.assertNoErrors();
});

test('9. a bucket can be found: bucket_N search, a selected row and a link bring it into view', async (t) => {
  const app = await openApp(t, { path: '?example=llama&cap=6000&x0=0&x1=60', viewport: wide });
  await app.waitForRendered('#chart svg [data-bucket]');
  const report = nativePlan(LLAMA, { policy: { cap_bytes: 6000 } });
  // "bucket_1" finds bucket_1 only, not bucket_10–19.
  await app.page.fill('#search', 'bucket_1');
  await app.page.waitForFunction(() => (document.querySelector('#row-count')?.innerText || '').match(/^\d+ of/));
  const b1 = report.buckets.find((b) => b.bucket_id.endsWith(':bucket_1'));
  assert.equal(Number((await app.text('#row-count')).split(' ')[0]), b1.members.length);
  // Selecting a row whose bucket is out of view brings it into view.
  const late = report.buckets[report.buckets.length - 1];
  await app.page.fill('#search', late.bucket_id.split(':').pop());
  await app.page.waitForFunction((n) => (document.querySelector('#row-count')?.innerText || '').startsWith(`${n} of`), late.members.length);
  assert.equal(await app.page.locator(`#chart svg [data-bucket="${late.bucket_id}"]`).count(), 0, 'not in view yet');
  const before = await shownRange(app.page);
  await app.page.locator('#collectives tbody tr').first().click();
  await rangeChanged(app.page, before);
  await app.page.locator(`#chart svg [data-bucket="${late.bucket_id}"]`).waitFor();
  // A link with a selection out of its view shows the selection.
  const page2 = await openApp(t, { path: `?example=llama&cap=6000&x0=0&x1=60&sel=b:${late.bucket_id.split(':').pop()}`, viewport: wide });
  await page2.page.locator(`#chart svg [data-bucket="${late.bucket_id}"]`).waitFor({ timeout: 30_000 });
  assert.match(await page2.text('#detail'), new RegExp(`Bucket ${late.bucket_id.split(':').pop()}\\b`));
  app.assertNoErrors();
  page2.assertNoErrors();
});
