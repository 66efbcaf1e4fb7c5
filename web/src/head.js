// Classifier heads saved by the Python SDK (lwx_edge.heads: head.json + head.npz, no pickle), applied in
// JavaScript: x = e/||e||; z = (x - mean)/scale; h = act(h @ W + b) per layer; p = softmax(h).
// A head records the encoder it was fitted on; one used with another encoder is refused (HeadError).
import { HeadError, InputError } from './errors.js';
import { parseNpz } from './npy.js';
import { sha256 } from './sha256.js';
import { describe } from './spm.js';
import { isVector } from './search.js';

export const HEAD_FORMAT = 'lwx-edge-head';
export const HEAD_FORMAT_VERSION = 1;
const ACTIVATIONS = ['tanh', 'relu', 'identity'];

/**
 * Refuse an encoder that is not the one a head was fitted on (lwx_edge.heads.io.check_encoder): same model (the
 * weights it came from, or the very model file it runs), tokenizer and vector size.
 * @param {object|null} recorded head.json's "encoder"
 * @param {object} ident Encoder.identity()
 * @param {string} where
 * @param {(msg: string) => void} warn
 */
export function checkEncoder(recorded, ident, where, warn) {
  if (recorded === null || recorded === undefined) {
    warn(`${where} does not record which encoder it was fitted on; cannot check that it matches this encoder`);
    return;
  }
  if (typeof recorded !== 'object' || typeof recorded.sha256 !== 'string'
      || (recorded.model_files != null && typeof recorded.model_files !== 'object')) {
    throw new HeadError(`${where}: its encoder record is malformed (no sha256 or model files); refit the head`);
  }
  const ours = new Set([...Object.values(recorded.model_files || {}), recorded.sha256]);
  const running = ident.artifact_sha256 || ident.sha256;
  const sameModel = ident.sha256 === recorded.sha256 || ours.has(running);
  const tokA = recorded.tokenizer_sha256, tokB = ident.tokenizer_sha256;
  const sameTok = tokA == null || tokB == null || tokA === tokB;
  const dimA = recorded.embedding_dim, dimB = ident.embedding_dim;
  const sameDim = dimA == null || dimB == null || dimA === dimB;
  if (!(sameModel && sameTok && sameDim)) {
    const what = !sameModel ? 'model' : !sameTok ? 'tokenizer' : 'embedding size';
    throw new HeadError(`${where} was fitted on another encoder (${what} differs): fitted on sha256 `
      + `${recorded.sha256.slice(0, 12)}... (${recorded.bundle || '?'}), this encoder is ${String(ident.sha256).slice(0, 12)}... `
      + `(${ident.bundle || '?'}). A head only works with the encoder it was fitted on; refit it on this one `
      + '(lwx-edge fit BUNDLE data.csv ...)');
  }
}

