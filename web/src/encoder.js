// The bundle (manifest, hashes, text contract) and the Encoder, independent of where the files come from and of
// which onnxruntime runs the program: node.js and browser.js give it a file reader and an onnxruntime module.
import { BundleError, InputError } from './errors.js';
import { Head } from './head.js';
import { planBatches, searchVectors, cosine, isVector } from './search.js';
import { sha256 } from './sha256.js';
import { Tokenizer, UNK_ID, describe } from './spm.js';
import { RULES } from './text.js';

export const FORMAT = 'lwx-edge-bundle';
export const FORMAT_VERSION = 2;
export const ARTIFACTS = ['model.int8.onnx', 'model.onnx'];
// What one onnxruntime call costs on its own, in token-steps (lwx_edge.batching.CALL_OVERHEAD).
export const CALL_OVERHEAD = 4.0;
const INPUTS = ['input_ids', 'attention_mask'];
const OUTPUT = 'sentence_embedding';

const now = () => (globalThis.performance ? performance.now() : Date.now());

function checkName(root, rel) {
  if (typeof rel !== 'string' || !rel || rel.includes('\\') || rel.includes('\0')) throw new BundleError(`${root}: invalid manifest entry name ${JSON.stringify(rel)}`);
  if (rel.startsWith('/') || /^[A-Za-z]:/.test(rel) || rel.split('/').includes('..')) throw new BundleError(`${root}: manifest entry ${JSON.stringify(rel)} points outside the bundle`);
}

function parseJson(bytes, root, what) {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    throw new BundleError(`${root}: ${what} is corrupt (not JSON: ${e.message})`);
  }
}

/**
 * A bundle's manifest and config, checked (lwx_edge/bundle.py): which files there are, their sha256 and size.
 * `source.read(name)` returns a file's bytes or throws a BundleError naming it.
 */
export class Bundle {
  /** @private */
  constructor(source, manifest, config) {
    this.source = source;
    this.where = source.where;
    this.manifest = manifest;
    this.config = config;
    this._bytes = {};
  }

  static async open(source) {
    const root = source.where;
    const manifest = parseJson(await source.read('manifest.json', 'manifest'), root, 'manifest.json');
    if (!manifest || typeof manifest !== 'object' || manifest.format !== FORMAT) throw new BundleError(`${root}: manifest.json is not an lwx-edge bundle manifest`);
    const v = manifest.format_version;
    if (v !== 1 && v !== FORMAT_VERSION) {
      throw new BundleError(`${root}: bundle format version ${JSON.stringify(v)} is not supported (this package reads versions 1 to ${FORMAT_VERSION})`
        + (Number.isInteger(v) && v > FORMAT_VERSION ? '; it was written by a newer lwx-edge: upgrade the package' : ''));
    }
    const files = manifest.files;
    if (!files || typeof files !== 'object' || Array.isArray(files)) throw new BundleError(`${root}: manifest.json has no file list`);
    for (const required of ['config.json', 'tokenizer.model']) if (!(required in files)) throw new BundleError(`${root}: bundle has no ${required}`);
    for (const [rel, entry] of Object.entries(files)) {
      checkName(root, rel);
      if (!entry || typeof entry !== 'object' || !/^[0-9a-f]{64}$/.test(entry.sha256 || '') || !Number.isInteger(entry.bytes) || entry.bytes < 0) {
        throw new BundleError(`${root}: manifest entry ${JSON.stringify(rel)} has no valid sha256 and size: the manifest is damaged or edited`);
      }
    }
    const bundle = new Bundle(source, manifest, null);
    let config = parseJson(await bundle.file('config.json'), root, 'config.json');
    if (v === 1) config = { ...config, format_version: FORMAT_VERSION, tokenizer: { type: 'sentencepiece', file: 'tokenizer.model', normalization: RULES, lowercase: true }, pooling: 'mean' };
    bundle.config = checkConfig(root, config);
    return bundle;
  }

  has(name) { return Object.prototype.hasOwnProperty.call(this.manifest.files, name); }

  /** A listed file's bytes, checked against the manifest's size and sha256 (read once). */
  async file(name) {
    if (this._bytes[name]) return this._bytes[name];
    if (!this.has(name)) throw new BundleError(`${this.where}: bundle has no ${name}`);
    const entry = this.manifest.files[name];
    const bytes = await this.source.read(name, name);
    if (bytes.length !== entry.bytes) throw new BundleError(`${this.where}: ${name} is truncated or changed (${bytes.length} bytes, manifest says ${entry.bytes})`);
    if (await sha256(bytes) !== entry.sha256) throw new BundleError(`${this.where}: ${name} is corrupt (sha256 does not match the manifest)`);
    this._bytes[name] = bytes;
    return bytes;
  }

