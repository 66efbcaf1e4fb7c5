// NumPy's .npy and .npz formats (what lwx_edge.heads saves: np.savez, read with allow_pickle=False), read in
// plain JavaScript. Only numeric arrays; object arrays (pickles) are refused.

const DTYPES = {
  '<f4': [Float32Array, 4], '<f8': [Float64Array, 8], '<i4': [Int32Array, 4], '<i8': [BigInt64Array, 8],
  '|i1': [Int8Array, 1], '|u1': [Uint8Array, 1], '<u4': [Uint32Array, 4],
};

/**
 * Parse one .npy file.
 * @param {Uint8Array} bytes
 * @returns {{dtype: string, shape: number[], data: Float32Array|Float64Array|Int32Array|BigInt64Array|Int8Array|Uint8Array|Uint32Array}}
 */
export function parseNpy(bytes) {
  const magic = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59];
  if (bytes.length < 10 || magic.some((m, i) => bytes[i] !== m)) throw new Error('not a .npy array (bad magic)');
  const major = bytes[6];
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let headerLen, start;
  if (major === 1) { headerLen = dv.getUint16(8, true); start = 10; }
  else if (major === 2 || major === 3) { headerLen = dv.getUint32(8, true); start = 12; }
  else throw new Error(`unsupported .npy version ${major}`);
  if (start + headerLen > bytes.length) throw new Error('truncated .npy header');
  const header = new TextDecoder(major === 3 ? 'utf-8' : 'latin1').decode(bytes.subarray(start, start + headerLen));
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shapeM = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shapeM) throw new Error(`unreadable .npy header ${JSON.stringify(header.slice(0, 80))}`);
  const kind = DTYPES[descr[1]];
  if (!kind) throw new Error(`array type ${descr[1]} is not supported (numbers only; no pickled objects)`);
  const shape = shapeM[1].split(',').map((x) => x.trim()).filter((x) => x).map(Number);
  if (shape.some((d) => !Number.isInteger(d) || d < 0)) throw new Error(`bad shape (${shapeM[1]})`);
  const count = shape.reduce((a, b) => a * b, 1);
  const [Ctor, size] = kind;
  const offset = start + headerLen;
  if (offset + count * size > bytes.length) throw new Error(`truncated .npy data (${bytes.length - offset} bytes for ${count} values)`);
  const copy = bytes.slice(offset, offset + count * size); // aligned
  let data = new Ctor(copy.buffer, 0, count);
  if (fortran[1] === 'True' && shape.length === 2) { // to row-major
    const [r, c] = shape; const t = new Ctor(count);
    for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) t[i * c + j] = data[j * r + i];
    data = t;
  } else if (fortran[1] === 'True' && shape.length > 2) throw new Error('Fortran-ordered arrays of more than 2 dimensions are not supported');
  return { dtype: descr[1], shape, data };
}

async function inflateRaw(bytes) {
  if (typeof DecompressionStream === 'undefined') throw new Error('a compressed .npz needs DecompressionStream');
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * Parse an .npz (a zip of .npy files, stored or deflated; zip64 records understood).
 * @param {Uint8Array} bytes
 * @returns {Promise<Record<string, ReturnType<typeof parseNpy>>>}
 */
export async function parseNpz(bytes) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let eocd = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 22 - 65535); i--) {
    if (dv.getUint32(i, true) === 0x06054b50) { eocd = i; break; }
  }
  if (eocd < 0) throw new Error('not a zip archive (no end of central directory)');
  let entries = dv.getUint16(eocd + 10, true);
  let cdOffset = dv.getUint32(eocd + 16, true);
  if (entries === 0xffff || cdOffset === 0xffffffff) {
    const loc = eocd - 20;
    if (loc < 0 || dv.getUint32(loc, true) !== 0x07064b50) throw new Error('zip64 locator missing');
    const rec = Number(dv.getBigUint64(loc + 8, true));
    if (dv.getUint32(rec, true) !== 0x06064b50) throw new Error('zip64 end record missing');
    entries = Number(dv.getBigUint64(rec + 32, true));
    cdOffset = Number(dv.getBigUint64(rec + 48, true));
  }
  const out = {};
  let p = cdOffset;
  for (let e = 0; e < entries; e++) {
    if (p + 46 > bytes.length || dv.getUint32(p, true) !== 0x02014b50) throw new Error('damaged central directory');
    const method = dv.getUint16(p + 10, true);
    let csize = dv.getUint32(p + 20, true), usize = dv.getUint32(p + 24, true);
    const nlen = dv.getUint16(p + 28, true), xlen = dv.getUint16(p + 30, true), clen = dv.getUint16(p + 32, true);
    let local = dv.getUint32(p + 42, true);
    const name = new TextDecoder().decode(bytes.subarray(p + 46, p + 46 + nlen));
    // zip64 extra field: the 0xffffffff values, in order usize, csize, offset
    let x = p + 46 + nlen;
    const xend = x + xlen;
    while (x + 4 <= xend) {
      const id = dv.getUint16(x, true), len = dv.getUint16(x + 2, true);
      if (id === 0x0001) {
        let q = x + 4;
        if (usize === 0xffffffff) { usize = Number(dv.getBigUint64(q, true)); q += 8; }
        if (csize === 0xffffffff) { csize = Number(dv.getBigUint64(q, true)); q += 8; }
        if (local === 0xffffffff) { local = Number(dv.getBigUint64(q, true)); q += 8; }
      }
      x += 4 + len;
    }
    p = xend + clen;
    if (local + 30 > bytes.length || dv.getUint32(local, true) !== 0x04034b50) throw new Error(`damaged entry ${name}`);
    const start = local + 30 + dv.getUint16(local + 26, true) + dv.getUint16(local + 28, true);
    if (start + csize > bytes.length) throw new Error(`truncated entry ${name}`);
    let data = bytes.subarray(start, start + csize);
    if (method === 8) data = await inflateRaw(data);
    else if (method !== 0) throw new Error(`entry ${name}: compression method ${method} is not supported`);
    if (data.length !== usize) throw new Error(`entry ${name}: ${data.length} bytes, the directory says ${usize}`);
    out[name.replace(/\.npy$/, '')] = parseNpy(data);
  }
  return out;
}
