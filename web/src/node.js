// lwx-edge in Node: bundles and heads read from directories, the program run by onnxruntime-node (native) or by
// onnxruntime-web's WebAssembly build (runtime: "wasm", what the browser runs).
import { readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Encoder as BaseEncoder } from './encoder.js';
import { BundleError, HeadError, InputError, LwxError } from './errors.js';
import { Head } from './head.js';

export { Bundle } from './encoder.js';
export { BundleError, HeadError, InputError, LwxError, Head };
export { normalize } from './text.js';
export { cosine, searchVectors, planBatches } from './search.js';

/** The default model shipped in the repository (lwx_edge/default_model), for Encoder.load() with no path. */
export const DEFAULT_MODEL = fileURLToPath(new URL('../../lwx_edge/default_model/', import.meta.url));

function dirSource(dir) {
  return {
    where: dir,
    async read(name, what) {
      try {
        return new Uint8Array(await readFile(join(dir, name)));
      } catch (e) {
        if (e.code === 'ENOENT') {
          throw new BundleError(name === 'manifest.json' ? `${dir}: not a model bundle (manifest.json is missing)` : `${dir}: ${name} is listed in the manifest but missing`);
        }
        throw new BundleError(`${dir}: ${what} ${name} cannot be read (${e.code || e.message})`);
      }
    },
  };
}

async function checkDir(dir, kind, Err) {
  let st;
  try {
    st = await stat(dir);
  } catch {
    throw new Err(`${dir}: no such ${kind} directory`);
  }
  if (!st.isDirectory()) throw new Err(`${dir}: a ${kind} is a directory, got a file`);
}

// The optimizers the Python SDK turns off (lwx_edge/runtime/onnx_backend.py: DISABLED_OPTIMIZERS), so that the
// same program runs the same graph here.
const NO_FUSION = { optimization: { disable_specified_optimizers: 'SkipLayerNormFusion' } };

export class Encoder extends BaseEncoder {
  /**
   * Open a bundle directory (default: the repository's lwx_edge/default_model) and check it: the manifest, the
   * sha256 and size of every file read, the text contract, the program's inputs and outputs.
   * @param {string} [path]
   * @param {{runtime?: 'node'|'wasm', threads?: number, artifact?: string, warn?: (m: string) => void}} [options]
   */
  static async load(path = DEFAULT_MODEL, { runtime = 'node', threads, artifact, warn } = {}) {
    if (typeof path !== 'string') throw new InputError(`path must be a bundle directory (a string), got ${typeof path}`);
    if (threads !== undefined && (!Number.isInteger(threads) || threads < 1)) throw new InputError(`threads must be a positive integer, got ${threads}`);
    const dir = resolve(path);
    await checkDir(dir, 'bundle', BundleError);
    let ort, sessionOptions;
    if (runtime === 'node') {
      ort = await import('onnxruntime-node');
      sessionOptions = { executionProviders: ['cpu'], interOpNumThreads: 1, extra: NO_FUSION, ...(threads ? { intraOpNumThreads: threads } : {}) };
    } else if (runtime === 'wasm') {
      ort = await import('onnxruntime-web');
      ort.env.wasm.numThreads = threads || 1;
      sessionOptions = { executionProviders: ['wasm'], extra: NO_FUSION };
    } else {
      throw new InputError(`runtime must be 'node' or 'wasm', got ${JSON.stringify(runtime)}`);
    }
    return this.open({ source: dirSource(dir), ort, runtime: `onnxruntime-${runtime === 'node' ? 'node' : 'web (wasm)'}`, sessionOptions, artifact, warn });
  }
}

/**
 * Load a head saved by the Python SDK (head.json + head.npz). With an encoder, a head fitted on another encoder
 * is refused (HeadError) and texts are embedded with it.
 * @param {string} path
 * @param {Encoder} [encoder]
 */
export async function loadHead(path, encoder = null, { warn } = {}) {
  const dir = resolve(path);
  await checkDir(dir, 'head', HeadError);
  const read = async (name) => {
    try {
      return new Uint8Array(await readFile(join(dir, name)));
    } catch (e) {
      throw new HeadError(e.code === 'ENOENT' ? `${dir}: ${name === 'head.json' ? 'not a head directory (head.json is missing)' : `weights file ${name} is missing`}` : `${dir}: ${name} cannot be read (${e.code})`);
    }
  };
  return Head.fromFiles({ json: await read('head.json'), weights: read, encoder, where: dir, ...(warn ? { warn } : {}) });
}
