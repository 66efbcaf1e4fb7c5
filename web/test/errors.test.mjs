// Clear errors for a damaged or mismatched bundle or head, and for bad inputs: each message names the problem.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { BundleError, Encoder, HeadError, InputError, loadHead } from '../src/node.js';
import { Tokenizer } from '../src/spm.js';
import { fixtures } from './helpers.mjs';

const { dir: FX, bundle: BUNDLE } = fixtures();
const tmp = mkdtempSync(join(tmpdir(), 'lwx-web-errors-'));
const quiet = () => {};
let enc;
let n = 0;

/** A copy of the bundle (big files linked) with `edit(dir, manifest)` applied; rehash: update the manifest's
 * entries of the files edit() rewrote, so that only the damage under test is left. */
function bundleWith(edit, { rehash = [] } = {}) {
  const dir = join(tmp, `b${n++}`);
  const manifest = JSON.parse(readFileSync(join(BUNDLE, 'manifest.json'), 'utf-8'));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const name of ['config.json', 'tokenizer.model', 'model.int8.onnx', 'parity.json']) {
    if (name in manifest.files) symlinkSync(join(BUNDLE, name), join(dir, name));
  }
  edit(dir, manifest);
  for (const name of rehash) {
    const bytes = readFileSync(join(dir, name));
    manifest.files[name] = { sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length };
  }
  if (!('_noManifest' in manifest)) writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

function replace(dir, name, bytes) { rmSync(join(dir, name), { force: true }); writeFileSync(join(dir, name), bytes); }

async function refused(dir, pattern, Err = BundleError) {
  await assert.rejects(Encoder.load(dir, { warn: quiet }), (e) => {
    assert.ok(e instanceof Err, `${e.constructor.name}: ${e.message}`);
    assert.match(e.message, pattern);
    return true;
  });
}

before(async () => { enc = await Encoder.load(BUNDLE, { threads: 1, warn: quiet }); });
after(() => rmSync(tmp, { recursive: true, force: true }));

test('a missing directory, a file, a directory without a manifest', async () => {
  await refused(join(tmp, 'nope'), /no such bundle directory/);
  writeFileSync(join(tmp, 'afile'), 'x');
  await refused(join(tmp, 'afile'), /a bundle is a directory, got a file/);
  await refused(bundleWith((d, m) => { m._noManifest = true; }), /not a model bundle \(manifest\.json is missing\)/);
});

