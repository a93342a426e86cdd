// Embedding in a review doc (issue #12): a plain HTML page with the iframe snippet documented
// in www/README.md; the embed sizes its frame, nothing is cut off at 700 px, the wheel scrolls
// the page until the reader clicks into the chart (or holds Ctrl), a click shows the detail,
// and a link opens the full app at the same view. And exports record their settings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp, launchBrowser, appUrl, REPO, ARTIFACTS, WORK, chartTexts, overlaps, nativeReportText } from './harness.mjs';

/**
 * The review doc's address: another origin than the app's (localhost, where the app is served
 * from 127.0.0.1), local, so Chromium lets it frame the app. Playwright answers it.
 */
function hostUrl() {
  const app = new URL(appUrl());
  return `http://localhost:${app.port}/review/doc.html`;
}

/** The iframe snippet www/README.md documents for review docs (its first ```html block). */
function snippet() {
  const readme = readFileSync(join(REPO, 'www/README.md'), 'utf8');
  const at = readme.indexOf('## Embedding');
  const block = readme.slice(at).match(/```html\n([\s\S]*?)```/);
  assert.ok(block, 'www/README.md documents the embed snippet');
  return block[1];
}

/** A review doc: text, the documented snippet pointing at `path`, more text. */
async function openHost(t, path, frameWidth = 700) {
  const src = new URL(path, appUrl()).href;
  // The snippet's starting height is a placeholder: start it wrong, the embed corrects it.
  const html = snippet().replace(/src="[^"]*"/, `src="${src}"`).replace(/height: \d+px/, 'height: 200px');
  assert.match(html, new RegExp(`src="${src.replace(/[?.]/g, '\\$&')}"`), 'the snippet has a src to point at the app');
  assert.match(html, /height: 200px/, 'the snippet starts the frame at a height');
  const doc = `<!doctype html><html><head><meta charset="utf-8"><title>review</title></head>
    <body style="margin:0;font:14px sans-serif">
    <div style="width:${frameWidth}px;margin:20px">
    <p style="height:900px">A review doc. The plan below buckets the gathers.</p>
    ${html}
    <p style="height:1600px">More review text after the chart.</p></div></body></html>`;
  const app = await openApp(t, { path: '?', viewport: { width: frameWidth + 60, height: 700 } });
  await app.waitForRendered('header'); // the app's own page, loaded whole before leaving it
  await app.page.route(hostUrl(), (route) => route.fulfill({ body: doc, contentType: 'text/html' }));
  await app.page.goto(hostUrl());
  const frame = app.page.frameLocator('iframe');
  await frame.locator('#chart svg [data-bucket]').first().waitFor({ timeout: 60_000 });
  const handle = await app.page.locator('iframe').elementHandle();
  return { app, frame, inner: await handle.contentFrame(), iframe: app.page.locator('iframe') };
}

