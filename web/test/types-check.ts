// Compiled by `npm run typecheck` (tsc --noEmit): the declarations in src/index.d.ts describe a usable API.
import { Encoder, loadHead, BundleError, HeadError, type SearchHits } from 'lwx-edge-web';

export async function example(): Promise<string> {
  const enc: Encoder = await Encoder.load('path/to/bundle', { runtime: 'node', threads: 1 });
  const one: Float32Array = await enc.embed('Will it rain tomorrow?');
  const many: Float32Array[] = await enc.embed(['A cat.', 'Un chat.'], { truncation: 'error', empty: 'ignore' });
  const s: number = await enc.similarity('A cat.', 'Un chat.');
  const row: number[] = await enc.similarity(one, many);
  const hits: SearchHits = await enc.search('cat', ['Un chat.', 'Ein Hund.'], 1);
  const head = await loadHead('my-head', enc);
  const p: number[] = await head.predictProba('Mets de la musique douce');
  const label = await head.predict(many[0]);
  const err: boolean = new BundleError('x') instanceof Error && !(new HeadError('y') instanceof BundleError);
  return `${s} ${row.length} ${hits.indices[0]} ${p[0]} ${label} ${err} ${enc.identity().sha256} ${enc.timings.loadMs}`;
}
