// Time estimates in the app (issue #15, item 5): a hardware picker kept in the link, the
// step of the graph as it is and as planned (step, compute, communication, exposed
// communication) equal to `commlens cost --json` for the same hardware and arguments, updated
// on every re-plan; exposed stretches marked on the chart (summing to the planned exposed
// communication); bucket tooltips with their estimated time and algorithm; exports carrying
// the hardware. The native CLI is the oracle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp, launchBrowser, REPO, WORK, cli, nextPaint, seq, readDump, synthDump, dropLarge, BUDGET_MS } from './harness.mjs';

const LLAMA = join(REPO, 'examples/llama_fsdp.json.gz');

function nativeCost(path, args, options = []) {
  const file = join(WORK, `cost-args-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(args));
  const out = execFileSync(cli(), ['cost', path, '--args', file, '--json', ...options], { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe'] });
  return JSON.parse(out.toString()).summary;
}

/** The summary table: {unbucketed: {step_us, ...}, planned: {...}}. */
async function shownSummary(page) {
  return page.evaluate(() => {
    const keys = { step: 'step_us', compute: 'compute_us', comm: 'comm_us', exposed: 'exposed_comm_us' };
    const out = { unbucketed: {}, planned: {} };
    for (const tr of document.querySelectorAll('#cost-summary tbody tr')) {
      const [a, b] = tr.querySelectorAll('td');
      out.unbucketed[keys[tr.dataset.row]] = Number(a.dataset.us);
      out.planned[keys[tr.dataset.row]] = Number(b.dataset.us);
    }
    return out;
  });
}

function close(a, b, what) {
  assert.ok(Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${what}: ${a} != ${b}`);
}

