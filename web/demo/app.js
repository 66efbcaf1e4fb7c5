// The demo: everything below runs in this page. The model files come from /model/ (the bundle, checked against
// its manifest), the head from /head/ (fitted with the Python SDK), the notes from notes.json.
import { Encoder, loadHead } from '/src/browser.js';

const $ = (id) => document.getElementById(id);
const status = $('status');
const demo = { ready: false, timings: {}, searches: [], classifications: [] };
window.lwxDemo = demo;

function stat(name, value) {
  const tr = document.createElement('tr');
  tr.innerHTML = '<td></td><td></td>';
  tr.children[0].textContent = name;
  tr.children[1].textContent = value;
  $('stats').append(tr);
}

function pageBytes() {
  const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
  return entries.reduce((s, e) => s + (e.encodedBodySize || 0), 0);
}

async function main() {
  const t0 = performance.now();
  const enc = await Encoder.load('/model/', { wasmPaths: '/node_modules/onnxruntime-web/dist/', threads: 1, warn: () => {} });
  const head = await loadHead('/head/', enc);
  const { notes, queries, requests } = await (await fetch('notes.json')).json();
  const tFirst = performance.now();
  const first = await enc.embed(notes[0].text);
  const firstVectorAt = performance.now();
  const corpus = await enc.embed(notes.map((n) => n.text));
  const tReady = performance.now();
  Object.assign(demo, { enc, head, notes, corpus, queries, requests });
  demo.timings = {
    scriptStartMs: t0, loadMs: enc.timings.loadMs, model: enc.timings, firstTextMs: firstVectorAt - tFirst,
    timeToFirstVectorMs: firstVectorAt, notesEmbedMs: tReady - firstVectorAt, readyAtMs: tReady,
    bytesFetchedByLoader: enc.bytesFetched, pageBytes: pageBytes(), dim: first.length,
  };
  stat('runtime', `${enc.runtime}, 1 thread`);
  stat('model load (fetch, sha256 checks, tokenizer, session, first run)', `${enc.timings.loadMs.toFixed(0)} ms`);
  stat('time to first vector (since navigation)', `${firstVectorAt.toFixed(0)} ms`);
  stat(`embedding the ${notes.length} notes`, `${(tReady - firstVectorAt).toFixed(0)} ms`);
  stat('bytes downloaded by the page', `${(pageBytes() / 1e6).toFixed(1)} MB`);
  for (const n of notes) {
    const li = document.createElement('li');
    li.innerHTML = '<span class="lang"></span><span></span>';
    li.children[0].textContent = n.lang;
    li.children[1].textContent = n.text;
    $('notes').append(li);
  }
  $('note-count').textContent = `(${notes.length}, five languages)`;
  $('query').value = queries[0];
  $('request').value = requests[0];
  $('search-button').disabled = false;
  $('classify-button').disabled = false;
  status.textContent = `Ready: ${notes.length} notes embedded in this page, head "${head.classes.join(' / ')}" loaded.`;
  status.dataset.state = 'ready';
  demo.ready = true;
}

async function search(query) {
  const t = performance.now();
  const q = await demo.enc.embed(query);
  const hits = await demo.enc.search(q, demo.corpus, 5);
  const ms = performance.now() - t;
  $('search-latency').textContent = `query embedded and searched in ${ms.toFixed(1)} ms`;
  $('results').replaceChildren(...hits.indices.map((i, r) => {
    const li = document.createElement('li');
    li.innerHTML = '<span class="score"></span><span class="lang"></span><span class="text"></span>';
    li.children[0].textContent = hits.scores[r].toFixed(3);
    li.children[1].textContent = demo.notes[i].lang;
    li.children[2].textContent = demo.notes[i].text;
    return li;
  }));
  const result = { query, ms, hits: hits.indices.map((i, r) => ({ text: demo.notes[i].text, lang: demo.notes[i].lang, score: hits.scores[r] })) };
  demo.searches.push(result);
  return result;
}

async function classify(text) {
  const t = performance.now();
  const p = await demo.head.predictProba(text);
  const ms = performance.now() - t;
  const order = p.map((x, j) => j).sort((a, b) => p[b] - p[a]);
  $('classify-latency').textContent = `"${text}" → ${demo.head.classes[order[0]]} (embedded and classified in ${ms.toFixed(1)} ms)`;
  $('probabilities').replaceChildren(...order.map((j) => {
    const tr = document.createElement('tr');
    tr.innerHTML = '<td></td><td class="score"></td><td><span class="bar"></span></td>';
    tr.children[0].textContent = demo.head.classes[j];
    tr.children[1].textContent = p[j].toFixed(3);
    tr.children[2].firstChild.style.width = `${Math.round(p[j] * 200)}px`;
    return tr;
  }));
  const result = { text, ms, label: demo.head.classes[order[0]], proba: p };
  demo.classifications.push(result);
  return result;
}

demo.search = search;
demo.classify = classify;
$('search-form').addEventListener('submit', (e) => { e.preventDefault(); search($('query').value); });
$('classify-form').addEventListener('submit', (e) => { e.preventDefault(); classify($('request').value); });

main().catch((e) => {
  status.textContent = `Error: ${e.message}`;
  status.dataset.state = 'error';
  demo.error = String(e && e.message);
  console.error(e);
});
