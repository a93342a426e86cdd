// Browser tests of the review views (www/src/views/): compare two plans, audit a transform,
// check ranks. The native CLI is the oracle: `commlens diff --json`, `commlens audit --json`
// and `commlens validate` on the same files. Screenshots go to target/artifacts/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createReadStream, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { openApp, REPO, SHARED, CASES, WORK, cli, readDump, synthDump, hostileDump, BUDGET_MS } from './harness.mjs';

const VALIDATE = join(SHARED, 'conformance', 'validate');
const IDENTITY = join(REPO, 'tests', 'fixtures', 'identity', 'cases');
const haveShared = existsSync(CASES);

/** Serves files under `files/` of the app's URL from the local disk (`files/shared/...` from
 * the shared corpus, `files/repo/...` from the repository); folders get an HTML listing. */
async function serveFiles(app) {
  // The first page finishes loading first (a navigation would abort its wasm request).
  await app.waitForRendered('header');
  await app.page.route('**/files/**', (route) => {
    const path = decodeURIComponent(new URL(route.request().url()).pathname.replace(/^.*\/files\//, ''));
    const [root, ...rest] = path.split('/');
    const base = root === 'shared' ? SHARED : root === 'repo' ? REPO : null;
    const file = base && join(base, ...rest);
    if (!file || !existsSync(file)) return route.fulfill({ status: 404, body: 'not found' });
    if (path.endsWith('/')) {
      const names = execFileSync('ls', [file]).toString().trim().split('\n');
      const body = `<html><body><h1>Index</h1><ul>${names.map((n) => `<li><a href="${n}">${n}</a></li>`).join('')}<li><a href="../">..</a></li></ul></body></html>`;
      return route.fulfill({ body, contentType: 'text/html' });
    }
    return route.fulfill({ body: readFileSync(file), contentType: 'application/octet-stream' });
  });
}

/** Serves `root`'s files over HTTP on a free 127.0.0.1 port, readable from any origin (the
 * app is served from another port); `url` ends with '/'. */
async function serveDir(root) {
  const server = createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/+/, '');
    const file = join(root, ...rel.split('/').filter((p) => p !== '..'));
    if (!existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { 'Access-Control-Allow-Origin': '*' });
      return res.end('not found');
    }
    res.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Content-Length': statSync(file).size,
      'Access-Control-Allow-Origin': '*',
    });
    createReadStream(file).pipe(res);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

async function download(app, selector) {
  const [d] = await Promise.all([app.page.waitForEvent('download'), app.page.click(selector)]);
  const file = join(WORK, `${process.pid}-${d.suggestedFilename()}`);
  await d.saveAs(file);
  return readFileSync(file, 'utf8');
}