test('the documented snippet sizes the frame in a plain page; nothing is cut off at 700 px', async (t) => {
  const { app, inner, iframe } = await openHost(t, '?example=llama&embed=timeline');
  // The host's frame follows the content's height.
  // The host sized the frame before the reader got there (the frame is below the fold)...
  await app.page.waitForFunction(() => document.querySelector('iframe').getBoundingClientRect().height > 300, null, { timeout: 20_000 });
  // ...and in view (browsers lay out frames out of view lazily) the content fits it exactly.
  await iframe.scrollIntoViewIfNeeded();
  const settled = async () => {
    const frameH = (await iframe.boundingBox()).height;
    const content = await inner.evaluate(() => ({ scroll: document.documentElement.scrollHeight, inner: innerHeight, width: innerWidth }));
    return { frameH, ...content };
  };
  let content = await settled();
  const fits = (c) => Math.abs(c.frameH - c.scroll) <= 2 && c.scroll <= c.inner + 1;
  for (let i = 0; i < 30 && !fits(content); i++) {
    await app.page.waitForTimeout(100);
    content = await settled();
  }
  assert.ok(Math.abs(content.frameH - content.scroll) <= 2, `frame ${content.frameH}px, content ${content.scroll}px`);
  assert.ok(content.scroll <= content.inner + 1, `no scrolling inside the frame (${content.scroll} in ${content.inner})`);
  const svgW = await inner.evaluate(() => document.querySelector('#chart svg').getBoundingClientRect().width);
  assert.ok(svgW <= content.width && svgW > 600, `chart ${svgW}px in a ${content.width}px frame`);
  const { svg, texts } = await chartTexts(inner);
  assert.deepEqual(texts.filter((t) => t.left < svg.left - 1 || t.right > svg.right + 1 || t.top < svg.top - 1 || t.bottom > svg.bottom + 1).map((t) => t.text), [], 'texts cut off');
  assert.deepEqual(overlaps(texts, 1).map(([a, b]) => `${a.text} × ${b.text}`), [], 'overlapping texts');
  const frameTexts = await inner.evaluate(() => [...document.querySelectorAll('.embed-bar *, .chart-tools *')].filter((e) => e.children.length === 0 && e.textContent.trim()).map((e) => { const r = e.getBoundingClientRect(); return { text: e.textContent, right: r.right }; }));
  assert.deepEqual(frameTexts.filter((t) => t.right > content.width + 1).map((t) => t.text), [], 'controls cut off');
  await iframe.scrollIntoViewIfNeeded();
  await iframe.screenshot({ path: join(ARTIFACTS, 'embed-700.png') });
  app.assertNoErrors();
});

test('in the embed the wheel scrolls the page until the reader clicks into the chart (or holds Ctrl)', async (t) => {
  const { app, inner, iframe } = await openHost(t, '?example=llama&embed=timeline');
  await app.page.waitForFunction(() => document.querySelector('iframe').getBoundingClientRect().height > 300);
  await app.page.evaluate(() => window.scrollTo(0, 700));
  const range = () => inner.evaluate(() => { const s = document.querySelector('#chart svg'); return [s.getAttribute('data-x0'), s.getAttribute('data-x1')].join('-'); });
  const box = await iframe.boundingBox();
  const at = { x: box.x + box.width * 0.6, y: box.y + 120 };
  const r0 = await range();
  // The hint shows for a moment only; on a loaded machine it can be gone before the checks
  // below run, so the frame records that it appeared.
  await inner.evaluate(() => {
    window.__wheelHintSeen = false;
    const seen = () => { if (document.querySelector('.wheel-hint')) window.__wheelHintSeen = true; };
    new MutationObserver(seen).observe(document.body, { childList: true, subtree: true });
  });
  // The frame came into view with the scroll: let both pages draw a frame, so that the wheel
  // lands on what is on screen (a CI run once saw the first wheel scroll nothing).
  const frames = () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  await app.page.evaluate(frames);
  await inner.evaluate(frames);
  await app.page.mouse.move(at.x, at.y);
  const y0 = await app.page.evaluate(() => scrollY);
  await app.page.mouse.wheel(0, 200);
  await app.page.waitForFunction((y) => scrollY > y, y0, { timeout: 5000 });
  assert.equal(await range(), r0, 'the chart did not zoom');
  await inner.waitForFunction(() => window.__wheelHintSeen === true, null, { timeout: 5000 });
  // Ctrl + wheel zooms without a click.
  await app.page.keyboard.down('Control');
  await app.page.mouse.wheel(0, -200);
  await app.page.keyboard.up('Control');
  await inner.waitForFunction((r) => { const s = document.querySelector('#chart svg'); return [s.getAttribute('data-x0'), s.getAttribute('data-x1')].join('-') !== r; }, r0);
  // A click arms the wheel: it zooms, the page stays.
  const r1 = await range();
  const b2 = await iframe.boundingBox();
  await app.page.mouse.click(b2.x + 8, b2.y + b2.height - 30);
  const y1 = await app.page.evaluate(() => scrollY);
  await app.page.mouse.move(b2.x + b2.width * 0.6, b2.y + 120);
  await app.page.mouse.wheel(0, -200);
  await inner.waitForFunction((r) => { const s = document.querySelector('#chart svg'); return [s.getAttribute('data-x0'), s.getAttribute('data-x1')].join('-') !== r; }, r1);
  assert.equal(await app.page.evaluate(() => scrollY), y1, 'the page did not scroll');
  app.assertNoErrors();
});

