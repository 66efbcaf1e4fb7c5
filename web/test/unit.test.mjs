// The small parts against what Python computes (tools/web_fixtures.py's units.json): NumPy's .npz (stored and
// deflated, Fortran order, 0-d), lwx_edge.batching.plan_batches, normalize(); and the plain sha256 fallback.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseNpy, parseNpz } from '../src/npy.js';
import { planBatches } from '../src/search.js';
import { sha256, sha256Plain } from '../src/sha256.js';
import { blank, normalize } from '../src/text.js';
import { fixtures, json } from './helpers.mjs';

const { dir } = fixtures();
const units = json('units.json');

for (const kind of ['stored', 'compressed']) {
  test(`.npz written by np.savez${kind === 'compressed' ? '_compressed' : ''} reads back exactly`, async () => {
    const arrays = await parseNpz(new Uint8Array(readFileSync(join(dir, `units_${kind}.npz`))));
    assert.deepEqual(Object.keys(arrays).sort(), Object.keys(units.arrays).sort());
    for (const [name, want] of Object.entries(units.arrays)) {
      assert.deepEqual(arrays[name].shape, units.shapes[name], name);
      const got = Array.from(arrays[name].data, (x) => (typeof x === 'bigint' ? Number(x) : x));
      const flat = [want].flat(3);
      if (arrays[name].dtype === '<f4') flat.forEach((x, i) => assert.equal(got[i], Math.fround(x), name));
      else assert.deepEqual(got, flat, name);
    }
  });
}

test('a damaged .npy or .npz is an error that says what is wrong', async () => {
  assert.throws(() => parseNpy(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])), /not a \.npy array \(bad magic\)/);
  const zip = new Uint8Array(readFileSync(join(dir, 'units_stored.npz')));
  await assert.rejects(parseNpz(zip.subarray(0, zip.length - 30)), /not a zip archive|damaged/);
  await assert.rejects(parseNpz(new Uint8Array(100)), /not a zip archive \(no end of central directory\)/);
  const header = "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }     \n";
  const obj = Uint8Array.from([0x93, ...new TextEncoder().encode('NUMPY'), 1, 0, header.length, 0, ...new TextEncoder().encode(header), 0, 0, 0, 0, 0, 0, 0, 0]);
  assert.throws(() => parseNpy(obj), /array type \|O is not supported \(numbers only; no pickled objects\)/);
});

test('the batch plans are lwx_edge.batching.plan_batches\'s', () => {
  for (const p of units.plans) assert.deepEqual(planBatches(p.lengths, p.max_batch, p.overhead), p.groups, JSON.stringify(p.lengths));
});

test('normalize() is lwx_edge.text.normalize (Python\'s whitespace set, NFKC, casing)', () => {
  for (const [text, lower, cased] of units.normalize) {
    assert.equal(normalize(text), lower, JSON.stringify(text));
    assert.equal(normalize(text, false), cased, JSON.stringify(text));
  }
  assert.equal(blank(''), 'empty or whitespace-only');
  assert.equal(blank('\u200b\ufeff'), 'only control or invisible characters');
  assert.equal(blank('a'), null);
});

test('the plain sha256 (for pages without Web Crypto) agrees with Web Crypto', async () => {
  assert.equal(sha256Plain(new Uint8Array(0)), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  for (const n of [1, 55, 56, 63, 64, 65, 1000, 4097]) {
    const b = Uint8Array.from({ length: n }, (_, i) => (i * 31 + 7) & 255);
    assert.equal(sha256Plain(b), await sha256(b), `${n} bytes`);
  }
});