  /** The manifest's record of an exported model ({} when none). */
  artifact(name) {
    const arts = this.manifest.artifacts;
    const e = arts && typeof arts === 'object' ? arts[name] : null;
    return e && typeof e === 'object' ? e : {};
  }

  maxLen(artifact) {
    const limit = this.config.model.max_len;
    if (!Number.isInteger(limit) || limit < 1) throw new BundleError(`${this.where}: config.json has no valid model.max_len`);
    const v = this.artifact(artifact).max_len;
    if (v === undefined || v === null) return limit;
    if (!Number.isInteger(v) || v < 1 || v > limit) throw new BundleError(`${this.where}: manifest.json's artifacts entry for ${artifact}: max_len must be an integer from 1 to the model's max_len (${limit}), got ${JSON.stringify(v)}`);
    return v;
  }

  /** Which model `artifact` is (Bundle.identity in Python): the weights it was exported from, per parity.json. */
  async identity(artifact) {
    const files = this.manifest.files;
    const actual = files[artifact].sha256; // verified when the model was read
    let source = null;
    if (this.has('parity.json')) {
      try {
        const parity = parseJson(await this.file('parity.json'), this.where, 'parity.json');
        const entry = parity.artifacts && parity.artifacts[artifact];
        const weights = parity.bundle && parity.bundle.weights_sha256;
        if (entry && entry.sha256 === actual && /^[0-9a-f]{64}$/.test(weights || '')) source = weights;
      } catch (e) {
        if (!(e instanceof BundleError)) throw e;
      }
    }
    const modelFiles = {};
    for (const name of Object.keys(files)) if (/^model\..*(onnx|pte)$/.test(name) || name === 'model.safetensors') modelFiles[name] = files[name].sha256;
    return { sha256: source || actual, artifact_sha256: actual, model_files: modelFiles, identity_from: source ? 'export' : 'file' };
  }
}

const LIMITS = { vocab_size: 10000000, d_model: 8192, n_heads: 256, d_ff: 65536, n_layers: 64, max_len: 65536 };

function checkConfig(root, config) {
  if (!config || typeof config !== 'object') throw new BundleError(`${root}: config.json is corrupt (expected a JSON object)`);
  const model = config.model;
  if (!model || typeof model !== 'object' || Array.isArray(model)) throw new BundleError(`${root}: config.json has no 'model' section`);
  for (const [key, limit] of Object.entries(LIMITS)) {
    const v = key in model ? model[key] : 1;
    if (!Number.isInteger(v) || v < 1) throw new BundleError(`${root}: config.json's model section: ${key} must be a positive integer, got ${JSON.stringify(v)}`);
    if (v > limit) throw new BundleError(`${root}: config.json's model section: ${key} is ${v}, more than any model this package runs (${limit}): the config is damaged or edited`);
  }
  const dim = config.embedding_dim ?? model.d_model;
  if (model.d_model !== undefined && dim !== model.d_model) throw new BundleError(`${root}: config.json says embedding_dim ${dim} but the model's d_model is ${model.d_model}`);
  const tok = config.tokenizer;
  if (!tok || typeof tok !== 'object') throw new BundleError(`${root}: config.json has no tokenizer section (the text contract)`);
  if (tok.type !== 'sentencepiece' || tok.file !== 'tokenizer.model') throw new BundleError(`${root}: config.json names a tokenizer this package cannot read (type ${JSON.stringify(tok.type)}, file ${JSON.stringify(tok.file)})`);
  if (tok.normalization !== RULES || typeof tok.lowercase !== 'boolean') {
    throw new BundleError(`${root}: the bundle's texts are normalised by rules ${JSON.stringify(tok.normalization)} (lowercase ${JSON.stringify(tok.lowercase)}); this package applies ${JSON.stringify(RULES)}: use the lwx-edge version the bundle was made with`);
  }
  if (config.pooling !== 'mean') throw new BundleError(`${root}: config.json says pooling ${JSON.stringify(config.pooling)}; this package pools "mean"`);
  return config;
}

/**
 * A sentence encoder: `await Encoder.open(...)` then `await enc.embed(texts)` -> L2-normalised Float32Arrays.
 * Use `Encoder.load` of node.js or browser.js, which give it the files and the runtime.
 */
export class Encoder {
  /** @private */
  constructor({ bundle, tokenizer, session, ort, artifact, dim, identity, runtime, warn }) {
    Object.assign(this, { bundle, tokenizer, artifact, dim, runtime });
    this._session = session;
    this._ort = ort;
    this._identity = identity;
    this._warn = warn;
    this._queue = Promise.resolve(); // onnxruntime-web runs one call of a session at a time
    this.lastTruncated = [];
    this.lastEmpty = [];
    this.timings = {};
  }

