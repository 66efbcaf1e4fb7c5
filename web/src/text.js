// The bundle's text contract, as lwx_edge/text.py applies it: NFKC, typographic quotes and dashes to ASCII,
// runs of whitespace (Python's str.isspace set) collapsed to one space, stripped, lowercased.

export const RULES = 'nfkc';

const TYPOGRAPHIC = {
  '\u2018': "'", '\u2019': "'", '\u201a': "'", '\u201b': "'", '\u2032': "'",
  '\u201c': '"', '\u201d': '"', '\u201e': '"', '\u201f': '"', '\u00ab': '"', '\u00bb': '"',
  '\u2039': "'", '\u203a': "'", '\u2013': '-', '\u2014': '-', '\u2212': '-', '\u2026': '...',
  '\u00a0': ' ', '\u202f': ' ', '\u2009': ' ', '\u22c5': ' ', '\u2010': '-', '\u2011': '-',
};
const TYPOGRAPHIC_RE = new RegExp(`[${Object.keys(TYPOGRAPHIC).join('')}]`, 'g');
// Exactly the code points for which CPython's str.isspace() (and re's \s) is true; JavaScript's \s differs
// (it lacks U+001C..U+001F and U+0085, and has U+FEFF).
const PY_SPACES = /[\t\n\v\f\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/g;
// control, format (zero-width, BOM) and separator characters: a text of only these has nothing to embed
const INVISIBLE_ONLY = /^[\p{Cc}\p{Cf}\p{Zs}\p{Zl}\p{Zp}]+$/u;

/**
 * lwx_edge.text.normalize(text, lower): what the tokenizer sees.
 * @param {string} text
 * @param {boolean} [lower=true]
 * @returns {string}
 */
export function normalize(text, lower = true) {
  let s = text.normalize('NFKC').replace(TYPOGRAPHIC_RE, (c) => TYPOGRAPHIC[c]);
  s = s.replace(PY_SPACES, ' ');
  if (s.startsWith(' ')) s = s.slice(1);
  if (s.endsWith(' ')) s = s.slice(0, -1);
  return lower ? s.toLowerCase() : s;
}

/**
 * Why a normalised text has nothing to embed, or null when it has something (lwx_edge.text.blank).
 * @param {string} normalized
 * @returns {string | null}
 */
export function blank(normalized) {
  if (!normalized) return 'empty or whitespace-only';
  if (INVISIBLE_ONLY.test(normalized)) return 'only control or invisible characters';
  return null;
}

/** Index of the first lone surrogate of a string, or -1. */
export function loneSurrogate(text) {
  if (typeof text.isWellFormed === 'function' && text.isWellFormed()) return -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) { i++; continue; }
      return i;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}
