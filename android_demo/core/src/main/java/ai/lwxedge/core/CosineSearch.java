package ai.lwxedge.core;

import java.util.Arrays;
import java.util.PriorityQueue;

/**
 * Exact cosine top-k over a fixed corpus of embeddings, like {@code lwx_edge.search.search}: vectors are
 * L2-normalised ({@code x / max(||x||, 1e-12)}), results are best first, ties broken by the lower corpus
 * index, {@code k} is clipped to the corpus size. Scores are computed in double precision.
 */
public final class CosineSearch {
    /** One result: corpus index and cosine similarity. */
    public static final class Hit {
        public final int index;
        public final double score;

        Hit(int index, double score) {
            this.index = index;
            this.score = score;
        }

        @Override
        public String toString() {
            return index + ":" + score;
        }
    }

    private final double[][] corpus;
    private final int dim;

    /** @param corpus [n][d] embeddings (copied and normalised; need not be normalised) */
    public CosineSearch(float[][] corpus) {
        if (corpus.length == 0 || corpus[0].length == 0) {
            throw new IllegalArgumentException("corpus is empty");
        }
        dim = corpus[0].length;
        this.corpus = new double[corpus.length][];
        for (int r = 0; r < corpus.length; r++) {
            if (corpus[r].length != dim) {
                throw new IllegalArgumentException("corpus row " + r + " has " + corpus[r].length + " dimensions, expected " + dim);
            }
            this.corpus[r] = normalise(corpus[r], "corpus row " + r);
        }
    }

    public int size() {
        return corpus.length;
    }

    public int dim() {
        return dim;
    }

    static double[] normalise(float[] v, String what) {
        double n = 0;
        for (float x : v) {
            if (!Float.isFinite(x)) {
                throw new IllegalArgumentException(what + " contains NaN or infinite values");
            }
            n += (double) x * x;
        }
        n = Math.max(Math.sqrt(n), 1e-12);
        double[] out = new double[v.length];
        for (int k = 0; k < v.length; k++) {
            out[k] = v[k] / n;
        }
        return out;
    }

    /** Cosine similarity of {@code query} with every corpus entry. */
    public double[] scores(float[] query) {
        if (query.length != dim) {
            throw new IllegalArgumentException("query has " + query.length + " dimensions, the corpus " + dim);
        }
        double[] q = normalise(query, "query");
        double[] s = new double[corpus.length];
        for (int r = 0; r < corpus.length; r++) {
            double[] c = corpus[r];
            double acc = 0;
            for (int k = 0; k < dim; k++) {
                acc += q[k] * c[k];
            }
            s[r] = acc;
        }
        return s;
    }

    /** The {@code topK} nearest corpus entries, best first; equal scores: lower index first. */
    public Hit[] search(float[] query, int topK) {
        if (topK < 1) {
            throw new IllegalArgumentException("top_k must be a positive integer, got " + topK);
        }
        double[] s = scores(query);
        int k = Math.min(topK, s.length);
        // bounded heap whose head is the worst kept hit (lowest score, then highest index)
        PriorityQueue<Integer> heap = new PriorityQueue<>(k + 1, (a, b) -> {
            int c = Double.compare(s[a], s[b]);
            return c != 0 ? c : Integer.compare(b, a);
        });
        for (int r = 0; r < s.length; r++) {
            if (heap.size() < k) {
                heap.add(r);
            } else {
                int worst = heap.peek();
                if (s[r] > s[worst]) { // equal score: the kept one has the lower index
                    heap.poll();
                    heap.add(r);
                }
            }
        }
        Integer[] idx = heap.toArray(new Integer[0]);
        Arrays.sort(idx, (a, b) -> {
            int c = Double.compare(s[b], s[a]);
            return c != 0 ? c : Integer.compare(a, b);
        });
        Hit[] out = new Hit[idx.length];
        for (int j = 0; j < idx.length; j++) {
            out[j] = new Hit(idx[j], s[idx[j]]);
        }
        return out;
    }
}
