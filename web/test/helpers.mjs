// Shared by the tests: where the Python side's fixtures are (tools/web_fixtures.py), and how to read them.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseNpy } from '../src/npy.js';

export const WEB = fileURLToPath(new URL('..', import.meta.url));
export const REPO = join(WEB, '..');
export const FIXTURES = process.env.LWX_WEB_FIXTURES || join(WEB, 'build', 'fixtures');

export function fixtures() {
  if (!existsSync(join(FIXTURES, 'meta.json'))) {
    throw new Error(`no parity fixtures in ${FIXTURES}: run \`npm run fixtures\` in web/ (python3 ../tools/web_fixtures.py build/fixtures) first`);
  }
  const meta = JSON.parse(readFileSync(join(FIXTURES, 'meta.json'), 'utf-8'));
  return { meta, dir: FIXTURES, bundle: meta.bundle };
}

export const json = (name) => JSON.parse(readFileSync(join(FIXTURES, name), 'utf-8'));
export const npy = (name) => parseNpy(new Uint8Array(readFileSync(join(FIXTURES, name))));

/** Rows of a 2-d .npy as subarrays. */
export function rows(a) {
  const [n, d] = a.shape;
  return Array.from({ length: n }, (_, i) => a.data.subarray(i * d, (i + 1) * d));
}

/** A probe case's text (lone surrogates are stored as UTF-16 code units). */
export const caseText = (c) => (c.text !== undefined ? c.text : String.fromCharCode(...c.text_utf16));

export function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}
