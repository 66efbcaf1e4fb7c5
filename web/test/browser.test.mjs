// The demo page in headless Chromium, served from 127.0.0.1 with nothing from the network: it loads the bundle,
// a query typed into the page finds a note in another language, a request is classified by the head fitted in
// Python; in the same page, the probe set's vectors and the heads' probabilities are checked against the Python
// SDK's. Saves a screenshot (build/screenshot.png, or $LWX_WEB_SCREENSHOT) and build/parity-browser.json.
// Needs Chromium (/usr/bin/chromium or $CHROMIUM): skipped without it, failed when LWX_REQUIRE_BROWSER=1.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { startServer } from '../serve.mjs';
import { CHROMIUM, launch } from './chromium.mjs';
import { fixtures, WEB } from './helpers.mjs';

const missing = existsSync(CHROMIUM) ? null : `no Chromium at ${CHROMIUM} (apt-get install -y chromium chromium-driver, or set CHROMIUM)`;
if (missing && process.env.LWX_REQUIRE_BROWSER === '1') throw new Error(`LWX_REQUIRE_BROWSER=1 but ${missing}`);

test('the demo page searches and classifies in headless Chromium, offline, with parity', { skip: missing || false, timeout: 240000 }, async () => {
  const { dir, bundle } = fixtures();
  const server = await startServer({ bundle, head: join(dir, 'head_logistic'), fixtures: dir });
  const browser = await launch();
  try {
    const page = await browser.context.newPage();
    const requests = [], errors = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${server.url}/demo/`);
    await page.waitForSelector('#status[data-state="ready"], #status[data-state="error"]', { timeout: 180000 });
    assert.equal(await page.getAttribute('#status', 'data-state'), 'ready', await page.textContent('#status'));

    // a cross-lingual query, typed: English in, the French note out
    await page.fill('#query', '');
    await page.type('#query', 'renew my passport before the holidays');
    await page.click('#search-button');
    await page.waitForSelector('#results li');
    const results = await page.$$eval('#results li', (lis) => lis.map((li) => ({ lang: li.querySelector('.lang').textContent, text: li.querySelector('.text').textContent, score: Number(li.querySelector('.score').textContent) })));
    assert.equal(results.length, 5);
    assert.equal(results[0].lang, 'fr');
    assert.match(results[0].text, /Renouveler mon passeport/);
    assert.ok(results[0].score > results[1].score);
    assert.match(await page.textContent('#search-latency'), /searched in \d+(\.\d)? ms/);

    await page.fill('#request', 'Spiel etwas Ruhiges');
    await page.click('#classify-button');
    await page.waitForFunction(() => window.lwxDemo.classifications.length > 0);
    assert.equal(await page.textContent('#probabilities tr:first-child td:first-child'), 'music');

    const stats = await page.textContent('#stats');
    assert.match(stats, /time to first vector/);
    assert.match(stats, /bytes downloaded by the page\s*\d+\.\d MB/);
    const shot = process.env.LWX_WEB_SCREENSHOT || join(WEB, 'build', 'screenshot.png');
    mkdirSync(dirname(shot), { recursive: true });
    await page.screenshot({ path: shot, fullPage: true });

    // parity, in the page: every probe text, and the heads on the Python vectors
    const parity = await page.evaluate(async () => {
      const { parseNpy } = await import('/src/npy.js');
      const npy = async (name) => parseNpy(new Uint8Array(await (await fetch(`/fixtures/${name}`)).arrayBuffer()));
      const rows = (a) => Array.from({ length: a.shape[0] }, (_, i) => a.data.subarray(i * a.shape[1], (i + 1) * a.shape[1]));
      const { cases } = await (await fetch('/fixtures/tokens.json')).json();
      const ok = cases.filter((c) => c.error === null);
      const V = rows(await npy('vectors.npy'));
      const { enc, head } = window.lwxDemo;
      const t0 = performance.now();
      const vecs = await enc.embed(ok.map((c) => c.text), { truncation: 'ignore' });
      const ms = performance.now() - t0;
      const cos = ok.map((c, k) => V[c.id].reduce((s, x, j) => s + x * vecs[k][j], 0));
      const E = rows(await npy('head_embeddings.npy'));
      const { loadHead } = await import('/src/browser.js');
      const diffs = {};
      for (const [kind, h] of [['logistic', head], ['mlp', await loadHead('/fixtures/head_mlp/', enc)]]) {
        const P = rows(await npy(`head_${kind}_proba_vectors.npy`));
        const p = await h.predictProba(E);
        diffs[kind] = Math.max(...p.flatMap((r, i) => r.map((x, j) => Math.abs(x - P[i][j]))));
      }
      return { texts: ok.length, cos_min: Math.min(...cos), cos_mean: cos.reduce((a, b) => a + b, 0) / cos.length, embed_ms: ms,
        head_max_prob_diff_same_vectors: diffs, userAgent: navigator.userAgent, timings: window.lwxDemo.timings };
    });
    mkdirSync(join(WEB, 'build'), { recursive: true });
    writeFileSync(join(WEB, 'build', 'parity-browser.json'), `${JSON.stringify(parity, null, 1)}\n`);
    assert.ok(parity.texts >= 1000);
    assert.ok(parity.cos_min >= 0.9999, `min cosine ${parity.cos_min}`);
    for (const d of Object.values(parity.head_max_prob_diff_same_vectors)) assert.ok(d <= 1e-5, d);

    assert.deepEqual(errors, []);
    const outside = requests.filter((u) => !u.startsWith(`${server.url}/`) && !u.startsWith('data:'));
    assert.deepEqual(outside, [], 'the page fetched from outside the local server');
    assert.deepEqual(server.stats.requests.filter((r) => r.status), [], 'requests the server could not answer');
    const spm = server.stats.requests.find((r) => r.path.endsWith('/sentencepiece-js/dist/index.js'));
    assert.ok(spm && spm.bytes < 1e6, 'the SentencePiece module is served without its example tokenizers');
  } finally {
    await browser.close();
    await server.close();
  }
});
