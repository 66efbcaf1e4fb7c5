// Stand-in for Node's "fs" in the browser (the SentencePiece package imports it; in a page it is never called:
// the tokenizer is given the model's bytes). Map "fs" here in the page's import map, or let a bundler drop it.
export function readFileSync() {
  throw new Error('fs is not available in the browser: give the tokenizer the model bytes');
}
export default { readFileSync };
