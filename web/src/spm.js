// The bundle's tokenizer: Google's SentencePiece (its C++ code compiled to WebAssembly, npm package
// @sctg/sentencepiece-js) under lwx-edge's text contract (text.js), ids cut at the model's max length.
// The model file is also read here (a minimal protobuf reader) to check the lwx-edge layout before use:
// pad = 0, unk = 1, "<mask>" = 2 (a control symbol), no BOS/EOS.
import { SentencePieceProcessor } from '@sctg/sentencepiece-js';
import { InputError } from './errors.js';
import { blank, loneSurrogate, normalize } from './text.js';

export const PAD_ID = 0;
export const UNK_ID = 1;
export const MASK_ID = 2;
const NORMAL = 1, UNKNOWN = 2, CONTROL = 3;

class Reader {
  constructor(bytes) { this.b = bytes; this.p = 0; }
  varint() { // the low 32 bits, signed (int32 fields such as bos_id = -1 are 10-byte varints)
    let lo = 0, shift = 0, byte;
    do {
      if (this.p >= this.b.length) throw new Error('truncated varint');
      byte = this.b[this.p++];
      if (shift < 32) lo |= (byte & 0x7f) << shift;
      shift += 7;
      if (shift > 70) throw new Error('varint too long');
    } while (byte & 0x80);
    return lo | 0;
  }
  fields(fn) { // fn(field, wireType, reader-at-value); skips what fn does not consume
    while (this.p < this.b.length) {
      const key = this.varint() >>> 0, field = key >>> 3, wt = key & 7;
      if (field === 0) throw new Error('field number 0');
      if (wt === 0) fn(field, wt, this.varint());
      else if (wt === 1) { this.skip(8); }
      else if (wt === 5) { const v = new DataView(this.b.buffer, this.b.byteOffset + this.p, 4).getFloat32(0, true); this.skip(4); fn(field, wt, v); }
      else if (wt === 2) {
        const len = this.varint();
        if (len < 0 || this.p + len > this.b.length) throw new Error('length past the end');
        const sub = this.b.subarray(this.p, this.p + len); this.p += len; fn(field, wt, sub);
      } else throw new Error(`wire type ${wt}`);
    }
  }
  skip(n) { if (this.p + n > this.b.length) throw new Error('truncated'); this.p += n; }
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

/**
 * What a SentencePiece model file says about its vocabulary and special ids (throws on a damaged file).
 * @param {Uint8Array} bytes
 */
export function readModelProto(bytes) {
  const pieces = [], types = [];
  const trainer = { modelType: 1, bosId: 1, eosId: 2, unkId: 0, padId: -1 };
  let normalizer = null;
  new Reader(bytes).fields((f, wt, v) => {
    if (f === 1 && wt === 2) {
      let piece = '', type = NORMAL;
      new Reader(v).fields((g, wt2, w) => {
        if (g === 1 && wt2 === 2) piece = utf8.decode(w);
        else if (g === 3 && wt2 === 0) type = w;
      });
      pieces.push(piece); types.push(type);
    } else if (f === 2 && wt === 2) {
      new Reader(v).fields((g, wt2, w) => {
        if (wt2 !== 0) return;
        if (g === 3) trainer.modelType = w;
        else if (g === 40) trainer.unkId = w;
        else if (g === 41) trainer.bosId = w;
        else if (g === 42) trainer.eosId = w;
        else if (g === 43) trainer.padId = w;
      });
    } else if (f === 3 && wt === 2) {
      new Reader(v).fields((g, wt2, w) => { if (g === 1 && wt2 === 2) normalizer = utf8.decode(w); });
    }
  });
  return { pieces, types, trainer, normalizer };
}

/** Problems that make a SentencePiece model not an lwx-edge tokenizer (empty: none). */
function layoutProblems(proto) {
  const { pieces, types, trainer } = proto;
  const problems = [];
  if (trainer.padId !== PAD_ID || types[PAD_ID] !== CONTROL) problems.push(`pad id is ${trainer.padId}, expected ${PAD_ID}`);
  if (trainer.unkId !== UNK_ID || types[UNK_ID] !== UNKNOWN) problems.push(`unk id is ${trainer.unkId}, expected ${UNK_ID}`);
  if (pieces[MASK_ID] !== '<mask>' || types[MASK_ID] !== CONTROL) problems.push(`id ${MASK_ID} is not the control symbol '<mask>'`);
  if (trainer.bosId !== -1 || trainer.eosId !== -1) problems.push('BOS/EOS must be disabled');
  return problems;
}

/**
 * Tokenizer.encode of the Python SDK: normalise, SentencePiece, keep the first maxLen ids.
 */
export class Tokenizer {
  /** @private */
  constructor(processor, proto, maxLen, lower, where) {
    this._sp = processor;
    this.vocabSize = proto.pieces.length;
    this.maxLen = maxLen;
    this.lower = lower;
    this.where = where;
  }

