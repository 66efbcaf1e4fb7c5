// Cosine similarity and exact top-k search over vectors (lwx_edge.search), and the batch planner of
// lwx_edge.batching (sub-batches whose cost follows the real tokens of a call, not its padding).
import { InputError } from './errors.js';

/** Check a list of vectors: returns them as an array of equal-length numeric arrays. */
export function asVectors(x, what) {
  const rows = isVector(x) ? [x] : x;
  if (!Array.isArray(rows) || rows.length === 0) throw new InputError(`${what} must be a vector or a non-empty array of vectors`);
  const d = rows[0] && rows[0].length;
  if (!d) throw new InputError(`${what} is empty (vectors of length 0)`);
  rows.forEach((r, i) => {
    if (!isVector(r)) throw new InputError(`${what}[${i}] is not a vector (an array of numbers)`);
    if (r.length !== d) throw new InputError(`${what}[${i}] has ${r.length} dimensions, ${what}[0] has ${d}`);
    for (let j = 0; j < d; j++) if (typeof r[j] !== 'number' || !Number.isFinite(r[j])) throw new InputError(`${what}[${i}] contains NaN, infinite or non-numeric values`);
  });
  return rows;
}

export function isVector(x) {
  return (ArrayBuffer.isView(x) && !(x instanceof DataView) && typeof x[0] !== 'bigint') || (Array.isArray(x) && x.length > 0 && typeof x[0] === 'number');
}

/** Unit-length float64 copy of a vector (scaled by its largest entry first; a zero vector stays zero). */
export function unit(v) {
  let m = 0;
  for (let i = 0; i < v.length; i++) m = Math.max(m, Math.abs(v[i]));
  const out = new Float64Array(v.length);
  if (m === 0) return out;
  let s = 0;
  for (let i = 0; i < v.length; i++) { out[i] = v[i] / m; s += out[i] * out[i]; }
  const n = Math.max(Math.sqrt(s), 1e-12);
  for (let i = 0; i < v.length; i++) out[i] /= n;
  return out;
}

function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/** Cosine of two vectors (0 when one is zero). */
export function cosine(a, b) {
  if (a.length !== b.length) throw new InputError(`the vectors have different dimensions (${a.length} vs ${b.length})`);
  return dot(unit(a), unit(b));
}

/**
 * Exact top-k by cosine of each query against the whole corpus; ties go to the lower corpus index.
 * @returns {{indices: number[], scores: number[]}[]} one entry per query, best first
 */
export function searchVectors(queries, corpus, topK = 10) {
  if (!Number.isInteger(topK) || topK < 1) throw new InputError(`topK must be a positive integer, got ${topK}`);
  const Q = asVectors(queries, 'queries').map(unit);
  const C = asVectors(corpus, 'corpus').map(unit);
  if (Q[0].length !== C[0].length) throw new InputError(`queries and corpus have different dimensions (${Q[0].length} vs ${C[0].length})`);
  const k = Math.min(topK, C.length);
  return Q.map((q) => {
    const idx = [], sc = []; // kept sorted: score descending, then index ascending
    for (let j = 0; j < C.length; j++) {
      const s = dot(q, C[j]);
      if (idx.length === k && s <= sc[k - 1]) continue; // equal score: the earlier (lower) index stays
      let pos = idx.length === k ? k - 1 : idx.length;
      while (pos > 0 && sc[pos - 1] < s) pos--;
      idx.splice(pos, 0, j); sc.splice(pos, 0, s);
      if (idx.length > k) { idx.pop(); sc.pop(); }
    }
    return { indices: idx, scores: sc };
  });
}

/**
 * lwx_edge.batching.plan_batches: indices grouped into batches of at most maxBatch rows minimising
 * sum(overhead + rows * longest); texts of similar length together, shortest first.
 * @param {number[]} lengths every one >= 1
 */
export function planBatches(lengths, maxBatch, overhead) {
  const n = lengths.length;
  if (n <= 1) return n ? [[0]] : [];
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a] - lengths[b] || a - b);
  const sorted = order.map((i) => lengths[i]);
  const best = new Float64Array(n + 1), cut = new Int32Array(n + 1);
  for (let i = 1; i <= n; i++) {
    let bestCost = Infinity, bestJ = 0;
    for (let j = Math.max(0, i - maxBatch); j < i; j++) {
      const c = best[j] + overhead + (i - j) * sorted[i - 1];
      if (c < bestCost) { bestCost = c; bestJ = j; }
    }
    best[i] = bestCost; cut[i] = bestJ;
  }
  const groups = [];
  for (let i = n; i > 0; i = cut[i]) groups.push(order.slice(cut[i], i));
  return groups.reverse();
}
