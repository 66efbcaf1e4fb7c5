// Parity with the Python SDK on the probe set of tools/web_fixtures.py (1,000+ texts: the JVM parity probes,
// the five languages, emoji, mixed scripts, long texts, fuzz): identical token ids, vectors within cosine
// 0.9999 in both runtimes (onnxruntime-node and onnxruntime-web's WebAssembly build), head probabilities within
// 1e-5, the same exact top-k. The figures go to build/parity-node.json.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Encoder, loadHead, searchVectors } from '../src/node.js';
import { Tokenizer } from '../src/spm.js';
import { caseText, dot, fixtures, json, npy, rows, WEB } from './helpers.mjs';

const { meta, dir, bundle } = fixtures();
const report = { bundle, texts: meta.texts };
const quiet = () => {};

test('token ids are identical to the Python SDK on every probe text', async () => {
  const { readFileSync } = await import('node:fs');
  const tok = await Tokenizer.fromBytes(new Uint8Array(readFileSync(join(bundle, 'tokenizer.model'))), { maxLen: meta.max_len });
  const { cases } = json('tokens.json');
  assert.ok(cases.length >= 1000, `only ${cases.length} probes`);
  const kinds = new Set(cases.map((c) => c.kind.split('-')[0]));
  for (const k of ['intents', 'note', 'emoji', 'mixed', 'long', 'fuzz', 'empty', 'invalid']) assert.ok(kinds.has(k), `no ${k} probes`);
  const bad = [];
  for (const c of cases) {
    let got;
    try {
      const e = tok.encode([caseText(c)]);
      got = e.empty.length ? { error: e.lengthsBefore[0] === 0 ? 'empty-or-no-tokens' : 'x' } : { ids: e.ids[0], truncated: e.truncated.length === 1, before: e.lengthsBefore[0] };
    } catch (err) {
      got = { error: /not valid Unicode/.test(err.message) ? 'invalid_unicode' : err.message };
    }
    const want = c.error === null ? { ids: c.ids, truncated: c.truncated, before: c.length_before }
      : { error: c.error === 'invalid_unicode' ? 'invalid_unicode' : 'empty-or-no-tokens' };
    if (JSON.stringify(got) !== JSON.stringify(want)) bad.push({ id: c.id, kind: c.kind, want, got });
  }
  report.token_ids_identical = cases.length - bad.length;
  report.token_probes = cases.length;
  report.truncated_probes = cases.filter((c) => c.truncated).length;
  assert.deepEqual(bad.slice(0, 5), [], `${bad.length} of ${cases.length} probes differ`);
});

for (const runtime of ['node', 'wasm']) {
  test(`vectors (${runtime}) are within cosine 0.9999 of the Python SDK's, heads within 1e-5`, async () => {
    const enc = await Encoder.load(bundle, { runtime, threads: 1, warn: quiet });
    const { cases } = json('tokens.json');
    const V = rows(npy('vectors.npy'));
    const ok = cases.filter((c) => c.error === null);
    const t0 = performance.now();
    const vecs = await enc.embed(ok.map(caseText), { truncation: 'ignore' });
    const ms = performance.now() - t0;
    const cos = ok.map((c, k) => dot(V[c.id], vecs[k]));
    const min = Math.min(...cos), mean = cos.reduce((a, b) => a + b, 0) / cos.length;
    // texts with nothing to embed: zero vectors, as in Python
    const empties = cases.filter((c) => c.error === 'empty' || c.error === 'no_tokens');
    const zeros = await enc.embed(empties.map(caseText), { empty: 'ignore' });
    assert.deepEqual(enc.lastEmpty, empties.map((_, i) => i));
    assert.ok(zeros.every((v) => v.every((x) => x === 0)));
    for (const c of empties) assert.ok(V[c.id].every((x) => x === 0));

    const heads = {};
    const hc = json('head_cases.json');
    const E = rows(npy('head_embeddings.npy'));
    for (const kind of ['logistic', 'mlp', 'int']) {
      const head = await loadHead(join(dir, `head_${kind}`), enc);
      assert.deepEqual(head.classes, hc.heads[kind].classes);
      const pv = await head.predictProba(E), PV = rows(npy(`head_${kind}_proba_vectors.npy`));
      const pt = await head.predictProba(hc.texts), PT = rows(npy(`head_${kind}_proba_texts.npy`));
      const maxDiff = (p, P) => Math.max(...p.flatMap((r, i) => r.map((x, j) => Math.abs(x - P[i][j]))));
      const labelsV = await head.predict(E), labelsT = await head.predict(hc.texts);
      heads[kind] = { max_prob_diff_same_vectors: maxDiff(pv, PV), max_prob_diff_texts: maxDiff(pt, PT),
        labels_agree_texts: labelsT.filter((l, i) => l === hc.heads[kind].predicted_texts[i]).length, texts: hc.texts.length };
      assert.ok(heads[kind].max_prob_diff_same_vectors <= 1e-5, `${kind}: ${heads[kind].max_prob_diff_same_vectors}`);
      assert.deepEqual(labelsV, hc.heads[kind].predicted_vectors);
      assert.equal(heads[kind].labels_agree_texts, hc.texts.length);
      // end to end (text -> probability): the vectors' own difference carries through
      assert.ok(heads[kind].max_prob_diff_texts <= (runtime === 'node' ? 1e-5 : 1e-3), `${kind}: ${heads[kind].max_prob_diff_texts}`);
    }
    report[runtime] = { runtime: enc.runtime, texts: ok.length, cos_min: min, cos_mean: mean, worst_probe: ok[cos.indexOf(min)].id,
      embed_ms: ms, load: enc.timings, heads };
    assert.ok(min >= 0.9999, `min cosine ${min} (probe ${ok[cos.indexOf(min)].id})`);
  });
}

test('exact top-k search agrees with lwx_edge.search (ties: the lower index)', () => {
  const s = json('search.json');
  const res = searchVectors(rows(npy('search_queries.npy')), rows(npy('search_corpus.npy')), s.top_k);
  res.forEach((r, q) => {
    assert.deepEqual(r.indices, s.indices[q], `query ${q}`);
    r.scores.forEach((x, k) => assert.ok(Math.abs(x - s.scores[q][k]) < 1e-5));
  });
  assert.deepEqual(res[0].indices.slice(0, 3), [7, 40, 41]); // three identical rows
});

test.after(() => {
  mkdirSync(join(WEB, 'build'), { recursive: true });
  writeFileSync(join(WEB, 'build', 'parity-node.json'), `${JSON.stringify(report, null, 1)}\n`);
});
