// TORCH_TRACE logs in the app (issue #10): a log opened by link, file drop (gzip or plain)
// shows a graph picker listing its post-grad graphs as `commlens graphs` does, the chosen graph
// is planned as `commlens plan --graph K` plans it, the choice is kept in the link, and a log
// without a post-grad graph shows the core's message. The native CLI is the oracle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { openApp, launchBrowser, REPO, cli, counts, expected, nextPaint, seq } from './harness.mjs';

const LOG = join(REPO, 'examples/simple_fsdp_trace.log.gz');
const NO_GRAPH = join(REPO, 'tests/fixtures/tracelog/errors/no_graph.log');

function nativeGraphs(path) {
  return JSON.parse(execFileSync(cli(), ['graphs', path, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] }).toString()).graphs;
}

function nativePlanOf(path, graph, extra = []) {
  return JSON.parse(execFileSync(cli(), ['plan', path, '--graph', String(graph), ...extra], { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe'] }).toString());
}

/** The picker's options as the page shows them. */
async function pickerOptions(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('#graph option')].map((o) => ({
      graph: Number(o.value),
      compile_id: o.dataset.compile,
      kind: o.dataset.kind || null,
      nodes: o.dataset.nodes ? Number(o.dataset.nodes) : null,
      collectives: o.dataset.collectives ? Number(o.dataset.collectives) : null,
      selected: o.selected,
      disabled: o.disabled,
    })),
  );
}

function assertListing(shown, graphs) {
  assert.equal(shown.length, graphs.length, 'one option per post-grad graph');
  for (const [o, g] of shown.map((o, i) => [o, graphs[i]])) {
    assert.deepEqual(
      { graph: o.graph, compile_id: o.compile_id, kind: o.kind, nodes: o.nodes, collectives: o.collectives, disabled: o.disabled },
      { graph: g.graph, compile_id: g.compile_id, kind: g.kind, nodes: g.nodes, collectives: g.collectives, disabled: g.error !== null },
    );
  }
}

test('a trace log by link lists its graphs as `commlens graphs` does and plans the chosen one', async (t) => {
  const graphs = nativeGraphs(LOG);
  assert.ok(graphs.length > 2, 'the example log holds several graphs');
  const app = await openApp(t, { path: '?example=trace', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#graph');
  await app.waitForRendered('#chart svg');
  const shown = await pickerOptions(app.page);
  assertListing(shown, graphs);
  // It opens on the first graph with collectives, and the link says which.
  const first = graphs.find((g) => g.error === null && g.collectives > 0).graph;
  assert.equal(shown.find((o) => o.selected).graph, first);
  await app.page.waitForFunction((k) => document.querySelector('#share-url')?.value.includes(`graph=${k}`), first);
  assert.deepEqual(await counts(app), expected(nativePlanOf(LOG, first)));

  // Another graph: planned as the CLI plans it, and kept in the link.
  const other = graphs.filter((g) => g.error === null && g.collectives > 0 && g.graph !== first).at(-1).graph;
  const before = await seq(app);
  await app.page.selectOption('#graph', String(other));
  await nextPaint(app, before);
  await app.page.waitForFunction((k) => document.querySelector('#share-url')?.value.includes(`graph=${k}`), other);
  assert.deepEqual(await counts(app), expected(nativePlanOf(LOG, other)));
  assert.match(await app.text('#overview .summary'), new RegExp(`${graphs[other].collectives} collectives`));
  await app.screenshot('tracelog-picker');

  // The link reproduces the view: same graph, same chart.
  const url = await app.page.inputValue('#share-url');
  const view = (page) =>
    page.evaluate(() => ({ graph: document.querySelector('#graph').value, svg: document.querySelector('#chart svg').outerHTML }));
  const mine = await view(app.page);
  const browser = await launchBrowser();
  t.after(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
  await page.goto(url);
  await page.waitForSelector('#chart svg', { timeout: 60_000 });
  await page.waitForFunction((k) => document.querySelector('#graph')?.value === String(k), other);
  assert.deepEqual(await view(page), mine);
  app.assertNoErrors();
});

test('a dropped trace log, plain or gzip, shows its graph picker', async (t) => {
  const graphs = nativeGraphs(LOG);
  const app = await openApp(t, { viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('header');
  for (const file of [
    { path: LOG },
    { name: 'rank0.log', bytes: gunzipSync(readFileSync(LOG)) },
  ]) {
    const before = await seq(app);
    await app.dropFile('.app', file);
    await nextPaint(app, before);
    assertListing(await pickerOptions(app.page), graphs);
  }
  // A dropped file cannot be linked, but another of its graphs is read from memory.
  const other = graphs.filter((g) => g.error === null && g.collectives > 0).at(-1).graph;
  assert.notEqual(Number(await app.page.inputValue('#graph')), other);
  const before = await seq(app);
  await app.page.selectOption('#graph', String(other));
  await nextPaint(app, before);
  assert.deepEqual(await counts(app), expected(nativePlanOf(LOG, other)));
  app.assertNoErrors();
});

test('a log without a post-grad graph shows the core message; a graph out of range is explained', async (t) => {
  const app = await openApp(t, { path: '?example=trace&graph=99', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#chart svg');
  assert.match(await app.text('.notice'), /graph=99: the trace log holds \d+ post-grad graph/);
  const cliRun = spawnSync(cli(), ['graphs', NO_GRAPH]);
  assert.notEqual(cliRun.status, 0);
  const message = cliRun.stderr.toString().slice(cliRun.stderr.toString().indexOf('invalid trace log')).trim();
  assert.match(message, /^invalid trace log: no inductor_post_grad_graph artifact/);
  await app.dropFile('.app', { path: NO_GRAPH });
  await app.waitForRendered('#error');
  assert.ok((await app.text('#error')).includes(message), `${await app.text('#error')}\n!=\n${message}`);
  // The previous graph stays on screen.
  assert.ok(await app.page.locator('#graph').count());
  app.assertNoErrors();
});