test('a damaged or foreign manifest', async () => {
  const bad = bundleWith(() => {}); writeFileSync(join(bad, 'manifest.json'), '{"format": "lwx-edge-bundle", ');
  await refused(bad, /manifest\.json is corrupt \(not JSON/);
  await refused(bundleWith((d, m) => { m.format = 'something-else'; }), /not an lwx-edge bundle manifest/);
  await refused(bundleWith((d, m) => { m.format_version = 9; }), /format version 9 is not supported .*written by a newer lwx-edge/);
  await refused(bundleWith((d, m) => { m.files['../outside'] = m.files['config.json']; }), /"\.\.\/outside" points outside the bundle/);
  await refused(bundleWith((d, m) => { m.files['config.json'] = { sha256: 'abc', bytes: 3 }; }), /"config\.json" has no valid sha256 and size/);
  await refused(bundleWith((d, m) => { delete m.files['tokenizer.model']; }), /bundle has no tokenizer\.model/);
  await refused(bundleWith((d, m) => { delete m.files['model.int8.onnx']; delete m.files['model.onnx']; }), /bundle has no ONNX model \(model\.int8\.onnx \/ model\.onnx\); run lwx-edge export/);
});

test('a file missing, truncated or corrupt', async () => {
  await refused(bundleWith((d) => rmSync(join(d, 'tokenizer.model'))), /tokenizer\.model is listed in the manifest but missing/);
  await refused(bundleWith((d) => replace(d, 'model.int8.onnx', readFileSync(join(BUNDLE, 'model.int8.onnx')).subarray(0, 1000))), /model\.int8\.onnx is truncated or changed \(1000 bytes, manifest says \d+\)/);
  const flipped = Buffer.from(readFileSync(join(BUNDLE, 'tokenizer.model'))); flipped[1000] ^= 0xff;
  await refused(bundleWith((d) => replace(d, 'tokenizer.model', flipped)), /tokenizer\.model is corrupt \(sha256 does not match the manifest\)/);
});

test('a mismatched bundle: its files intact per the manifest, but not what they should be', async () => {
  const config = JSON.parse(readFileSync(join(BUNDLE, 'config.json'), 'utf-8'));
  const withConfig = (c) => bundleWith((d) => replace(d, 'config.json', JSON.stringify(c)), { rehash: ['config.json'] });
  await refused(withConfig({ ...config, tokenizer: { ...config.tokenizer, normalization: 'nfkc2' } }), /normalised by rules "nfkc2" .*this package applies "nfkc"/);
  await refused(withConfig({ ...config, pooling: 'cls' }), /pooling "cls"; this package pools "mean"/);
  await refused(withConfig({ ...config, embedding_dim: 256 }), /embedding_dim 256 but the model's d_model is 512/);
  await refused(withConfig({ ...config, model: { ...config.model, vocab_size: 1000 } }), /tokenizer\.model has 128000 pieces but the model's vocabulary is 1000: tokenizer and model do not belong together/);
  await refused(withConfig({ ...config, model: { ...config.model, d_model: 256, n_heads: 8 }, embedding_dim: 256 }), /outputs 512-d vectors but config\.json says 256: the model file does not belong to this bundle/);
  await refused(bundleWith((d) => replace(d, 'config.json', '{"model": '), { rehash: ['config.json'] }), /config\.json is corrupt \(not JSON/);
  await refused(bundleWith((d) => replace(d, 'tokenizer.model', Buffer.from('not a sentencepiece model at all')), { rehash: ['tokenizer.model'] }), /tokenizer\.model is not a SentencePiece model \(corrupt or wrong file/);
  await refused(bundleWith((d) => replace(d, 'model.int8.onnx', Buffer.from('not an onnx program')), { rehash: ['model.int8.onnx'] }), /model\.int8\.onnx: onnxruntime cannot read this model/);
  await refused(bundleWith((d) => { rmSync(join(d, 'model.int8.onnx')); copyFileSync(join(BUNDLE, 'tokenizer.model'), join(d, 'model.int8.onnx')); }, { rehash: ['model.int8.onnx'] }), /onnxruntime cannot read this model/);
});

test('a tokenizer that is SentencePiece but not laid out as lwx-edge needs', async () => {
  // a model proto with only "<unk>": no pad, no <mask>
  const piece = (s, type) => { const b = Buffer.from(s); return Buffer.concat([Buffer.from([0x0a, b.length + 4, 0x0a, b.length]), b, Buffer.from([0x18, type])]); };
  const proto = Buffer.concat([piece('<unk>', 2), piece('a', 1), piece('b', 1), piece('c', 1)]);
  await assert.rejects(Tokenizer.fromBytes(proto), /is a SentencePiece model but not an lwx-edge tokenizer: pad id is -1, expected 0; unk id is 0, expected 1; id 2 is not the control symbol '<mask>'; BOS\/EOS must be disabled/);
  await assert.rejects(Tokenizer.fromBytes(new Uint8Array(0)), /not a SentencePiece model \(corrupt or wrong file: empty file\)/);
});

test('bad inputs to embed', async () => {
  await assert.rejects(enc.embed(42), (e) => e instanceof InputError && /expected a string or an array of strings, got a number/.test(e.message));
  await assert.rejects(enc.embed(['ok', 7]), (e) => e instanceof InputError && /text 1 is a number, expected a string/.test(e.message));
  await assert.rejects(enc.embed(['ok', 'lone \ud800 surrogate']), (e) => e instanceof InputError && /text 1 is not valid Unicode \(a lone surrogate at code unit 5\)/.test(e.message));
  await assert.rejects(enc.embed(['a'], { batchSize: 0 }), /batchSize must be a positive integer/);
  await assert.rejects(enc.embed(['a'], { empty: 'drop' }), /empty must be 'warn', 'ignore' or 'error'/);
  const long = 'word '.repeat(500);
  await assert.rejects(enc.embed(['short', long], { truncation: 'error' }), /1 of 2 text\(s\) are longer than the model's max length \(200 tokens\) and would be truncated \(indices 1/);
  const warnings = [];
  const e2 = await Encoder.load(BUNDLE, { threads: 1, warn: (m) => warnings.push(m) });
  const v = await e2.embed(['A cat.', '', '\u200b', long]);
  assert.deepEqual(e2.lastEmpty, [1, 2]);
  assert.deepEqual(e2.lastTruncated, [3]);
  assert.ok(v[1].every((x) => x === 0) && v[2].every((x) => x === 0));
  assert.ok(Math.abs(Math.hypot(...v[0]) - 1) < 1e-6);
  assert.equal(warnings.length, 2);
  assert.match(warnings.join('\n'), /2 of 4 text\(s\) have nothing to embed .* all-zero vectors \(indices 1, 2/);
  await assert.rejects(e2.embed(['x', ' '], { empty: 'error' }), /text 1 has nothing to embed/);
  assert.equal(await enc.similarity('A cat.', ''), 0);
  assert.deepEqual(await enc.embed([]), []);
});

test('a head fitted on another encoder, or damaged, is refused', async () => {
  await assert.rejects(loadHead(join(FX, 'head_foreign'), enc), (e) => e instanceof HeadError
    && /was fitted on another encoder \(model differs\): fitted on sha256 000000000000\.\.\. \(another\/bundle\), this encoder is [0-9a-f]{12}\.\.\..*refit it on this one/.test(e.message));
  const copy = (name) => { const d = join(tmp, `h${n++}`); mkdirSync(d, { recursive: true }); for (const f of ['head.json', 'head.npz']) copyFileSync(join(FX, name, f), join(d, f)); return d; };
  const tok = copy('head_logistic');
  const meta = JSON.parse(readFileSync(join(tok, 'head.json'), 'utf-8'));
  writeFileSync(join(tok, 'head.json'), JSON.stringify({ ...meta, encoder: { ...meta.encoder, tokenizer_sha256: 'f'.repeat(64) } }));
  await assert.rejects(loadHead(tok, enc), /fitted on another encoder \(tokenizer differs\)/);
  const dim = copy('head_logistic');
  writeFileSync(join(dim, 'head.json'), JSON.stringify({ ...meta, encoder: { ...meta.encoder, embedding_dim: 384 } }));
  await assert.rejects(loadHead(dim, enc), /fitted on another encoder \(embedding size differs\)/);
  const npz = copy('head_mlp');
  const w = readFileSync(join(npz, 'head.npz')); w[w.length - 100] ^= 1; writeFileSync(join(npz, 'head.npz'), w);
  await assert.rejects(loadHead(npz, enc), /head\.npz: corrupt \(sha256 does not match head\.json\)/);
  const kind = copy('head_logistic');
  writeFileSync(join(kind, 'head.json'), JSON.stringify({ ...meta, kind: 'forest' }));
  await assert.rejects(loadHead(kind, enc), /unknown head kind "forest" \(known: logistic, mlp\)/);
  const gone = copy('head_logistic'); rmSync(join(gone, 'head.npz'));
  await assert.rejects(loadHead(gone, enc), /weights file head\.npz is missing/);
  await assert.rejects(loadHead(join(tmp, 'nohead'), enc), /no such head directory/);
  const shapes = copy('head_logistic');
  writeFileSync(join(shapes, 'head.json'), JSON.stringify({ ...meta, classes: ['a', 'b'] }));
  await assert.rejects(loadHead(shapes, enc), /the output layer has 4 units but the head has 2 classes/);
  const vec = await loadHead(join(FX, 'head_logistic'));
  await assert.rejects(vec.predict('Play some jazz'), /this head has no encoder to embed texts/);
  await assert.rejects(vec.predict([new Float32Array(3)]), /the head takes 512-d vectors, got 3-d/);
  const warned = [];
  const none = copy('head_logistic');
  writeFileSync(join(none, 'head.json'), JSON.stringify({ ...meta, encoder: null }));
  await loadHead(none, enc, { warn: (m) => warned.push(m) });
  assert.match(warned[0], /does not record which encoder it was fitted on/);
});

test('the intact copy loads, and the head classifies across languages', async () => {
  const dir = bundleWith(() => {});
  const e = await Encoder.load(dir, { threads: 1, warn: quiet });
  assert.equal(e.identity().sha256, enc.identity().sha256);
  const head = await loadHead(join(FX, 'head_logistic'), e);
  assert.deepEqual(await head.predict(['Mets de la musique douce', 'Compra pan y leche', 'Wird es morgen regnen?']), ['music', 'shopping', 'weather']);
});