function argsFile(args) {
  const file = join(WORK, `args-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(args));
  return file;
}

function nativeDiff(before, after, argsBefore, argsAfter) {
  const argv = ['diff', before, after, '--json'];
  if (argsBefore) argv.push('--args-before', argsFile(argsBefore));
  if (argsAfter) argv.push('--args-after', argsFile(argsAfter));
  return execFileSync(cli(), argv, { maxBuffer: 1 << 30 }).toString();
}

/** The view both charts show, as [[x0, x1] before, [x0, x1] after]. */
async function ranges(app) {
  return app.page.evaluate(() => ['#chart-before', '#chart-after'].map((id) => {
    const svg = document.querySelector(`${id} svg`);
    return [Number(svg.getAttribute('data-x0')), Number(svg.getAttribute('data-x1'))];
  }));
}

async function summary(app) {
  const n = async (id) => Number(await app.text(id));
  return { regrouped: await n('#cmp-regrouped'), only_before: await n('#cmp-only-before'), only_after: await n('#cmp-only-after'),
    same: await n('#cmp-same'), removed: await n('#cmp-removed'), added: await n('#cmp-added') };
}

function expectedSummary(diff) {
  const count = (c) => diff.collectives.filter((x) => x.change === c).length;
  return { regrouped: count('regrouped'), only_before: count('only_before'), only_after: count('only_after'), same: count('same'),
    removed: diff.decisions.removed.length, added: diff.decisions.added.length };
}

test('compare: one dump under two settings is the CLI diff, charts share one view, the table pans both, the link reproduces it', async (t) => {
  const dumpPath = join(REPO, 'examples/llama_fsdp.json.gz');
  const policy = (readDump(dumpPath).planner || {}).policy || {};
  const native = nativeDiff(dumpPath, dumpPath, { policy: { ...policy, cap_bytes: 4000 } }, { policy: { ...policy, cap_bytes: 30000 } });
  const diff = JSON.parse(native);
  const app = await openApp(t, { path: '?example=llama&cap=30000&bcap=4000', viewport: { width: 1400, height: 1100 } });
  await app.waitForRendered('#chart-after svg [data-bucket]');
  await app.waitForRendered('#chart-before svg [data-bucket]');
  assert.equal(await download(app, '#export-diff'), native, 'the app\'s diff is `commlens diff --json`, byte for byte');
  assert.deepEqual(await summary(app), expectedSummary(diff));
  assert.ok(diff.collectives.some((c) => c.change !== 'same'), 'the settings change the plan');
  const changed = diff.collectives.filter((c) => c.change !== 'same');
  assert.equal(await app.page.locator('#changes h2').innerText(), `Changed collectives (${changed.length})`);
  // The diff in plain words is written out only once its panel is opened.
  assert.equal(await app.page.locator('.diff-text pre').count(), 0);
  await app.page.click('.diff-text summary');
  assert.match(await app.text('.diff-text pre'), /^plan diff of one graph \(signature [0-9a-f]{12}\)/);
  // Changed buckets are drawn at full strength, the others dimmed.
  for (const [side, scope] of [['before', '#chart-before'], ['after', '#chart-after']]) {
    const ids = new Set(changed.map((c) => c[side] && c[side].bucket_id).filter(Boolean));
    const bars = await app.page.evaluate((sel) => [...document.querySelectorAll(`${sel} svg [data-bucket]`)]
      .map((g) => [g.getAttribute('data-bucket'), getComputedStyle(g).opacity]), scope);
    assert.ok(bars.length > 0);
    for (const [id, opacity] of bars) {
      assert.equal(opacity, ids.has(id) ? '1' : '0.35', `${scope} ${id}`);
    }
  }
  // Decisions removed are outlined on the chart before, those added on the chart after.
  for (const [which, scope] of [['removed', '#chart-before'], ['added', '#chart-after']]) {
    const marks = await app.page.evaluate((sel) => [...document.querySelectorAll(`${sel} svg [data-split], ${sel} svg [data-skip]`)]
      .map((g) => [g.hasAttribute('data-split') ? 'split' : 'skip', g.getAttribute('data-node'), getComputedStyle(g).outlineStyle]), scope);
    const listed = new Set(diff.decisions[which].filter((d) => d.action !== 'singleton').map((d) => `${d.action} ${d.node}`));
    for (const [action, node, outline] of marks) {
      assert.equal(outline, listed.has(`${action} ${node}`) ? 'solid' : 'none', `${scope} ${action} at ${node}`);
    }
    if (which === 'added') assert.ok(marks.some(([, , o]) => o === 'solid'), 'an added split is drawn and outlined');
  }
  // One view for both charts.
  let [b, a] = await ranges(app);
  assert.deepEqual(b, a);
  await app.page.click('#chart-after .zoom-in');
  await app.page.waitForFunction((x1) => Number(document.querySelector('#chart-before svg').getAttribute('data-x1')) !== x1, b[1]);
  [b, a] = await ranges(app);
  assert.deepEqual(b, a, 'zooming one chart zooms the other');
  // A row brings both charts to its buckets and outlines them.
  const row = app.page.locator('#changes tr.change').nth(Math.min(3, changed.length - 1));
  const rowId = await row.getAttribute('data-row');
  const pick = changed.find((c) => `${c.kind}:${c.param_name}:${c.state_idx}` === rowId);
  assert.ok(pick, `row ${rowId} is a changed collective of the CLI's diff`);
  await row.locator('button').click();
  await app.page.waitForFunction(() => new URL(location.href).searchParams.get('row'));
  for (const [side, scope] of [['before', '#chart-before'], ['after', '#chart-after']]) {
    if (!pick[side]) continue;
    const g = app.page.locator(`${scope} svg [data-bucket="${pick[side].bucket_id}"]`);
    assert.equal(await g.count(), 1, `${scope} draws ${pick[side].bucket_id}`);
    const [x0, x1] = (await ranges(app))[side === 'before' ? 0 : 1];
    const [s, e] = [Number(await g.getAttribute('data-start')), Number(await g.getAttribute('data-end'))];
    assert.ok(x0 <= s && e <= x1 + 1, `${scope}: ${s}..${e} in view ${x0}..${x1}`);
  }
  [b, a] = await ranges(app);
  assert.deepEqual(b, a);
  await app.screenshot('views-compare-settings');
  const link = app.page.url();
  assert.match(link, /bcap=4000/);
  app.assertNoErrors();
  // The link alone reproduces the comparison, the view and the selected row.
  const again = await openApp(t, { path: link.slice(link.indexOf('?')), viewport: { width: 1400, height: 1100 } });
  await again.waitForRendered('#chart-after svg [data-bucket]');
  assert.deepEqual(await ranges(again), [b, a]);
  assert.equal(await again.page.locator('#changes tr.selected').getAttribute('data-row'), rowId);
  assert.deepEqual(await summary(again), expectedSummary(diff));
  again.assertNoErrors();
});

