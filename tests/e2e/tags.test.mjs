// Untagged graphs in the app (issue #16): the tags switch plans a stock PyTorch graph from
// derived roles exactly as `commlens plan --tags roles` does, with the core's note; the app
// offers the switch by itself when the dump's tags plan nothing; the link keeps it
// (`tags=roles`); the exported report is the CLI's byte for byte. Collectives the plan does not
// bucket (untagged, c10d) have a lane of their own, and their detail names transport, api,
// group, completion node, phase and role as `commlens roles` does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp, launchBrowser, REPO, WORK, cli, counts, expected, nextPaint, seq } from './harness.mjs';

const LOG = join(REPO, 'examples/simple_fsdp_trace.log.gz');
const C10D = join(REPO, 'tests/fixtures/identity/cases/c10d_collectives.json');
const quiet = { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe'] };
const run = (...argv) => execFileSync(cli(), argv, quiet).toString();

test('the tags switch plans an untagged graph from its roles, as `plan --tags roles` does', async (t) => {
  const graph = 3; // an HSDP backward graph: reduce-scatters, and all-reduces no plan buckets
  const app = await openApp(t, { path: `?example=trace&graph=${graph}`, viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#chart svg');
  // The dump's own tags: nothing planned, the core's note says why, and the switch is offered.
  const plain = JSON.parse(run('plan', LOG, '--graph', String(graph)));
  assert.deepEqual(await counts(app), expected(plain));
  assert.match(await app.text('#tags-note'), /no collective carries the FSDP pass's tags .*plan with --tags roles/);
  assert.equal(await app.page.locator('#tags-offer').count(), 1);

  let before = await seq(app);
  await app.page.click('#tags-offer');
  await nextPaint(app, before);
  await app.page.waitForFunction(() => document.querySelector('#share-url')?.value.includes('tags=roles'));
  const roles = JSON.parse(run('plan', LOG, '--graph', String(graph), '--tags', 'roles'));
  assert.ok(roles.buckets.length > 0, 'derived tags make buckets');
  assert.deepEqual(await counts(app), expected(roles));
  assert.equal(await app.page.inputValue('#tags'), 'roles');
  // The note is what `plan --tags roles --format text` opens with.
  const text = run('plan', LOG, '--graph', String(graph), '--tags', 'roles', '--format', 'text');
  assert.equal((await app.text('#tags-note')).trim(), text.split('\n\n')[0].trim());
  assert.equal(await app.page.locator('#tags-offer').count(), 0);

  // The exported report is `commlens plan --tags roles` byte for byte.
  const [d] = await Promise.all([app.page.waitForEvent('download'), app.page.click('#export-report')]);
  const file = join(WORK, `${process.pid}-${d.suggestedFilename()}`);
  await d.saveAs(file);
  assert.equal(readFileSync(file, 'utf8'), run('plan', LOG, '--graph', String(graph), '--tags', 'roles'));
  const [s] = await Promise.all([app.page.waitForEvent('download'), app.page.click('#export-settings')]);
  const sfile = join(WORK, `${process.pid}-${s.suggestedFilename()}`);
  await s.saveAs(sfile);
  const settings = JSON.parse(readFileSync(sfile, 'utf8'));
  assert.equal(settings.tags, 'roles');
  assert.equal(settings.graph, graph);
  await app.screenshot('tags-roles');

  // The link reproduces the view.
  const url = await app.page.inputValue('#share-url');
  const view = (page) =>
    page.evaluate(() => ({ tags: document.querySelector('#tags').value, svg: document.querySelector('#chart svg').outerHTML }));
  const mine = await view(app.page);
  const browser = await launchBrowser();
  t.after(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
  await page.goto(url);
  await page.waitForSelector('#chart svg [data-bucket]', { timeout: 60_000 });
  assert.deepEqual(await view(page), mine);

  // And back to the dump's tags.
  before = await seq(app);
  await app.page.selectOption('#tags', 'dump');
  await nextPaint(app, before);
  assert.deepEqual(await counts(app), expected(plain));
  assert.ok(!(await app.page.inputValue('#share-url')).includes('tags='));
  app.assertNoErrors();
});

test('collectives no plan buckets (c10d, untagged) have their own lane and full details', async (t) => {
  const app = await openApp(t, { viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('header');
  const before = await seq(app);
  await app.dropFile('.app', { path: C10D });
  await nextPaint(app, before);
  const identities = JSON.parse(run('roles', C10D, '--json')).collectives;
  // No FSDP tags: the plan buckets and decides nothing, so every collective is "not planned".
  const plan = JSON.parse(run('plan', C10D));
  assert.deepEqual([plan.buckets.length, plan.decisions.length], [0, 0]);
  const unplanned = identities.map((c) => c.node);
  assert.ok(identities.every((c) => c.api === 'c10d') && unplanned.length >= 2);
  const marks = await app.page.evaluate(() => [...document.querySelectorAll('#chart svg [data-comm]')].map((g) => g.getAttribute('data-node')));
  assert.deepEqual(marks, unplanned);
  assert.match(await app.text('#chart'), /not planned/);

  for (const c of identities) {
    await app.page.click(`#chart svg [data-comm][data-node="${c.node}"]`);
    await app.page.waitForFunction((name) => document.querySelector('#detail h2')?.innerText.includes(name), c.node);
    const facts = await app.page.evaluate(() =>
      Object.fromEntries([...document.querySelectorAll('#comm-facts dt')].map((dt) => [dt.innerText, dt.nextElementSibling.innerText])),
    );
    assert.equal(facts.transport, c.transport.replace('_', '-'), c.node);
    assert.match(facts.api, new RegExp(`^${c.api} \\(${c.op}\\)`), c.node);
    assert.equal(facts.group, c.group ?? '(unknown)', c.node);
    assert.equal(facts['completes at'], c.waits[0], c.node);
    assert.equal(facts.phase, c.phase, c.node);
    assert.equal(facts.role, c.role ? `${c.role} (${c.source})` : 'unclassified', c.node);
  }
  await app.screenshot('c10d-lane');
  app.assertNoErrors();
});
