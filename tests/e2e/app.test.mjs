// End-to-end tests of the web app against the served build (COMMLENS_URL): loading, counts
// against the planner's reports, live re-planning, sharing, embedding, escaping, errors, and
// the 100k-node timings. Screenshots go to target/artifacts/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  openApp, launchBrowser, REPO, CASES, ARTIFACTS, cli, counts, expected, nativePlan, nextPaint, seq, readDump,
  synthDump, dropLarge, chartTexts, overlaps, BUDGET_MS, WORK,
} from './harness.mjs';

const haveShared = existsSync(CASES);

test('the example loads and shows its buckets', async (t) => {
  const app = await openApp(t, { path: '?example=mlp', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#chart svg [data-bucket]');
  const shown = await counts(app);
  const report = nativePlan(join(REPO, 'examples/mlp_fsdp.json'));
  assert.deepEqual(shown, expected(report));
  assert.equal(Number(await app.text('#bucket-count')), report.buckets.length);
  assert.ok(shown.bars > 0);
  assert.ok((await app.page.locator('#collectives tbody tr').count()) > 0);
  await app.screenshot('app-example-mlp');
  app.assertNoErrors();
});

test('the gzip example loads', async (t) => {
  const app = await openApp(t, { path: '?example=llama', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#chart svg [data-bucket]');
  const report = nativePlan(join(REPO, 'examples/llama_fsdp.json.gz'));
  assert.deepEqual(await counts(app), expected(report));
  await app.screenshot('app-example-llama');
  app.assertNoErrors();
});

test('a dropped conformance dump shows as many bars, splits and skips as its report', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const app = await openApp(t, { viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('header');
  for (const name of ['llama1_foreign_all_reduce', 'llama1_dropout_blocks', 'mlp_default']) {
    const before = await seq(app);
    await app.dropFile('.app', { path: join(CASES, name, 'dump.json') });
    await nextPaint(app, before);
    const report = JSON.parse(readFileSync(join(CASES, name, 'plan.json')));
    assert.deepEqual(await counts(app), expected(report), name);
    if (name === 'llama1_foreign_all_reduce') await app.screenshot('app-dropped-llama1');
  }
  app.assertNoErrors();
});

// The signature worker is started where the machine has four cores or more.
const eightCores = () => Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => 8 });
const twoCores = () => Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => 2 });

/** The distinct bucket ids of a plan's buckets, sorted. */
const bucketIds = (buckets) => [...new Set(buckets.map((b) => b.bucket_id))].sort();

/** Drops the dump at `path` and waits for it: the timing line, and the bucket ids drawn. */
async function dropForSignature(app, path) {
  const before = await seq(app);
  await app.dropFile('.app', { path });
  await nextPaint(app, before);
  return {
    perf: await app.page.locator('#perf').textContent(),
    shown: await app.page.$$eval('#chart svg [data-bucket]', (els) => [...new Set(els.map((e) => e.getAttribute('data-bucket')))].sort()),
  };
}

test('the bucket ids carry the reference signature however it is made: beside the read (four cores or more), from the read\'s records, or by the wasm', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const name = 'llama1_dropout_blocks';
  const ids = bucketIds(JSON.parse(readFileSync(join(CASES, name, 'plan.json'))).buckets);
  assert.ok(ids.length > 1, 'the case has buckets');
  // Without WebCrypto (an http:// page on another host is not a secure context).
  const noSubtle = () => Object.defineProperty(Crypto.prototype, 'subtle', { get: () => undefined });
  // The signature worker cannot start (as where a content policy refuses it).
  const noSignatureWorker = () => {
    Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => 8 });
    const post = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function (message, ...rest) {
      if (message && message.kind === 'start') throw new Error('refused');
      return post.call(this, message, ...rest);
    };
  };
  for (const [how, initScript] of [['beside the read', eightCores], ['WebCrypto', twoCores], ['WebCrypto', noSignatureWorker], ['wasm', noSubtle]]) {
    const app = await openApp(t, { viewport: { width: 1400, height: 1000 }, initScript });
    await app.waitForRendered('header');
    const { perf, shown } = await dropForSignature(app, join(CASES, name, 'dump.json'));
    assert.match(perf, new RegExp(`\\(signature: ${how}\\b`), how);
    assert.deepEqual(shown, ids, how);
    await app.screenshot(`app-signature-${how.split(' ')[0]}`);
    app.assertNoErrors();
  }
});