test('compare: two dumps, and two plan reports, as the CLI diffs them', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const pairs = [['llama2_default', 'llama2_blocks'], ['mlp_default', 'mlp_capacity'], ['llama2_default', 'llama2_repeated_parameter']];
  const app = await openApp(t, { path: '?view=compare', viewport: { width: 1400, height: 1000 } });
  await serveFiles(app);
  for (const [before, after] of pairs) {
    for (const file of ['dump.json', 'plan.json']) {
      const native = JSON.parse(nativeDiff(join(CASES, before, file), join(CASES, after, file)));
      const url = `?src=files/shared/conformance/cases/${after}/${file}&base=files/shared/conformance/cases/${before}/${file}`;
      await app.page.goto(new URL(url, app.page.url()).href);
      await app.waitForRendered('#compare-summary');
      assert.deepEqual(await summary(app), expectedSummary(native), `${before} → ${after} (${file})`);
      const charts = await app.page.locator('#chart-after svg').count();
      assert.equal(charts, file === 'dump.json' ? 1 : 0, 'dumps are drawn; reports have no graph positions');
      if (before === 'llama2_default' && after === 'llama2_blocks' && file === 'dump.json') await app.screenshot('views-compare-dumps');
    }
  }
  app.assertNoErrors();
});

test('compare: two picked files; a bad side is named', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const app = await openApp(t, { path: '?view=compare', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#before-file');
  await app.setFile('#before-file', { path: join(CASES, 'mlp_default', 'plan.json') });
  await app.setFile('#after-file', { path: join(CASES, 'mlp_capacity', 'dump.json') });
  await app.page.click('#compare-go');
  await app.waitForRendered('#compare-summary');
  const native = JSON.parse(nativeDiff(join(CASES, 'mlp_default', 'plan.json'), join(CASES, 'mlp_capacity', 'dump.json')));
  assert.deepEqual(await summary(app), expectedSummary(native));
  const bad = await openApp(t, { path: '?view=compare' });
  await bad.waitForRendered('#before-file');
  await bad.setFile('#before-file', { name: 'broken.json', bytes: '{"buckets": 7}' });
  await bad.setFile('#after-file', { path: join(CASES, 'mlp_capacity', 'dump.json') });
  await bad.page.click('#compare-go');
  await bad.waitForRendered('#error');
  assert.match(await bad.text('#error'), /broken\.json: invalid plan report/);
  app.assertNoErrors();
});

test('audit: each collective kept, combined, dropped or lost, as `commlens audit` says', async (t) => {
  const app = await openApp(t, { path: '?view=audit', viewport: { width: 1400, height: 1000 } });
  await serveFiles(app);
  for (const name of ['bucketing_mixed_role', 'audit_lost', 'bucketing_same_role']) {
    const [before, after] = [join(IDENTITY, `${name}.before.json`), join(IDENTITY, `${name}.after.json`)];
    const native = execFileSync(cli(), ['audit', before, after, '--json']).toString();
    const audit = JSON.parse(native);
    const url = `?src=files/repo/tests/fixtures/identity/cases/${name}.after.json&before=files/repo/tests/fixtures/identity/cases/${name}.before.json`;
    await app.page.goto(new URL(url, app.page.url()).href);
    await app.waitForRendered('#audit-table');
    assert.equal(await download(app, '#export-audit'), native, `${name}: the audit is \`commlens audit --json\``);
    const statuses = await app.page.locator('#audit-table tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-status')));
    assert.deepEqual(statuses, [...audit.entries.map((e) => e.status), ...audit.new.map(() => 'new')], name);
    const names = await app.page.locator('#audit-table tbody tr td:nth-child(2) code').allInnerTexts();
    assert.deepEqual(names, audit.entries.map((e) => e.node), name);
    assert.equal(await app.page.locator('#audit-diagnostics li').count(), audit.diagnostics.length, name);
    if (name === 'bucketing_mixed_role') await app.screenshot('views-audit');
    // A status facet keeps only its rows.
    const status = audit.entries[0].status;
    await app.page.click(`.statuses [data-status="${status}"]`);
    const kept = await app.page.locator('#audit-table tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-status')));
    assert.deepEqual(kept, audit.entries.filter((e) => e.status === status).map((e) => e.status));
  }
  assert.match(await app.text('#audit-coverage'), /explicit/);
  app.assertNoErrors();
});

