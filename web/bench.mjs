#!/usr/bin/env node
// The web package's benchmark, on this machine: bytes the demo page downloads, time to its first vector, and
// sentences per second on one thread in headless Chromium (onnxruntime-web, WebAssembly), in Node
// (onnxruntime-node, and onnxruntime-web's WebAssembly build) and in the Python SDK (onnxruntime), all on the same
// texts. Also saves a screenshot of the page after a cross-lingual query.
//
//   cd web && npm run fixtures && npm run bench            # writes ../benchmarks/web_<cpu>.json and .png
//   node bench.mjs [--out DIR] [--rounds 3] [--loads 3]
//
// Workload: the demo's notes, queries and requests and the example requests of the five languages
// (examples/intents.*.csv), repeated to 500 texts in a seeded order: embedded in batches of 32 (one embed call
// for all, which sorts by length and splits batches like the Python SDK) and one text per call (the latency a
// search box sees). Each figure is the best of --rounds rounds, the runtimes interleaved.
import { execFileSync } from 'node:child_process';
import { gzipSync } from 'node:zlib';
import { readFileSync, writeFileSync, mkdirSync, readdirSync, existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { slimSentencePiece, startServer } from './serve.mjs';
import { Encoder } from './src/node.js';
import { CHROMIUM, launch } from './test/chromium.mjs';

const WEB = fileURLToPath(new URL('.', import.meta.url));
const REPO = join(WEB, '..');
const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : dflt; };
const OUT = arg('--out', join(REPO, 'benchmarks'));
const ROUNDS = Number(arg('--rounds', 3));
const LOADS = Number(arg('--loads', 3));
const N = 500;
const FIXTURES = process.env.LWX_WEB_FIXTURES || join(WEB, 'build', 'fixtures');
const HEAD = join(FIXTURES, 'head_logistic');
if (!existsSync(join(HEAD, 'head.json'))) throw new Error(`no head in ${HEAD}: run \`npm run fixtures\` first`);

function workload() {
  const demo = JSON.parse(readFileSync(join(WEB, 'demo', 'notes.json'), 'utf-8'));
  const texts = [...demo.notes.map((n) => n.text), ...demo.queries, ...demo.requests];
  for (const f of readdirSync(join(REPO, 'examples')).filter((x) => /^intents\.\w\w\.csv$/.test(x)).sort()) {
    for (const line of readFileSync(join(REPO, 'examples', f), 'utf-8').split('\n').slice(1)) {
      const m = /^(?:"((?:[^"]|"")*)"|([^,]*)),/.exec(line);
      if (m) texts.push(m[1] !== undefined ? m[1].replace(/""/g, '"') : m[2]);
    }
  }
  let seed = 12345;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  return Array.from({ length: N }, () => texts[Math.floor(rand() * texts.length)]);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const percentile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

async function measureJs(embed, texts) { // {batch_sps, one_sps, one_p50_ms}
  const t0 = performance.now();
  await embed(texts);
  const batch = performance.now() - t0;
  const lat = [];
  for (const t of texts.slice(0, 200)) { const s = performance.now(); await embed(t); lat.push(performance.now() - s); }
  return { batch_sps: texts.length / (batch / 1000), one_sps: lat.length / (lat.reduce((a, b) => a + b, 0) / 1000), one_p50_ms: median(lat), one_p90_ms: percentile(lat, 0.9) };
}

const PY = `
import json, sys, time
import warnings
warnings.simplefilter("ignore")
from lwx_edge import Encoder
texts = json.load(sys.stdin)
t0 = time.perf_counter()
enc = Encoder.load(sys.argv[1], backend="onnx", threads=1)
enc.embed(["warm up"])
load = time.perf_counter() - t0
rounds = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); enc.embed(texts, batch_size=32); batch = time.perf_counter() - t
    lat = []
    for x in texts[:200]:
        s = time.perf_counter(); enc.embed([x]); lat.append(time.perf_counter() - s)
    lat.sort()
    rounds.append({"batch_sps": len(texts) / batch, "one_sps": len(lat) / sum(lat), "one_p50_ms": lat[len(lat) // 2] * 1e3,
                   "one_p90_ms": lat[int(0.9 * len(lat))] * 1e3})
import onnxruntime
print(json.dumps({"load_ms": load * 1e3, "rounds": rounds, "onnxruntime": onnxruntime.__version__,
                  "python": sys.version.split()[0]}))
`;