  /**
   * @param {Uint8Array} bytes the tokenizer.model file
   * @param {{maxLen?: number, lower?: boolean, where?: string}} [options]
   */
  static async fromBytes(bytes, { maxLen = 200, lower = true, where = 'tokenizer.model' } = {}) {
    if (!Number.isInteger(maxLen) || maxLen < 1) throw new InputError(`maxLen must be a positive integer, got ${maxLen}`);
    let proto;
    try {
      if (!bytes || bytes.length === 0) throw new Error('empty file');
      proto = readModelProto(bytes);
    } catch (e) {
      throw new InputError(`${where} is not a SentencePiece model (corrupt or wrong file: ${e.message})`);
    }
    if (proto.pieces.length <= MASK_ID) throw new InputError(`${where} is not a SentencePiece model (corrupt or wrong file: ${proto.pieces.length} pieces)`);
    const problems = layoutProblems(proto);
    if (problems.length) throw new InputError(`${where} is a SentencePiece model but not an lwx-edge tokenizer: ${problems.join('; ')}`);
    const sp = new SentencePieceProcessor();
    // _loadModel(bytes) is the package's loader of model bytes (its public load() reads a path with Node's fs,
    // loadFromB64StringModel() needs Node's Buffer); the version is pinned in package-lock.json.
    await sp._loadModel(bytes);
    if (sp.encodeIds('a').length === 0) { // a model SentencePiece failed to load encodes nothing
      throw new InputError(`${where}: SentencePiece could not load this model`);
    }
    return new Tokenizer(sp, proto, maxLen, lower, where);
  }

  /**
   * Encode texts: `{ids, truncated, lengthsBefore, empty}` like the Python SDK's Tokenizer.encode(empty="keep").
   * A text with nothing to embed gets no ids and is listed in `empty`; a non-string or a string with a lone
   * surrogate is an InputError naming its index.
   * @param {string[]} texts
   */
  encode(texts) {
    if (!Array.isArray(texts)) throw new InputError(`expected an array of strings, got ${describe(texts)}`);
    const ids = [], truncated = [], lengthsBefore = [], empty = [];
    texts.forEach((t, i) => {
      if (typeof t !== 'string') throw new InputError(`text ${i} is ${describe(t)}, expected a string`);
      const bad = loneSurrogate(t);
      if (bad >= 0) throw new InputError(`text ${i} is not valid Unicode (a lone surrogate at code unit ${bad})`);
      const n = normalize(t, this.lower);
      let row = blank(n) === null ? this.encodeNormalized(n) : [];
      if (row.length === 0) empty.push(i);
      lengthsBefore.push(row.length);
      if (row.length > this.maxLen) { truncated.push(i); row = row.slice(0, this.maxLen); }
      ids.push(row);
    });
    return { ids, truncated, lengthsBefore, empty };
  }

  /** SentencePiece ids of an already normalised text (no truncation). */
  encodeNormalized(text) {
    return this._sp.encodeIds(text);
  }
}

export function describe(x) {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  if (ArrayBuffer.isView(x)) return `a ${x.constructor.name}`;
  return typeof x === 'object' ? `a ${x.constructor ? x.constructor.name : 'object'}` : `a ${typeof x}`;
}