test('the time estimates equal `commlens cost`, follow the hardware and every re-plan, and a link reproduces them', async (t) => {
  const policy = readDump(LLAMA).planner?.policy || {};
  const app = await openApp(t, { path: '?example=llama&cap=30000', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#chart svg [data-bucket]');
  let before = await seq(app);
  await app.page.click('#cost-on');
  await nextPaint(app, before);
  await app.page.waitForFunction(() => document.querySelector('#share-url')?.value.includes('gpu=ampere'));
  assert.deepEqual(await shownSummary(app.page), nativeCost(LLAMA, { policy: { ...policy, cap_bytes: 30000 } }));
  assert.match(await app.text('#cost-note'), /torch 2\.15's analytical NCCL model/);

  // Other hardware.
  before = await seq(app);
  await app.page.selectOption('#gpu', 'hopper');
  await nextPaint(app, before);
  before = await seq(app);
  await app.page.fill('#gpn', '4');
  await app.page.press('#gpn', 'Enter');
  await app.page.locator('#gpn').blur();
  await nextPaint(app, before);
  before = await seq(app);
  await app.page.uncheck('#nvlink');
  await nextPaint(app, before);
  const hw = ['--gpu', 'hopper', '--gpus-per-node', '4', '--no-nvlink'];
  assert.deepEqual(await shownSummary(app.page), nativeCost(LLAMA, { policy: { ...policy, cap_bytes: 30000 } }, hw));
  assert.match(await app.page.inputValue('#share-url'), /gpu=hopper&gpn=4&nvlink=0/);

  // A re-plan updates the planned side.
  before = await seq(app);
  await app.page.fill('#cap', '4000');
  await nextPaint(app, before);
  await app.page.waitForFunction(() => document.querySelector('#share-url')?.value.includes('cap=4000'));
  const native = nativeCost(LLAMA, { policy: { ...policy, cap_bytes: 4000 } }, hw);
  assert.deepEqual(await shownSummary(app.page), native);

  // Exposed stretches on the chart: together, the planned exposed communication.
  const exposed = await app.page.evaluate(() =>
    [...document.querySelectorAll('#chart svg [data-exposed]')].map((g) => Number(g.getAttribute('data-exposed'))),
  );
  assert.ok(exposed.length > 0, 'the plan leaves some communication exposed');
  close(exposed.reduce((a, b) => a + b, 0), native.planned.exposed_comm_us, 'exposed stretches');
  assert.match(await app.text('#chart'), /exposed comm \(est\.\)/);
  // A bar's tooltip says its estimated time and algorithm.
  const title = await app.page.evaluate(() => document.querySelector('#chart svg [data-bucket] title').textContent);
  assert.match(title, /estimated [\d.]+ (us|ms) \((Ring|Tree)\/(LL|LL128|Simple); model estimate\)/);
  // The x axis by estimated time: the whole view spans the planned step.
  before = await seq(app);
  await app.page.check('#time-axis');
  await nextPaint(app, before);
  await app.page.waitForFunction(() => document.querySelector('#chart svg')?.getAttribute('data-axis') === 'time');
  await app.page.waitForFunction(() => document.querySelector('#share-url')?.value.includes('x=time'));
  const fmt = (x) => (x >= 1e6 ? `${(x / 1e6).toFixed(3)} s` : x >= 1e3 ? `${(x / 1e3).toFixed(3)} ms` : `${x.toFixed(3)} us`);
  const chartText = await app.text('#chart');
  assert.ok(chartText.includes(`estimated 0.000 us–${fmt(native.planned.step_us)}`), chartText.slice(0, 300));
  assert.match(chartText, /estimated time in the planned step/);
  // Exposed waits are stretches now: together as wide as their time on the axis.
  const widths = await app.page.evaluate(() => {
    const svg = document.querySelector('#chart svg');
    const plot = Number(svg.getAttribute('data-plot-x1')) - Number(svg.getAttribute('data-plot-x0'));
    return { plot, marks: [...svg.querySelectorAll('[data-exposed] rect')].map((r) => Number(r.getAttribute('width'))) };
  });
  const drawn = widths.marks.reduce((a, b) => a + b, 0);
  const expectedWidth = (native.planned.exposed_comm_us / native.planned.step_us) * widths.plot;
  assert.ok(Math.abs(drawn - expectedWidth) <= 3 * widths.marks.length + 1, `exposed marks ${drawn}px, expected about ${expectedWidth}px`);
  await app.screenshot('cost-hopper');
  // A bucket's detail: its estimated time and algorithm, and how long compute waits for it.
  await app.page.locator('#chart svg [data-bucket]').first().focus();
  await app.page.keyboard.press('Enter');
  await app.waitForRendered('#bucket-estimate');
  assert.match(await app.text('#bucket-estimate'), /^Estimated [\d.]+ (us|ms) \((Ring|Tree)\/(LL|LL128|Simple)\); compute waits [\d.]+ (us|ms) for it/);

  // Exports carry the hardware.
  const [d] = await Promise.all([app.page.waitForEvent('download'), app.page.click('#export-settings')]);
  const file = join(WORK, `${process.pid}-${d.suggestedFilename()}`);
  await d.saveAs(file);
  const settings = JSON.parse(readFileSync(file, 'utf8'));
  assert.deepEqual([settings.hardware.gpu, settings.hardware.gpus_per_node, settings.hardware.nvlink], ['hopper', 4, false]);

  // The link reproduces the view.
  const url = await app.page.inputValue('#share-url');
  const view = (page) =>
    page.evaluate(() => ({
      gpu: document.querySelector('#gpu').value,
      summary: document.querySelector('#cost-summary').outerHTML,
      svg: document.querySelector('#chart svg').outerHTML,
    }));
  const mine = await view(app.page);
  const browser = await launchBrowser();
  t.after(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
  await page.goto(url);
  await page.waitForSelector('#cost-summary', { timeout: 60_000 });
  await page.waitForSelector('#chart svg [data-exposed]', { timeout: 60_000 });
  assert.deepEqual(await view(page), mine);

  // Off again: no estimates, no hardware in the link.
  before = await seq(app);
  await app.page.click('#cost-off');
  await nextPaint(app, before);
  assert.equal(await app.page.locator('#chart svg [data-exposed]').count(), 0);
  assert.ok(!(await app.page.inputValue('#share-url')).includes('gpu='));
  app.assertNoErrors();
});

test('100k nodes with the time axis on: drop, re-plan and repaint (figures printed; budgets with COMMLENS_PERF_STRICT=1)', async (t) => {
  const file = synthDump(100000);
  const app = await openApp(t, { path: '?gpu=hopper&x=time', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('header');
  await dropLarge(app, file, 'synth_100k.json');
  await app.page.waitForSelector('#chart svg[data-axis="time"]');
  const load = await app.page.evaluate(() => {
    const perf = document.querySelector('#perf');
    return { app: Number(perf.getAttribute('data-load-ms')), stages: perf.textContent };
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
  console.log(`# 100k with the time axis: drop → painted ${load.app.toFixed(0)} ms (${load.stages})`);
  for (const r of replans) console.log(`#   re-plan → painted: ${r.app.toFixed(0)} ms (${r.stages})`);
  assert.ok(await app.page.locator('#cost-summary').count());
  assert.match(replans[0].stages, /time estimates [\d.]+ ms/);
  if (process.env.COMMLENS_PERF_STRICT === '1') {
    assert.ok(load.app < BUDGET_MS.load100k, `drop → painted ${load.app} ms`);
    for (const r of replans) assert.ok(r.app < BUDGET_MS.replan, `re-plan ${r.app} ms`);
  }
  app.assertNoErrors();
});
