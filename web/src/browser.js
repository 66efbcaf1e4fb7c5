// lwx-edge in the browser: bundles and heads fetched from a URL (the same origin, or any server that allows it),
// the program run by onnxruntime-web's WebAssembly build. Nothing is fetched from anywhere but the URLs given:
// onnxruntime-web's .wasm comes from `wasmPaths` (default: the package's node_modules beside this file).
import * as ort from 'onnxruntime-web/wasm';
import { Encoder as BaseEncoder } from './encoder.js';
import { BundleError, HeadError, InputError, LwxError } from './errors.js';
import { Head } from './head.js';

export { Bundle } from './encoder.js';
export { BundleError, HeadError, InputError, LwxError, Head };
export { normalize } from './text.js';
export { cosine, searchVectors, planBatches } from './search.js';

const DEFAULT_WASM = new URL('../node_modules/onnxruntime-web/dist/', import.meta.url).href;

function urlSource(base, Err, counter) {
  const root = new URL(base.endsWith('/') ? base : `${base}/`, globalThis.location ? globalThis.location.href : undefined).href;
  return {
    where: root.replace(/\/$/, ''),
    async read(name, what) {
      let r;
      try {
        r = await fetch(new URL(name, root));
      } catch (e) {
        throw new Err(`${root}${name}: ${what} cannot be fetched (${e.message})`);
      }
      if (r.status === 404) {
        throw new Err(name === 'manifest.json' ? `${root}: not a model bundle (manifest.json is missing)` : name === 'head.json' ? `${root}: not a head directory (head.json is missing)` : `${root}: ${name} is listed but missing (HTTP 404)`);
      }
      if (!r.ok) throw new Err(`${root}${name}: ${what} cannot be fetched (HTTP ${r.status})`);
      const bytes = new Uint8Array(await r.arrayBuffer());
      if (counter) counter.bytes += bytes.length;
      return bytes;
    },
  };
}

export class Encoder extends BaseEncoder {
  /**
   * Fetch a bundle (its manifest.json, config.json, tokenizer.model, the ONNX program and parity.json) from `url`
   * and check it: the sha256 and size of every file read, the text contract, the program's inputs and outputs.
   * @param {string} url the bundle directory's URL
   * @param {{wasmPaths?: string, threads?: number, artifact?: string, warn?: (m: string) => void}} [options]
   */
  static async load(url, { wasmPaths = DEFAULT_WASM, threads = 1, artifact, warn } = {}) {
    if (typeof url !== 'string' || !url) throw new InputError(`url must be the bundle directory's URL (a string), got ${typeof url}`);
    if (!Number.isInteger(threads) || threads < 1) throw new InputError(`threads must be a positive integer, got ${threads}`);
    ort.env.wasm.wasmPaths = wasmPaths;
    ort.env.wasm.numThreads = threads; // more than 1 needs a cross-origin isolated page (SharedArrayBuffer)
    const counter = { bytes: 0 };
    const enc = await this.open({ source: urlSource(url, BundleError, counter), ort, runtime: 'onnxruntime-web (wasm)', sessionOptions: { executionProviders: ['wasm'] }, artifact, warn });
    enc.bytesFetched = counter.bytes;
    return enc;
  }
}

/**
 * Fetch a head saved by the Python SDK (head.json + head.npz) from `url`. With an encoder, a head fitted on
 * another encoder is refused (HeadError) and texts are embedded with it.
 */
export async function loadHead(url, encoder = null, { warn } = {}) {
  const src = urlSource(url, HeadError, null);
  return Head.fromFiles({ json: await src.read('head.json', 'head'), weights: (name) => src.read(name, 'weights file'), encoder, where: src.where, ...(warn ? { warn } : {}) });
}