test('a dump without reprs has its signature made beside the read, as the CLI hashes it', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const dump = readDump(join(CASES, 'llama1_dropout_blocks', 'dump.json'));
  for (const n of dump.nodes) delete n.repr;
  const path = join(WORK, 'no-repr.json');
  writeFileSync(path, JSON.stringify(dump));
  const ids = bucketIds(nativePlan(path).buckets);
  const app = await openApp(t, { viewport: { width: 1400, height: 1000 }, initScript: eightCores });
  await app.waitForRendered('header');
  const { perf, shown } = await dropForSignature(app, path);
  assert.match(perf, /\(signature: beside the read\b/);
  assert.deepEqual(shown, ids);
  app.assertNoErrors();
});

test('a dump the signature worker declines (its nodes twice) is hashed by the wasm, as the CLI hashes it', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const dump = readDump(join(CASES, 'llama1_dropout_blocks', 'dump.json'));
  // A document that repeats a key is read as JSON reads it, the last `nodes` counting; the
  // worker, which parses nodes as they come, leaves such a document to the reader.
  const text = JSON.stringify(dump).replace(/^\{/, '{"nodes": [],');
  const path = join(WORK, 'nodes-twice.json');
  writeFileSync(path, text);
  const ids = bucketIds(nativePlan(path).buckets);
  const app = await openApp(t, { viewport: { width: 1400, height: 1000 }, initScript: eightCores });
  await app.waitForRendered('header');
  const { perf, shown } = await dropForSignature(app, path);
  assert.match(perf, /\(signature: wasm, after the browser failed\)/);
  assert.deepEqual(shown, ids);
  app.assertNoErrors();
});

test('a signature worker whose module cannot start is found out by the start-up warm-up and not asked again: reads hand their records to WebCrypto', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  // The worker starts, but its module cannot (as where workers have no dynamic import).
  const brokenModule = () => {
    Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => 8 });
    const post = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function (message, ...rest) {
      if (message && message.kind === 'start') message = { ...message, glue: new URL('/no-such-glue.js', location.href).href };
      return post.call(this, message, ...rest);
    };
  };
  const name = 'llama1_dropout_blocks';
  const ids = bucketIds(JSON.parse(readFileSync(join(CASES, name, 'plan.json'))).buckets);
  const app = await openApp(t, { viewport: { width: 1400, height: 1000 }, initScript: brokenModule });
  await app.waitForRendered('header');
  for (const how of ['WebCrypto', 'WebCrypto']) {
    const { perf, shown } = await dropForSignature(app, join(CASES, name, 'dump.json'));
    assert.match(perf, new RegExp(`\\(signature: ${how}\\b`), how);
    assert.deepEqual(shown, ids, how);
  }
  // The missing glue's 404 is the test's doing.
  app.assertNoErrors([/no-such-glue/, /404/]);
});