test('a click in the embed shows the detail there, and a link opens the full app at the same view', async (t) => {
  const { app, inner } = await openHost(t, '?example=llama&embed=timeline&cap=20000');
  const bar = inner.locator('#chart svg [data-bucket]').nth(2);
  const id = await bar.getAttribute('data-bucket');
  await bar.locator('rect').click({ position: { x: 3, y: 5 } });
  await inner.locator('#detail').waitFor();
  const detail = await inner.locator('#detail').innerText();
  assert.match(detail, new RegExp(`Bucket ${id.split(':').pop()}\\b`));
  const href = await inner.locator('#detail .open-full, .embed-bar .open-full').first().getAttribute('href');
  const url = new URL(href);
  assert.equal(url.searchParams.get('embed'), null);
  assert.equal(url.searchParams.get('cap'), '20000');
  assert.equal(url.searchParams.get('sel'), `b:${id.split(':').pop()}`);
  const browser = await launchBrowser();
  t.after(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
  await page.goto(href);
  await page.waitForSelector('#detail', { timeout: 60_000 });
  assert.ok(await page.locator('header').count(), 'the full app');
  assert.match(await page.locator('#detail').innerText(), new RegExp(`Bucket ${id.split(':').pop()}\\b`));
  const range = await inner.evaluate(() => { const s = document.querySelector('#chart svg'); return [s.getAttribute('data-x0'), s.getAttribute('data-x1')]; });
  const full = await page.evaluate(() => { const s = document.querySelector('#chart svg'); return [s.getAttribute('data-x0'), s.getAttribute('data-x1')]; });
  assert.deepEqual(full, range, 'the same graph positions');
  app.assertNoErrors();
});

test('exports record the settings they were made with; the plan report stays the reference\'s', async (t) => {
  const app = await openApp(t, { path: '?example=llama&cap=30000&x0=10&x1=400', viewport: { width: 1400, height: 1000 } });
  await app.waitForRendered('#chart svg [data-bucket]');
  const download = async (selector) => {
    const [d] = await Promise.all([app.page.waitForEvent('download'), app.page.click(selector)]);
    const file = join(WORK, `${process.pid}-${d.suggestedFilename()}`);
    await d.saveAs(file);
    return { name: d.suggestedFilename(), text: readFileSync(file, 'utf8') };
  };
  const svg = await download('#export-svg');
  const meta = svg.text.match(/<metadata id="commlens-settings">([\s\S]*?)<\/metadata>/);
  assert.ok(meta, 'the SVG has <metadata>');
  const unescape = (s) => s.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
  const settings = JSON.parse(unescape(meta[1]));
  assert.equal(settings.args.policy.cap_bytes, 30000);
  assert.equal(settings.dump, 'examples/llama_fsdp.json.gz');
  assert.deepEqual([Math.round(settings.viewport.from), Math.round(settings.viewport.to)], [10, 400]);
  assert.match(svg.text.match(/<title>([^<]*)<\/title>/)[1], /llama_fsdp\.json\.gz: bucket timeline, planner arguments .*cap_bytes.*30000/);
  assert.match(settings.view_url, /cap=30000/);
  // The report is the reference's, byte for byte; its settings are beside it and reproduce it.
  const report = await download('#export-report');
  const side = await download('#export-settings');
  const recorded = JSON.parse(side.text);
  assert.equal(recorded.report, report.name);
  const native = nativeReportText(join(REPO, 'examples/llama_fsdp.json.gz'), recorded.args);
  assert.equal(report.text, native, 'the exported report is `commlens plan --args <settings.args>`');
  assert.ok(!report.text.includes('commlens.settings'), 'no settings inside the report');
  const trace = JSON.parse((await download('#export-trace')).text);
  assert.equal(trace.otherData.args.policy.cap_bytes, 30000);
  app.assertNoErrors();
});
