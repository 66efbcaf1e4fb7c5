// Stand-in for the "buffer" package in the browser (the SentencePiece package imports it for its base64 loader,
// which this package never calls). Map "buffer" here in the page's import map, or let a bundler provide it.
export const Buffer = globalThis.Buffer;
export default { Buffer };