test('changing cap_bytes re-plans as the report for those arguments says', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const dumpPath = join(CASES, 'llama1_dropout_blocks', 'dump.json');
  const dump = readDump(dumpPath);
  const app = await openApp(t, { viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('header');
  let before = await seq(app);
  await app.dropFile('.app', { path: dumpPath });
  await nextPaint(app, before);
  const base = await counts(app);
  for (const cap of [20000, 4000]) {
    before = await seq(app);
    await app.page.fill('#cap', String(cap));
    await nextPaint(app, before);
    const policy = { ...((dump.planner && dump.planner.policy) || {}), cap_bytes: cap };
    const report = nativePlan(dumpPath, { policy });
    const shown = await counts(app);
    assert.deepEqual(shown, expected(report), `cap_bytes=${cap}`);
    if (cap === 4000) assert.notDeepEqual(shown, base, 'the cap changed nothing: pick a smaller one');
  }
  await app.screenshot('app-replanned');
  app.assertNoErrors();
});

test('a copied URL reproduces the same view in a fresh page', async (t) => {
  const app = await openApp(t, { path: '?example=llama', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#chart svg [data-bucket]');
  let before = await seq(app);
  await app.page.fill('#cap', '30000');
  await nextPaint(app, before);
  await app.page.selectOption('#plans', 'parents');
  await app.page.waitForFunction(() => document.querySelector('#share-url')?.value.includes('plans=parents'));
  await app.page.click('#zoom-in');
  await app.page.waitForFunction(() => document.querySelector('#share-url')?.value.includes('x0='));
  // Click a point of a bar that no other mark covers.
  const point = await app.page.evaluate(() => {
    for (const g of document.querySelectorAll('#chart svg [data-bucket]')) {
      const r = g.querySelector('rect').getBoundingClientRect();
      for (const fx of [0.9, 0.5, 0.1]) {
        const x = r.left + r.width * fx, y = r.top + r.height / 2;
        if (document.elementFromPoint(x, y)?.closest('[data-bucket]') === g) return { x, y, id: g.getAttribute('data-bucket') };
      }
    }
    return null;
  });
  assert.ok(point, 'a clickable bar');
  await app.page.mouse.click(point.x, point.y);
  await app.waitForRendered('#detail');
  assert.ok((await app.text('#detail')).includes(point.id));
  const url = await app.page.inputValue('#share-url');
  assert.match(url, /example=llama/);
  const view = async (a) =>
    a.page.evaluate(() => ({
      svg: document.querySelector('#chart svg').outerHTML,
      detail: document.querySelector('#detail')?.innerText,
      cap: document.querySelector('#cap').value,
      plans: document.querySelector('#plans').value,
    }));
  const first = await view(app);
  const browser = await launchBrowser();
  t.after(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
  await page.goto(url);
  await page.waitForSelector('#detail', { timeout: 60_000 });
  const second = await view({ page });
  assert.equal(second.cap, first.cap);
  assert.equal(second.plans, first.plans);
  assert.equal(second.detail, first.detail);
  assert.equal(second.svg, first.svg);
  app.assertNoErrors();
});

test('embed mode renders the chart alone', async (t) => {
  const app = await openApp(t, { path: '?example=mlp&embed=timeline', viewport: { width: 900, height: 420 } });
  await app.waitForRendered('#chart svg [data-bucket]');
  const parts = await app.page.evaluate(() => ({
    table: !!document.querySelector('#collectives'),
    controls: !!document.querySelector('.controls'),
    overview: !!document.querySelector('#overview'),
    header: !!document.querySelector('header'),
    svgWidth: document.querySelector('#chart svg').getBoundingClientRect().width,
  }));
  assert.deepEqual({ ...parts, svgWidth: undefined }, { table: false, controls: false, overview: false, header: false, svgWidth: undefined });
  assert.ok(parts.svgWidth <= 900 && parts.svgWidth > 600, `chart width ${parts.svgWidth}`);
  await app.screenshot('app-embed');
  app.assertNoErrors();
});

test('markup in names is shown as text and runs nothing', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const evil = '<img src=x onerror=alert(1)>';
  const dump = readDump(join(CASES, 'mlp_default', 'dump.json'));
  const renamed = dump.nodes.find((n) => n.meta && n.meta.comm_type === 'fsdp_all_gather').name;
  const rename = (v) => {
    if (Array.isArray(v)) return v.map(rename);
    if (v && typeof v === 'object') {
      if (Object.keys(v).length === 1 && v.node === renamed) return { node: evil };
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, rename(x)]));
    }
    return v;
  };
  dump.nodes = dump.nodes.map((n) => ({ ...rename(n), name: n.name === renamed ? evil : n.name }));
  for (const n of dump.nodes) if (n.meta && n.meta.param_name) n.meta.param_name = n.meta.param_name;
  dump.source = { ...(dump.source || {}), model: evil };
  const app = await openApp(t, { viewport: { width: 1400, height: 1000 } });
  const dialogs = [];
  app.page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await app.waitForRendered('header');
  const before = await seq(app);
  await app.dropFile('.app', { name: `${evil}.json`, bytes: JSON.stringify(dump) });
  await nextPaint(app, before);
  const row = app.page.locator('#collectives tbody tr', { hasText: evil });
  assert.equal(await row.count(), 1, 'the markup name shows as text in the table');
  await row.click();
  await app.waitForRendered('#detail');
  assert.ok((await app.text('#detail')).includes(evil));
  await app.page.waitForTimeout(300);
  const imgs = await app.page.evaluate(() => document.querySelectorAll('img').length);
  assert.equal(imgs, 0, 'no <img> element was created');
  assert.deepEqual(dialogs, []);
  await app.screenshot('app-markup-names');
  app.assertNoErrors();
});