function best(rounds) {
  return { batch_sps: Math.max(...rounds.map((r) => r.batch_sps)), one_sps: Math.max(...rounds.map((r) => r.one_sps)),
    one_p50_ms: Math.min(...rounds.map((r) => r.one_p50_ms)), one_p90_ms: Math.min(...rounds.map((r) => r.one_p90_ms)), rounds: rounds.length };
}

async function main() {
  const bundle = join(REPO, 'lwx_edge', 'default_model');
  const texts = workload();
  const cpu = (readFileSync('/proc/cpuinfo', 'utf-8').match(/^model name\s*:\s*(.*)$/m) || [])[1] || cpus()[0].model;
  const slug = (cpu.toLowerCase().match(/epyc|xeon|ryzen|core|graviton|neoverse|apple/) || [cpu.toLowerCase().replace(/[^a-z0-9]+/g, '-')])[0];
  const result = { command: 'cd web && npm run fixtures && npm run bench', created: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    machine: { cpu, cores: cpus().length, loadavg_at_start: loadavg().map((x) => Math.round(x * 100) / 100) },
    versions: { node: process.versions.node }, threads: 1,
    workload: { texts: texts.length, distinct: new Set(texts).size, source: 'demo notes/queries/requests + examples/intents.*.csv (en, fr, de, es, it), seeded order', batch: 32, one_at_a_time: 200 } };

  // the page: bytes, load and first vector (fresh browser profile each time), then throughput in the page
  const server = await startServer({ bundle, head: HEAD });
  const loads = [];
  let browserRounds = [];
  let shot = null;
  for (let i = 0; i < LOADS; i++) {
    const browser = await launch();
    try {
      const page = await browser.context.newPage();
      server.stats.requests.length = 0; server.stats.bytes = 0;
      await page.goto(`${server.url}/demo/`);
      await page.waitForSelector('#status[data-state="ready"], #status[data-state="error"]', { timeout: 180000 });
      const t = await page.evaluate(() => window.lwxDemo.timings);
      if (!t.loadMs) throw new Error(await page.textContent('#status'));
      loads.push({ ...t, serverBytes: server.stats.bytes, files: server.stats.requests.map((r) => [r.path, r.bytes]) });
      if (i === LOADS - 1) {
        result.versions.chromium = await browser.context.browser()?.version?.() || (await page.evaluate(() => navigator.userAgent));
        browserRounds = [];
        for (let r = 0; r < ROUNDS; r++) {
          browserRounds.push(await page.evaluate(async (xs) => {
            const { enc } = window.lwxDemo;
            const t0 = performance.now(); await enc.embed(xs); const batch = performance.now() - t0;
            const lat = [];
            for (const x of xs.slice(0, 200)) { const s = performance.now(); await enc.embed(x); lat.push(performance.now() - s); }
            lat.sort((a, b) => a - b);
            return { batch_sps: xs.length / (batch / 1000), one_sps: lat.length / (lat.reduce((a, b) => a + b, 0) / 1000), one_p50_ms: lat[lat.length >> 1], one_p90_ms: lat[Math.floor(0.9 * lat.length)] };
          }, texts));
        }
        await page.fill('#query', 'renew my passport before the holidays');
        await page.click('#search-button');
        await page.waitForFunction(() => window.lwxDemo.searches.length > 0);
        await page.fill('#request', 'Spiel etwas Ruhiges');
        await page.click('#classify-button');
        await page.waitForFunction(() => window.lwxDemo.classifications.length > 0);
        shot = join(OUT, `web_${slug}.png`);
        mkdirSync(OUT, { recursive: true });
        await page.screenshot({ path: shot, fullPage: true });
        result.demo = await page.evaluate(() => ({ search: window.lwxDemo.searches.at(-1), classify: window.lwxDemo.classifications.at(-1) }));
      }
    } finally {
      await browser.close();
    }
  }
  await server.close();
  const last = loads.at(-1);
  const gz = (path) => { // what the same file would weigh served with gzip (the local server sends it plain)
    const m = [['/model/', bundle], ['/head/', HEAD], ['/demo/', join(WEB, 'demo')], ['/src/', join(WEB, 'src')], ['/node_modules/', join(WEB, 'node_modules')]].find(([p]) => path.startsWith(p));
    const file = join(m[1], path.slice(m[0].length) || 'index.html');
    const body = readFileSync(file.endsWith('/') ? join(file, 'index.html') : file);
    return gzipSync(path.includes('@sctg/sentencepiece-js') ? slimSentencePiece(body) : body, { level: 6 }).length;
  };
  result.page = {
    bytes: last.serverBytes, bytes_gzip_level6: last.files.reduce((s, [p]) => s + gz(p), 0), bytes_by_file: Object.fromEntries(last.files),
    model_load_ms_median: median(loads.map((l) => l.loadMs)),
    time_to_first_vector_ms_median: median(loads.map((l) => l.timeToFirstVectorMs)),
    time_to_first_vector_note: 'from navigation start to the first note embedded: the page, the modules, the bundle (fetched and sha256-checked), the tokenizer, the WebAssembly session and its first run',
    loads: loads.map((l) => ({ model: l.model, time_to_first_vector_ms: l.timeToFirstVectorMs, page_bytes: l.pageBytes })),
  };

  // Node, both runtimes, and the Python SDK, interleaved
  const node = await Encoder.load(bundle, { runtime: 'node', threads: 1, warn: () => {} });
  const wasm = await Encoder.load(bundle, { runtime: 'wasm', threads: 1, warn: () => {} });
  result.versions.onnxruntime_node = (await import('onnxruntime-node')).env.versions?.node || 'see package-lock.json';
  await node.embed(texts); await wasm.embed(texts); // warm-up
  const nodeRounds = [], wasmRounds = [];
  let py = null;
  for (let r = 0; r < ROUNDS; r++) {
    nodeRounds.push(await measureJs((x) => node.embed(x), texts));
    wasmRounds.push(await measureJs((x) => wasm.embed(x), texts));
    const out = JSON.parse(execFileSync('python3', ['-c', PY, bundle, '1'], { input: JSON.stringify(texts), cwd: REPO, maxBuffer: 1 << 24 }).toString());
    py = py ? { ...py, rounds: [...py.rounds, ...out.rounds] } : out;
  }
  result.versions.python = py.python;
  result.versions.onnxruntime_python = py.onnxruntime;
  result.sentences_per_second = {
    browser_wasm: { runtime: 'headless Chromium, onnxruntime-web 1.30.0 (WebAssembly SIMD, 1 thread)', ...best(browserRounds) },
    node_native: { runtime: 'Node, onnxruntime-node 1.30.0 (1 intra-op thread)', load_ms: node.timings.loadMs, ...best(nodeRounds) },
    node_wasm: { runtime: 'Node, onnxruntime-web 1.30.0 WebAssembly (1 thread)', load_ms: wasm.timings.loadMs, ...best(wasmRounds) },
    python_sdk: { runtime: `Python SDK, onnxruntime ${py.onnxruntime} (threads=1)`, load_ms: py.load_ms, ...best(py.rounds) },
  };
  result.machine.loadavg_at_end = loadavg().map((x) => Math.round(x * 100) / 100);
  result.screenshot = shot ? `benchmarks/web_${slug}.png` : null;
  const file = join(OUT, `web_${slug}.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 1)}\n`);
  const s = result.sentences_per_second;
  console.log(`${file}\n  page: ${(result.page.bytes / 1e6).toFixed(1)} MB, first vector after ${result.page.time_to_first_vector_ms_median.toFixed(0)} ms`);
  for (const [k, v] of Object.entries(s)) console.log(`  ${k.padEnd(12)} ${v.batch_sps.toFixed(0)} sentences/s in batches, ${v.one_sps.toFixed(0)} one at a time (p50 ${v.one_p50_ms.toFixed(2)} ms)`);
}

if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (apt-get install -y chromium chromium-driver, or set CHROMIUM)`);
await main();