  /**
   * @param {{source: {where: string, read: (name: string, what: string) => Promise<Uint8Array>}, ort: any,
   *   runtime: string, sessionOptions?: object, artifact?: string, warn?: (m: string) => void}} o
   */
  static async open({ source, ort, runtime, sessionOptions = {}, artifact = null, warn = (m) => console.warn(m) }) {
    const t0 = now();
    const bundle = await Bundle.open(source);
    const root = bundle.where;
    const name = artifact || ARTIFACTS.find((a) => bundle.has(a));
    if (!name || !bundle.has(name)) {
      throw new BundleError(`${root}: bundle has no ONNX model (${artifact || ARTIFACTS.join(' / ')}); run lwx-edge export BUNDLE --int8`);
    }
    if (!ARTIFACTS.includes(name)) throw new InputError(`artifact must be one of ${ARTIFACTS.join(', ')}, got ${JSON.stringify(name)}`);
    const [tokBytes, modelBytes] = await Promise.all([bundle.file('tokenizer.model'), bundle.file(name)]);
    const tRead = now();
    let tokenizer;
    try {
      tokenizer = await Tokenizer.fromBytes(tokBytes, { maxLen: bundle.maxLen(name), lower: bundle.config.tokenizer.lowercase, where: `${root}/tokenizer.model` });
    } catch (e) {
      throw e instanceof InputError ? new BundleError(e.message) : e;
    }
    const vocab = bundle.config.model.vocab_size;
    if (Number.isInteger(vocab) && tokenizer.vocabSize > vocab) {
      throw new BundleError(`${root}: tokenizer.model has ${tokenizer.vocabSize} pieces but the model's vocabulary is ${vocab}: tokenizer and model do not belong together`);
    }
    const tTok = now();
    let session;
    try {
      session = await ort.InferenceSession.create(modelBytes, sessionOptions);
    } catch (e) {
      const msg = String((e && e.message) || e).trim().split('\n')[0].slice(0, 300);
      throw new BundleError(`${root}/${name}: onnxruntime cannot read this model (${msg})`);
    }
    const inputs = [...session.inputNames].sort(), outputs = [...session.outputNames];
    if (inputs.join() !== [...INPUTS].sort().join() || !outputs.includes(OUTPUT)) {
      throw new BundleError(`${root}/${name}: not an lwx-edge encoder model (inputs ${JSON.stringify(inputs)}, outputs ${JSON.stringify(outputs)}; expected inputs ${JSON.stringify(INPUTS)} and output "${OUTPUT}")`);
    }
    const tSession = now();
    const expected = bundle.config.embedding_dim ?? bundle.config.model.d_model;
    const enc = new this({ bundle, tokenizer, session, ort, artifact: name, dim: expected, identity: null, runtime, warn });
    const probe = await enc._run([[UNK_ID]]); // the first vector: checks the output size, warms the session up
    if (probe.dim !== expected) throw new BundleError(`${root}/${name}: outputs ${probe.dim}-d vectors but config.json says ${expected}: the model file does not belong to this bundle`);
    enc._identity = { ...(await bundle.identity(name)), tokenizer_sha256: bundle.manifest.files['tokenizer.model'].sha256, embedding_dim: expected, artifact: name, bundle: root, backend: runtime };
    const tEnd = now();
    enc.timings = { readAndVerifyMs: tRead - t0, tokenizerMs: tTok - tRead, sessionMs: tSession - tTok, firstVectorMs: tEnd - tSession, loadMs: tEnd - t0 };
    return enc;
  }

  get maxLen() { return this.tokenizer.maxLen; }

  /** What heads record about the encoder they were fitted on and check (Encoder.identity in Python). */
  identity() { return { ...this._identity }; }

  /** Run padded rows through the session: {data: Float32Array [n*d], dim}. */
  async _run(rows) {
    const n = rows.length, T = Math.max(...rows.map((r) => r.length));
    const ids = new BigInt64Array(n * T), mask = new BigInt64Array(n * T);
    rows.forEach((r, i) => { for (let j = 0; j < r.length; j++) { ids[i * T + j] = BigInt(r[j]); mask[i * T + j] = 1n; } });
    const feeds = { input_ids: new this._ort.Tensor('int64', ids, [n, T]), attention_mask: new this._ort.Tensor('int64', mask, [n, T]) };
    const job = this._queue.then(() => this._session.run(feeds));
    this._queue = job.catch(() => {});
    let out;
    try {
      out = (await job)[OUTPUT];
    } catch (e) {
      throw new BundleError(`${this.bundle ? this.bundle.where : ''}/${this.artifact}: onnxruntime failed on a batch of shape [${n}, ${T}] (${String((e && e.message) || e).slice(0, 300)})`);
    }
    if (out.dims.length !== 2 || out.dims[0] !== n) throw new BundleError(`${this.artifact}: the model returned shape [${out.dims}] for ${n} inputs`);
    return { data: out.data, dim: out.dims[1] };
  }