test('ranks: a manifest, a folder listing and picked files give validate\'s verdict, naming rank, file and field', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const app = await openApp(t, { path: '?view=ranks', viewport: { width: 1400, height: 1000 } });
  await serveFiles(app);
  // A disagreement: the CLI's explanation, the cell it blames.
  // (Run beside the manifest, so that the CLI names the files as the app does.)
  const cliRun = spawnSync(cli(), ['validate', 'validate.json'], { cwd: join(VALIDATE, 'disagree_buckets') });
  assert.notEqual(cliRun.status, 0);
  await app.page.goto(new URL('?ranks=files/shared/conformance/validate/disagree_buckets/validate.json', app.page.url()).href);
  await app.waitForRendered('#rank-verdicts li.verdict');
  const explain = await app.text('#rank-verdicts .verdict.failed pre.explain');
  assert.ok(cliRun.stderr.toString().includes(explain.trim()), `the app says what validate says:\n${explain}\n---\n${cliRun.stderr}`);
  assert.match(explain, /rank 1/);
  assert.match(explain, /rank_1\.json/);
  assert.match(explain, /bucket/);
  assert.ok(!explain.includes('None'));
  assert.equal(await app.page.locator('#ranks-table tr[data-rank="1"] td.blamed').count(), 1);
  await app.screenshot('views-ranks-disagree');
  // Agreement, from a folder listing (ranks from the file names).
  await app.page.goto(new URL('?ranks=files/shared/conformance/validate/llama_four_ranks_ok/', app.page.url()).href);
  await app.waitForRendered('#rank-verdicts li.verdict');
  assert.match(await app.text('#rank-verdicts li.verdict'), /ok 4 rank reports agree for group fsdp/);
  // (These ranks' graphs differ; their plans agree: the signature is shown, not blamed.)
  assert.match(await app.text('#rank-verdicts .signatures'), /3 of 4 ranks have another than rank 0's/);
  assert.equal(await app.page.locator('#ranks-table tbody tr').count(), 4);
  // Picked files, the manifest among them.
  const picker = await openApp(t, { path: '?view=ranks' });
  await picker.waitForRendered('#ranks-files');
  const files = ['validate.json', 'rank_0.json', 'rank_1.json'].map((n) => {
    const bytes = readFileSync(join(VALIDATE, 'disagree_buckets', n));
    return { name: n, mimeType: 'application/json', buffer: bytes };
  });
  await picker.page.setInputFiles('#ranks-files', files);
  await picker.waitForRendered('#rank-verdicts .verdict.failed');
  assert.equal((await picker.text('#rank-verdicts .verdict.failed pre.explain')).trim(), explain.trim());
  app.assertNoErrors();
  picker.assertNoErrors();
});