function softmax(logits) {
  const m = Math.max(...logits);
  const e = logits.map((z) => Math.exp(z - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((z) => z / s);
}

/** A fitted head: predict / predictProba on texts (embedded with its encoder) or on vectors. */
export class Head {
  /** @private */
  constructor(meta, arrays, layers, encoder, where) {
    this.meta = meta;
    this.kind = meta.kind;
    this.classes = meta.classes;
    this.nFeatures = meta.n_features;
    this.encoder = encoder;
    this.where = where;
    this._mean = meta.input.standardize ? arrays.mean.data : null;
    this._scale = meta.input.standardize ? arrays.scale.data : null;
    this._layers = layers;
  }

  /**
   * Build a head from the bytes of head.json and of its weights file (checked: sha256, shapes, values).
   * @param {{json: Uint8Array|string, weights: (name: string) => Promise<Uint8Array>, encoder?: any, where?: string, warn?: (m: string) => void}} o
   */
  static async fromFiles({ json, weights, encoder = null, where = 'head', warn = (m) => console.warn(m) }) {
    let meta;
    try {
      meta = JSON.parse(typeof json === 'string' ? json : new TextDecoder().decode(json));
    } catch (e) {
      throw new HeadError(`${where}: head.json is corrupt (not JSON: ${e.message})`);
    }
    if (!meta || typeof meta !== 'object' || meta.format !== HEAD_FORMAT) throw new HeadError(`${where}: head.json is not an lwx-edge head`);
    if (meta.format_version !== HEAD_FORMAT_VERSION) throw new HeadError(`${where}: head format version ${meta.format_version} is not supported (this package reads version ${HEAD_FORMAT_VERSION})`);
    if (!['logistic', 'mlp'].includes(meta.kind)) throw new HeadError(`${where}: unknown head kind ${JSON.stringify(meta.kind)} (known: logistic, mlp)`);
    for (const [key, isList] of [['classes', true], ['layers', true], ['weights', false], ['input', false]]) {
      const v = meta[key];
      if (!v || typeof v !== 'object' || Array.isArray(v) !== isList) throw new HeadError(`${where}: head.json's ${JSON.stringify(key)} is not a JSON ${isList ? 'list' : 'object'} (damaged or edited); refit the head`);
    }
    if (!('encoder' in meta)) throw new HeadError(`${where}: head.json has no 'encoder' entry (damaged or edited); refit the head`);
    if (encoder) checkEncoder(meta.encoder, encoder.identity(), `head ${where}`, warn);
    const file = meta.weights.file === undefined ? 'head.npz' : meta.weights.file;
    if (typeof file !== 'string' || !/^[^/\\\0]+$/.test(file) || file === '..' || file === '.') throw new HeadError(`${where}: weights file ${JSON.stringify(file)} points outside the head directory`);
    if (!meta.weights.sha256) throw new HeadError(`${where}: head.json records no sha256 for its weights (cannot check them)`);
    const bytes = await weights(file);
    if (await sha256(bytes) !== meta.weights.sha256) throw new HeadError(`${where}/${file}: corrupt (sha256 does not match head.json)`);
    let arrays;
    try {
      arrays = await parseNpz(bytes);
    } catch (e) {
      throw new HeadError(`${where}/${file}: cannot be read as .npz (${e.message})`);
    }
    for (const [name, a] of Object.entries(arrays)) {
      if (!(a.data instanceof Float32Array || a.data instanceof Float64Array) || a.data.some((x) => !Number.isFinite(x))) {
        throw new HeadError(`${where}/${file}: array ${JSON.stringify(name)} holds NaN, infinite or non-numeric values`);
      }
    }
    const d = meta.n_features;
    if (!Number.isInteger(d) || d < 1) throw new HeadError(`${where}: head.json's n_features must be a positive integer, got ${JSON.stringify(d)}`);
    if (meta.input.standardize) {
      for (const name of ['mean', 'scale']) {
        const a = arrays[name];
        if (!a || a.shape.length !== 1 || a.shape[0] !== d) throw new HeadError(`${where}: head.json and ${file} do not fit together (array ${name} is missing or not [${d}])`);
      }
      if (arrays.scale.data.some((x) => x <= 0)) throw new HeadError(`${where}/${file}: array 'scale' has zero or negative entries`);
    }
    const layers = [];
    let width = d;
    for (const spec of meta.layers) {
      if (!spec || !ACTIVATIONS.includes(spec.activation)) throw new HeadError(`${where}: unknown activation ${JSON.stringify(spec && spec.activation)}`);
      const W = arrays[spec.weight], b = arrays[spec.bias];
      if (!W || !b) throw new HeadError(`${where}: head.json and ${file} do not fit together (no array ${JSON.stringify(!W ? spec.weight : spec.bias)})`);
      if (W.shape.length !== 2 || W.shape[0] !== width || b.shape.length !== 1 || b.shape[0] !== W.shape[1]) {
        throw new HeadError(`${where}: layer shapes do not chain ([${W.shape}] after ${width} features)`);
      }
      layers.push({ W: W.data, b: b.data, rows: W.shape[0], cols: W.shape[1], act: spec.activation });
      width = W.shape[1];
    }
    if (width !== meta.classes.length) throw new HeadError(`${where}: the output layer has ${width} units but the head has ${meta.classes.length} classes`);
    return new Head(meta, arrays, layers, encoder, where);
  }

  /** Logits of one embedding (float64). */
  _logits(e) {
    if (e.length !== this.nFeatures) throw new InputError(`the head takes ${this.nFeatures}-d vectors, got ${e.length}-d`);
    let s = 0;
    for (let i = 0; i < e.length; i++) s += e[i] * e[i];
    const n = Math.max(Math.sqrt(s), 1e-12);
    let h = new Float64Array(e.length);
    for (let i = 0; i < e.length; i++) h[i] = e[i] / n;
    if (this._mean) for (let i = 0; i < h.length; i++) h[i] = (h[i] - this._mean[i]) / this._scale[i];
    for (const { W, b, rows, cols, act } of this._layers) {
      const out = new Float64Array(cols);
      for (let j = 0; j < cols; j++) out[j] = b[j];
      for (let i = 0; i < rows; i++) {
        const x = h[i];
        if (x === 0) continue;
        const row = i * cols;
        for (let j = 0; j < cols; j++) out[j] += x * W[row + j];
      }
      if (act === 'tanh') for (let j = 0; j < cols; j++) out[j] = Math.tanh(out[j]);
      else if (act === 'relu') for (let j = 0; j < cols; j++) out[j] = Math.max(out[j], 0);
      h = out;
    }
    return Array.from(h);
  }

  async _inputs(x) {
    const single = typeof x === 'string' || isVector(x);
    const items = single ? [x] : x;
    if (!Array.isArray(items) || items.length === 0) throw new InputError(`expected texts or vectors, got ${Array.isArray(items) ? 'an empty array' : describe(x)}`);
    let vecs;
    if (items.every((t) => typeof t === 'string')) {
      if (!this.encoder) throw new InputError('this head has no encoder to embed texts: load it with an encoder (loadHead(dir, encoder)) or pass vectors');
      vecs = await this.encoder.embed(items);
    } else {
      items.forEach((v, i) => { if (!isVector(v)) throw new InputError(`input ${i} is ${describe(v)}: pass texts or vectors, not a mix`); });
      vecs = items;
    }
    return { vecs, single };
  }

  /** Class probabilities (rows sum to 1), columns in `classes` order. */
  async predictProba(x) {
    const { vecs, single } = await this._inputs(x);
    const p = vecs.map((v) => softmax(this._logits(v)));
    return single ? p[0] : p;
  }

  /** Labels, from `classes`. */
  async predict(x) {
    const { vecs, single } = await this._inputs(x);
    const labels = vecs.map((v) => {
      const z = this._logits(v);
      let best = 0;
      for (let j = 1; j < z.length; j++) if (z[j] > z[best]) best = j;
      return this.classes[best];
    });
    return single ? labels[0] : labels;
  }
}