  /**
   * Embed texts: one Float32Array per text (L2-normalised unless normalize is false); one string -> one vector.
   * Texts longer than maxLen tokens keep their head (recorded in lastTruncated; truncation: "warn" | "ignore" |
   * "error"). A text with nothing to embed (empty, whitespace, only control or invisible characters) gets an
   * all-zero vector (recorded in lastEmpty; empty: "warn" | "ignore" | "error"), as in the Python SDK.
   * @param {string | string[]} texts
   * @param {{batchSize?: number, normalize?: boolean, truncation?: 'warn'|'ignore'|'error', empty?: 'warn'|'ignore'|'error'}} [options]
   */
  async embed(texts, { batchSize = 32, normalize = true, truncation = 'warn', empty = 'warn' } = {}) {
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new InputError(`batchSize must be a positive integer, got ${batchSize}`);
    if (!['warn', 'ignore', 'error'].includes(truncation)) throw new InputError(`truncation must be 'warn', 'ignore' or 'error', got ${JSON.stringify(truncation)}`);
    if (!['warn', 'ignore', 'error'].includes(empty)) throw new InputError(`empty must be 'warn', 'ignore' or 'error', got ${JSON.stringify(empty)}`);
    const single = typeof texts === 'string';
    const list = single ? [texts] : texts;
    if (!Array.isArray(list)) throw new InputError(`expected a string or an array of strings, got ${describe(texts)}`);
    if (list.length === 0) { this.lastTruncated = []; this.lastEmpty = []; return []; }
    const enc = this.tokenizer.encode(list);
    this.lastTruncated = enc.truncated; this.lastEmpty = enc.empty;
    const shown = (ix) => ix.slice(0, 10).join(', ') + (ix.length > 10 ? ' ...' : '');
    if (enc.truncated.length) {
      const msg = `${enc.truncated.length} of ${list.length} text(s) are longer than the model's max length (${this.maxLen} tokens) and were truncated (indices ${shown(enc.truncated)}; see lastTruncated)`;
      if (truncation === 'error') throw new InputError(msg.replace('were truncated', 'would be truncated'));
      if (truncation === 'warn') this._warn(msg);
    }
    if (enc.empty.length) {
      if (empty === 'error') throw new InputError(`text ${enc.empty[0]} has nothing to embed (empty, whitespace, or only control or invisible characters)`);
      if (empty === 'warn') this._warn(`${enc.empty.length} of ${list.length} text(s) have nothing to embed (empty, whitespace, or only control or invisible characters) and got all-zero vectors (indices ${shown(enc.empty)}; see lastEmpty)`);
    }
    const out = list.map(() => new Float32Array(this.dim));
    const rowsIn = enc.ids.map((r, i) => (r.length ? i : -1)).filter((i) => i >= 0);
    for (const group of planBatches(rowsIn.map((i) => enc.ids[i].length), batchSize, CALL_OVERHEAD)) {
      const idx = group.map((g) => rowsIn[g]);
      const { data, dim } = await this._run(idx.map((i) => enc.ids[i]));
      idx.forEach((i, r) => {
        const v = out[i];
        v.set(data.subarray(r * dim, (r + 1) * dim));
        if (normalize) {
          let s = 0;
          for (let j = 0; j < dim; j++) s += v[j] * v[j];
          const n = Math.max(Math.sqrt(s), 1e-12);
          for (let j = 0; j < dim; j++) v[j] /= n;
        }
      });
    }
    return single ? out[0] : out;
  }

  async _vectors(x) {
    if (typeof x === 'string') return { vecs: [await this.embed(x)], single: true };
    if (isVector(x)) return { vecs: [x], single: true };
    if (Array.isArray(x) && x.length && x.every((t) => typeof t === 'string')) return { vecs: await this.embed(x), single: false };
    if (Array.isArray(x) && x.length && x.every(isVector)) return { vecs: x, single: false };
    throw new InputError(`expected a text, a vector, or a non-empty array of texts or of vectors, got ${describe(x)}`);
  }

  /** Cosine similarity: two texts (or vectors) -> number; one and a list -> number[]; two lists -> number[][]. */
  async similarity(a, b) {
    const A = await this._vectors(a), B = await this._vectors(b);
    const S = A.vecs.map((u) => B.vecs.map((v) => cosine(u, v)));
    if (A.single && B.single) return S[0][0];
    if (A.single) return S[0];
    if (B.single) return S.map((r) => r[0]);
    return S;
  }

  /** Exact top-k cosine search: {indices, scores} best first (ties: lower index), or an array for several queries. */
  async search(queries, corpus, topK = 10) {
    const Q = await this._vectors(queries), C = await this._vectors(corpus);
    const res = searchVectors(Q.vecs, C.vecs, topK);
    return Q.single ? res[0] : res;
  }
}

export { Head };
