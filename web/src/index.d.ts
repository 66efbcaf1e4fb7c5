// Types of the lwx-edge JavaScript package (the same API in Node, "lwx-edge-web/node", and in the browser,
// "lwx-edge-web/browser"; Encoder.load and loadHead take a directory in Node and a URL in the browser).

/** Base class of every error the package throws on purpose. */
export class LwxError extends Error {}
/** A bundle that is missing, damaged, edited, or not one this package can run. */
export class BundleError extends LwxError {}
/** A bad argument or input text. */
export class InputError extends LwxError {}
/** A head that cannot be read, or that was fitted on another encoder. */
export class HeadError extends LwxError {}

export type Vector = Float32Array | Float64Array | number[];
export type Policy = 'warn' | 'ignore' | 'error';

export interface EmbedOptions {
  /** rows per onnxruntime call at most (default 32) */
  batchSize?: number;
  /** L2-normalise (default true); false gives the raw mean-pooled vectors */
  normalize?: boolean;
  /** texts longer than maxLen tokens keep their head: warn (default), ignore, or throw an InputError */
  truncation?: Policy;
  /** texts with nothing to embed get all-zero vectors: warn (default), ignore, or throw an InputError */
  empty?: Policy;
}

export interface SearchHits {
  /** corpus indices, best first (equal scores: the lower index first) */
  indices: number[];
  /** cosine similarities, in the same order */
  scores: number[];
}

export interface EncoderIdentity {
  /** the sha256 of the weights the model was exported from (parity.json), else of the model file */
  sha256: string;
  artifact_sha256: string;
  model_files: Record<string, string>;
  identity_from: 'export' | 'file';
  tokenizer_sha256: string;
  embedding_dim: number;
  artifact: string;
  bundle: string;
  backend: string;
}

export interface LoadTimings {
  readAndVerifyMs: number;
  tokenizerMs: number;
  sessionMs: number;
  /** the first run of the program (a one-token probe that checks the output size) */
  firstVectorMs: number;
  loadMs: number;
}

export interface NodeLoadOptions {
  /** "node": onnxruntime-node (native, default); "wasm": onnxruntime-web's WebAssembly build */
  runtime?: 'node' | 'wasm';
  /** intra-op threads (default: onnxruntime-node's default; wasm: 1) */
  threads?: number;
  /** "model.int8.onnx" (default when present) or "model.onnx" */
  artifact?: string;
  /** where warnings go (default console.warn) */
  warn?: (message: string) => void;
}

export interface BrowserLoadOptions {
  /** where onnxruntime-web's .wasm files are served (default: node_modules/onnxruntime-web/dist/ beside the package) */
  wasmPaths?: string;
  /** WebAssembly threads (default 1; more needs a cross-origin isolated page) */
  threads?: number;
  artifact?: string;
  warn?: (message: string) => void;
}

export class Encoder {
  /** Node: a bundle directory (default: the repository's lwx_edge/default_model); browser: the bundle's URL. */
  static load(pathOrUrl?: string, options?: NodeLoadOptions & BrowserLoadOptions): Promise<Encoder>;
  readonly dim: number;
  readonly maxLen: number;
  readonly artifact: string;
  readonly runtime: string;
  readonly timings: LoadTimings;
  /** browser only: bytes the loader fetched */
  readonly bytesFetched?: number;
  /** indices of the last embed call's texts that were cut at maxLen */
  lastTruncated: number[];
  /** indices of the last embed call's texts that had nothing to embed (all-zero vectors) */
  lastEmpty: number[];
  identity(): EncoderIdentity;
  embed(text: string, options?: EmbedOptions): Promise<Float32Array>;
  embed(texts: string[], options?: EmbedOptions): Promise<Float32Array[]>;
  similarity(a: string | Vector, b: string | Vector): Promise<number>;
  similarity(a: string | Vector, b: string[] | Vector[]): Promise<number[]>;
  similarity(a: string[] | Vector[], b: string | Vector): Promise<number[]>;
  similarity(a: string[] | Vector[], b: string[] | Vector[]): Promise<number[][]>;
  search(query: string | Vector, corpus: string[] | Vector[], topK?: number): Promise<SearchHits>;
  search(queries: string[] | Vector[], corpus: string[] | Vector[], topK?: number): Promise<SearchHits[]>;
}

export class Head {
  readonly kind: 'logistic' | 'mlp';
  readonly classes: (string | number)[];
  readonly nFeatures: number;
  readonly encoder: Encoder | null;
  readonly meta: Record<string, unknown>;
  /** class probabilities, columns in `classes` order */
  predictProba(input: string | Vector): Promise<number[]>;
  predictProba(inputs: string[] | Vector[]): Promise<number[][]>;
  predict(input: string | Vector): Promise<string | number>;
  predict(inputs: string[] | Vector[]): Promise<(string | number)[]>;
}

/** A head saved by the Python SDK (head.json + head.npz): a directory in Node, a URL in the browser. With an
 * encoder, a head fitted on another encoder is refused with a HeadError. */
export function loadHead(pathOrUrl: string, encoder?: Encoder | null, options?: { warn?: (message: string) => void }): Promise<Head>;

/** The bundle's text contract (lwx_edge.text.normalize). */
export function normalize(text: string, lower?: boolean): string;
export function cosine(a: Vector, b: Vector): number;
export function searchVectors(queries: Vector | Vector[], corpus: Vector[], topK?: number): SearchHits[];
export function planBatches(lengths: number[], maxBatch: number, overhead: number): number[][];

/** Node only: the repository's default bundle directory. */
export const DEFAULT_MODEL: string;