test('a malformed dump shows the reader\'s message and the previous view survives', async (t) => {
  const app = await openApp(t, { path: '?example=mlp', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#chart svg [data-bucket]');
  const good = await counts(app);
  const dump = readDump(join(REPO, 'examples/mlp_fsdp.json'));
  dump.nodes[3].op = 'call_functoin';
  const bad = dump.nodes[3].name;
  await app.dropFile('.app', { name: 'broken.json', bytes: JSON.stringify(dump) });
  await app.waitForRendered('#error');
  const message = await app.text('#error');
  assert.match(message, new RegExp(`node 3 \\("${bad}"\\)`));
  assert.match(message, /field "op"/);
  assert.deepEqual(await counts(app), good, 'the previous view is still there');
  await app.dropFile('.app', { name: 'truncated.json', bytes: '{"format": "commlens.graph", "version": 1, "nodes": [' });
  await app.page.waitForFunction(() => /line 1, column/.test(document.querySelector('#error')?.innerText || ''));
  assert.deepEqual(await counts(app), good);
  await app.screenshot('app-malformed');
  app.assertNoErrors();
});

test('a fetch failure is explained', async (t) => {
  const app = await openApp(t, { path: '?src=missing/nothing.json' });
  await app.waitForRendered('#error');
  assert.match(await app.text('#error'), /HTTP 404/);
  app.assertNoErrors([/404/]);
});

test('100k nodes: drop to painted timeline, and re-plan; the whole view says where the big buckets are', async (t) => {
  const file = synthDump(100000);
  const bytes = readFileSync(file);
  const app = await openApp(t, { viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('header');
  const wall = await dropLarge(app, file, 'synth_100k.json');
  const load = await app.page.evaluate(() => {
    const perf = document.querySelector('#perf');
    return { app: Number(perf.getAttribute('data-load-ms')), stages: perf.textContent, elements: document.querySelectorAll('#chart svg *').length };
  });
  const replans = [];
  for (const cap of [50000, 200000, 1000000]) {
    const before = await seq(app);
    await app.page.fill('#cap', String(cap));
    await nextPaint(app, before);
    replans.push(await app.page.evaluate(() => ({
      app: Number(document.querySelector('#perf').getAttribute('data-replan-ms')),
      stages: document.querySelector('#perf').textContent,
    })));
  }
  const nodes = await app.page.evaluate(() => document.querySelector('#chart svg').getAttribute('data-nodes'));
  console.log(`# 100k scale: ${nodes} nodes, ${(bytes.length / 1e6).toFixed(1)} MB JSON`);
  console.log(`#   drop → painted: ${load.app.toFixed(0)} ms (page wall ${wall.toFixed(0)} ms; ${load.stages}); ${load.elements} SVG elements`);
  for (const r of replans) console.log(`#   re-plan → painted: ${r.app.toFixed(0)} ms (${r.stages})`);
  // The whole view: columns whose height is the bytes of the largest bucket launched there,
  // the largest named; nothing overlapping.
  const columns = await app.page.evaluate(() => {
    const cols = [...document.querySelectorAll('#chart svg [data-bucket-group]')];
    return {
      n: cols.length,
      heights: new Set(cols.map((c) => Math.round(c.querySelector('rect').getBoundingClientRect().height))).size,
      named: cols.filter((c) => /bucket_\d+ .*(B|KiB|MiB)/.test(c.querySelector('text')?.textContent || '')).length,
    };
  });
  assert.ok(columns.n > 50, `${columns.n} columns`);
  assert.ok(columns.heights > 1, 'column heights follow bytes');
  assert.ok(columns.named >= 3, 'the largest buckets are named');
  const { texts } = await chartTexts(app.page);
  assert.deepEqual(overlaps(texts, 1).map(([a, b]) => `${a.text} × ${b.text}`), [], 'overlapping texts');
  await app.screenshot('app-100k-page');
  await app.page.locator('section.timeline').screenshot({ path: join(ARTIFACTS, 'app-100k.png') });
  assert.ok(Number(nodes) >= 100000);
  assert.ok(load.elements < 20000, `the 100k timeline has ${load.elements} SVG elements`);
  // The budgets are asserted only when COMMLENS_PERF_STRICT=1 (BUDGET_MS); the figures are
  // printed above either way.
  if (process.env.COMMLENS_PERF_STRICT === '1') {
    assert.ok(load.app < BUDGET_MS.load100k, `drop → painted ${load.app} ms`);
    for (const r of replans) assert.ok(r.app < BUDGET_MS.replan, `re-plan ${r.app} ms`);
  }
  app.assertNoErrors();
});

// Issue 14: a 1M-node gzipped dump opens in the browser (the wasm build's memory, 4 GiB at
// most, holds it) and paints. It drops the scale step's dump (made once with the release
// example, about 16 MB gzipped, 449 MB of JSON), so it runs when COMMLENS_E2E_1M=1, which
// `cargo xtask test` sets when that dump is there (about 8 s here); the 5 s budget is
// asserted with COMMLENS_PERF_STRICT=1.
test('1M nodes, gzipped: the dump opens and the timeline paints', { skip: process.env.COMMLENS_E2E_1M !== '1' && 'set COMMLENS_E2E_1M=1' }, async (t) => {
  const file = join(REPO, 'target', 'scale', 'synth-1m.json.gz');
  if (!existsSync(file)) {
    // target/scale/ is made by the scale step, which a browser-only run skips.
    mkdirSync(dirname(file), { recursive: true });
    execFileSync('cargo', ['run', '-q', '--release', '--example', 'synth_dump', '--', '1000000', file], { cwd: REPO, stdio: 'inherit' });
  }
  const app = await openApp(t, { viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('header');
  const wall = await dropLarge(app, file, 'synth_1m.json.gz');
  const load = await app.page.evaluate(() => {
    const perf = document.querySelector('#perf');
    return { app: Number(perf.getAttribute('data-load-ms')), stages: perf.textContent, nodes: document.querySelector('#chart svg')?.getAttribute('data-nodes') };
  });
  console.log(`# 1M scale (gzipped, ${(readFileSync(file).length / 1e6).toFixed(1)} MB): drop → painted ${load.app.toFixed(0)} ms (page wall ${wall.toFixed(0)} ms; ${load.stages})`);
  assert.equal(load.nodes, '1012644');
  if (process.env.COMMLENS_PERF_STRICT === '1') assert.ok(load.app < BUDGET_MS.load1m, `1M drop → painted ${load.app} ms`);
  app.assertNoErrors();
});

test('each row\'s group and phase are the classifier\'s (`commlens roles`), where the call and its metadata disagree', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const dumpPath = join(CASES, 'mlp_signature_mutations', 'dump.json');
  const roles = JSON.parse(execFileSync(cli(), ['roles', dumpPath, '--json']).toString());
  const app = await openApp(t, { viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('header');
  const before = await seq(app);
  await app.dropFile('.app', { path: dumpPath });
  await nextPaint(app, before);
  const rows = await app.page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#collectives tbody tr')].map((r) => [r.children[1].innerText.trim(), { kind: r.children[3].innerText.trim(), group: r.children[4].innerText.trim() }])));
  assert.equal(Object.keys(rows).length, roles.collectives.length);
  const differs = roles.collectives.filter((c) => c.group !== readDump(dumpPath).nodes.find((n) => n.name === c.node).meta.comm_group);
  assert.ok(differs.length >= 2, 'the case has calls whose group is not their metadata\'s');
  for (const c of roles.collectives) {
    assert.equal(rows[c.node].group, c.group ?? '(unknown)', `${c.node}: group`);
    assert.match(rows[c.node].kind, new RegExp(`· ${c.phase}$`), `${c.node}: phase`);
  }
  app.assertNoErrors();
});

test('the table re-renders only when its rows change, not while the chart is zoomed, dragged or hovered', async (t) => {
  const app = await openApp(t, { path: '?example=llama', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#chart svg [data-bucket]');
  const renders = () => app.page.evaluate(() => Number(document.querySelector('section.table').getAttribute('data-renders')));
  await app.page.waitForTimeout(200);
  const before = await renders();
  const box = await app.page.locator('#chart svg').boundingBox();
  await app.page.mouse.move(box.x + box.width / 2, box.y + 80);
  for (let i = 0; i < 3; i++) await app.page.mouse.wheel(0, -200);
  await app.page.mouse.down();
  await app.page.mouse.move(box.x + box.width / 2 - 150, box.y + 80, { steps: 10 });
  await app.page.mouse.up();
  await app.page.click('#zoom-out');
  await app.page.waitForTimeout(400);
  assert.equal(await renders(), before, 'zooming and dragging the chart left the table alone');
  const painted = await seq(app);
  await app.page.fill('#cap', '20000');
  await nextPaint(app, painted);
  assert.ok((await renders()) > before, 'a re-plan renders the table again');
  app.assertNoErrors();
});