test('ranks: dumps of two ranks whose plans differ show the first differing bucket in both timelines', { skip: !haveShared && 'no shared corpus' }, async (t) => {
  const [a, b] = [join(CASES, 'mlp_default', 'dump.json'), join(CASES, 'mlp_fp16', 'dump.json')];
  const verdict = JSON.parse(spawnSync(cli(), ['validate', '--json', '--group', 'fsdp', '--rank', `0=${a}`, '--rank', `1=${b}`]).stdout.toString());
  const ids = verdict.first_difference.bucket_ids;
  const app = await openApp(t, { path: '?view=ranks', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#ranks-files');
  // Both dumps record rank 0 (one was copied for the other): the file names number them.
  await app.page.setInputFiles('#ranks-files', [
    { name: 'rank_0.json', mimeType: 'application/json', buffer: readFileSync(a) },
    { name: 'rank_1.json', mimeType: 'application/json', buffer: readFileSync(b) },
  ]);
  await app.waitForRendered('#divergence svg');
  assert.match(await app.text('#rank-verdicts .verdict.failed pre.explain'), /member 0: dtype is "torch.float16" in rank 1, "torch.float32" in rank 0/);
  for (const [scope, id] of [['#rank-chart-reference', ids.reference], ['#rank-chart-other', ids.report]]) {
    const g = app.page.locator(`${scope} svg [data-bucket="${id}"] rect`).first();
    assert.equal(await g.evaluate((el) => getComputedStyle(el).strokeWidth), '3px', `${scope} outlines ${id}`);
  }
  assert.equal(await app.page.locator('#ranks-table tr[data-rank="1"] td.blamed').count(), 1);
  await app.screenshot('views-ranks-divergence');
  app.assertNoErrors();
});

test('100k nodes: the compare view paints within the single-plan budget plus half; the diff takes under 200 ms', async (t) => {
  const file = synthDump(100000).slice(REPO.length + 1);
  const perf = async (app, what) => {
    await app.page.waitForFunction((w) => document.querySelector('#perf')?.getAttribute(`data-${w}-ms`), what, { timeout: 120_000 });
    return Number(await app.page.locator('#perf').getAttribute(`data-${what}-ms`));
  };
  // The dump comes from a real HTTP server, as from static hosting: Playwright's request
  // routing hands a 44 MB body over the DevTools pipe, which took seconds of what was timed.
  const server = await serveDir(REPO);
  t.after(() => server.close());
  const src = encodeURIComponent(`${server.url}${file}`);
  const open = async (path) => {
    const app = await openApp(t, { path: '?view=compare', viewport: { width: 1400, height: 1000 } });
    await app.waitForRendered('header');
    await app.page.goto(new URL(path, app.page.url()).href);
    return app;
  };
  // Each from a link (fetch, read, plan, draw), in the same browser setup.
  const single = await open(`?src=${src}`);
  const one = await perf(single, 'load');
  const settings = await open(`?src=${src}&bcap=50000`);
  const twoSettings = await perf(settings, 'compare');
  const dumps = await open(`?src=${src}&base=${src}&bcap=50000`);
  const twoDumps = await perf(dumps, 'compare');
  for (const [what, app] of [['one plan', single], ['two settings', settings], ['two dumps', dumps]]) {
    console.log(`#   ${what}: ${await app.text('#perf')}`);
  }
  const diffMs = Number((await settings.text('.diff-ms')).match(/([\d.]+) ms/)[1]);
  const changed = await settings.text('#changes h2');
  console.log(`# compare 100k: one plan ${one.toFixed(0)} ms; one dump under two settings ${twoSettings.toFixed(0)} ms (×${(twoSettings / one).toFixed(2)}); two dumps ${twoDumps.toFixed(0)} ms (×${(twoDumps / one).toFixed(2)}); diff ${diffMs} ms; ${changed}`);
  assert.ok(Number(changed.match(/\((\d+)\)/)[1]) > 0, 'the caps differ, so do the plans');
  // Issue 11's budget: the single-plan budget (BUDGET_MS.load100k) plus 50%, for one dump under
  // two settings and for two dumps; the ratios to the single plan measured here are printed.
  if (process.env.COMMLENS_PERF_STRICT === '1') {
    assert.ok(twoSettings < BUDGET_MS.compare100k, `compare of two settings ${twoSettings} ms (one plan ${one} ms)`);
    assert.ok(twoDumps < BUDGET_MS.compare100k, `compare of two dumps ${twoDumps} ms (one plan ${one} ms)`);
    assert.ok(diffMs < BUDGET_MS.diff100k, `diff ${diffMs} ms`);
  }
  await settings.screenshot('views-compare-100k');
  for (const app of [single, settings, dumps]) app.assertNoErrors();
});

test('compare: a bucket of a thousand collectives names twenty of the others in a row and counts the rest', async (t) => {
  // Every parameter in one block: one bucket after, cut into pairs before (each all-gather
  // moves 256 KiB). The view used to list every other member with every row.
  const file = hostileDump('one-block', 7000).slice(REPO.length + 1);
  const server = await serveDir(REPO);
  t.after(() => server.close());
  const app = await openApp(t, { path: '?view=compare', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('header');
  await app.page.goto(new URL(`?src=${encodeURIComponent(`${server.url}${file}`)}&bcap=600000`, app.page.url()).href);
  await app.waitForRendered('#changes tr.change', 120_000);
  const row = app.page.locator('#changes tr.change.regrouped').first();
  const [before, after] = [row.locator('td').nth(4).locator('span'), row.locator('td').nth(5).locator('span')];
  assert.match(await before.innerText(), / with 1 other$/);
  const others = Number((await after.innerText()).match(/ with (\d+) others$/)[1]);
  assert.ok(others > 900, `${others} others after`);
  const title = (await after.getAttribute('title')).split('\n');
  assert.equal(title.length, 21);
  assert.equal(title[20], `and ${others - 20} more`);
  assert.deepEqual(title.slice(0, 20), [...title.slice(0, 20)].sort(), 'the first of the others, sorted');
  assert.ok(title.slice(0, 20).every((t) => /^fsdp_all_gather layers\.0\.sub\d+\.w\[\d+\]$/.test(t)), title[0]);
  await app.screenshot('views-compare-one-block');
  app.assertNoErrors();
});

test('compare: the single-plan app links to the comparison with the dump\'s own settings; settings re-plan a side', async (t) => {
  const dumpPath = join(REPO, 'examples/mlp_fsdp.json');
  const policy = (readDump(dumpPath).planner || {}).policy || {};
  const app = await openApp(t, { path: '?example=mlp&cap=100', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#chart svg [data-bucket]');
  await app.page.click('#compare-link');
  await app.waitForRendered('#chart-after svg [data-bucket]');
  assert.equal(await download(app, '#export-diff'), nativeDiff(dumpPath, dumpPath, undefined, { policy: { ...policy, cap_bytes: 100 } }));
  // The base re-planned with a cap of its own.
  const seq = Number(await app.page.locator('#perf').getAttribute('data-seq'));
  await app.page.fill('#before-cap', '1e9');
  await app.page.press('#before-cap', 'Enter');
  await app.page.waitForFunction((n) => Number(document.querySelector('#perf').getAttribute('data-seq')) > n, seq);
  assert.equal(await download(app, '#export-diff'),
    nativeDiff(dumpPath, dumpPath, { policy: { ...policy, cap_bytes: 1e9 } }, { policy: { ...policy, cap_bytes: 100 } }));
  await app.page.waitForFunction(() => /bcap=1000000000/.test(location.search) && /[?&]cap=100(&|$)/.test(location.search));
  // What cannot be used is said, not applied.
  await app.page.fill('#after-cap', 'lots');
  await app.page.press('#after-cap', 'Enter');
  assert.match(await app.text('.side-settings.after .field-error'), /Not applied: cap_bytes/);
  assert.match(app.page.url(), /[?&]cap=100(&|$)/);
  await app.screenshot('views-compare-settings-panel');
  app.assertNoErrors();
});

test('ranks: several TORCH_TRACE logs at once, their graph chosen by the link', async (t) => {
  const log = readFileSync(join(REPO, 'tests/fixtures/tracelog/simple_fsdp.log.gz'));
  const app = await openApp(t, { path: '?view=ranks&graph=3', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#ranks-files');
  await app.page.setInputFiles('#ranks-files', ['rank_0.log.gz', 'rank_1.log.gz'].map((name) => ({ name, mimeType: 'application/gzip', buffer: log })));
  await app.waitForRendered('#rank-verdicts .signatures');
  assert.match(await app.text('#rank-verdicts .signatures'), /the same on all 2 ranks/);
  assert.match(await app.text('#no-groups'), /trace log does not record which ranks form each group/);
  assert.deepEqual(await app.page.locator('#ranks-table tbody th').allInnerTexts(), ['0', '1']);
  // Without a graph choice, the log says how to make one.
  const bare = await openApp(t, { path: '?view=ranks' });
  await bare.waitForRendered('#ranks-files');
  await bare.page.setInputFiles('#ranks-files', ['rank_0.log.gz', 'rank_1.log.gz'].map((name) => ({ name, mimeType: 'application/gzip', buffer: log })));
  await bare.waitForRendered('#error');
  assert.match(await bare.text('#error'), /post-grad graphs; choose one[\s\S]*graph=K/);
  app.assertNoErrors();
});

test('compare: a base from a link that cannot be read is named (it downloads in a worker, with the same checks)', async (t) => {
  const server = await serveDir(REPO);
  t.after(() => server.close());
  const closed = await serveDir(REPO);
  closed.close();
  const big = synthDump(100000).slice(REPO.length + 1);
  const after = encodeURIComponent(`${server.url}examples/mlp_fsdp.json`);
  for (const [base, extra, re] of [
    [`${server.url}examples/missing.json`, '', /could not fetch http:\/\/127\.0\.0\.1:\d+\/examples\/missing\.json: HTTP 404/],
    [`${server.url}${big}`, '&limit_mb=1', /synth_100000\.json is .* more than the .* this page reads .*limit_mb=4\d/],
    [`${closed.url}x.json`, '', /could not fetch http:\/\/127\.0\.0\.1:\d+\/x\.json: .* the server is unreachable/],
  ]) {
    const app = await openApp(t, { path: '?view=compare' });
    await app.waitForRendered('header');
    const workers = [];
    app.page.on('worker', (w) => workers.push(w));
    await app.page.goto(new URL(`?view=compare&src=${after}&base=${encodeURIComponent(base)}${extra}`, app.page.url()).href);
    await app.waitForRendered('#error');
    assert.match(await app.text('#error'), re);
    // (The page also keeps workers that make graph signatures: told apart by their scripts.)
    const fetching = [];
    for (const w of workers) {
      const script = await w.evaluate(() => String(self.onmessage)).catch(() => 'ended');
      if (script === 'ended' || script.includes('fetch(url)')) fetching.push(w);
    }
    assert.equal(fetching.length, 1, 'the base was fetched by a worker of its own');
  }
});

test('a review link missing its other side says so', async (t) => {
  for (const [path, re] of [['?base=x.json', /not the plan after: add src=/], ['?before=x.json', /not the graph after: add src=/]]) {
    const app = await openApp(t, { path });
    await app.waitForRendered('#error');
    assert.match(await app.text('#error'), re);
    app.assertNoErrors();
  }
});
