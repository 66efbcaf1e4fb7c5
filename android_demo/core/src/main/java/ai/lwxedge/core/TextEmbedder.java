package ai.lwxedge.core;

import java.util.ArrayList;
import java.util.List;

/**
 * Texts to L2-normalised embeddings, as {@code Encoder.embed} does: tokenize (truncating at max_len),
 * right-pad each batch with pad id 0 to its longest row, attention mask 1/0, run the exported program, then
 * L2-normalise. The program itself is behind {@link Runtime}, which the Android app implements with
 * ExecuTorch ({@code org.pytorch.executorch.Module}); the JVM tests use a fake.
 */
public final class TextEmbedder {
    /** One call of the exported {@code forward(input_ids int64 [B, T], attention_mask int64 [B, T])}. */
    public interface Runtime {
        /**
         * @param ids  row-major int64 [batch, len] token ids, padded with 0
         * @param mask row-major int64 [batch, len], 1 for tokens, 0 for padding
         * @return [batch][dim] sentence embeddings (not necessarily normalised)
         */
        float[][] run(long[] ids, long[] mask, int batch, int len) throws Exception;
    }

    private final SentencePieceBpe tokenizer;
    private final Runtime runtime;
    private final int maxLen;
    private final int maxBatch;

    public TextEmbedder(SentencePieceBpe tokenizer, Runtime runtime, int maxLen, int maxBatch) {
        this.tokenizer = tokenizer;
        this.runtime = runtime;
        this.maxLen = maxLen;
        this.maxBatch = Math.max(1, maxBatch);
    }

    public SentencePieceBpe tokenizer() {
        return tokenizer;
    }

    public int maxLen() {
        return maxLen;
    }

    /** Token ids of each text (throws IllegalArgumentException for a text that is empty after normalisation). */
    public int[][] tokenize(List<String> texts) {
        int[][] ids = new int[texts.size()][];
        for (int k = 0; k < ids.length; k++) {
            ids[k] = tokenizer.encode(texts.get(k), maxLen).ids;
        }
        return ids;
    }

    public float[] embed(String text) throws Exception {
        List<String> one = new ArrayList<>();
        one.add(text);
        return embed(one)[0];
    }

    public float[][] embed(List<String> texts) throws Exception {
        return embedIds(runtime, tokenize(texts), maxBatch);
    }

    /** Runs pre-tokenised rows in batches of at most {@code maxBatch}; returns L2-normalised vectors. */
    public static float[][] embedIds(Runtime runtime, int[][] rows, int maxBatch) throws RuntimeException {
        float[][] out = new float[rows.length][];
        for (int s = 0; s < rows.length; s += maxBatch) {
            int b = Math.min(maxBatch, rows.length - s);
            int len = 1;
            for (int r = 0; r < b; r++) {
                len = Math.max(len, rows[s + r].length);
            }
            long[] ids = new long[b * len];
            long[] mask = new long[b * len];
            for (int r = 0; r < b; r++) {
                int[] row = rows[s + r];
                for (int t = 0; t < row.length; t++) {
                    ids[r * len + t] = row[t];
                    mask[r * len + t] = 1;
                }
            }
            float[][] vecs;
            try {
                vecs = runtime.run(ids, mask, b, len);
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException("the model failed on a batch of shape [" + b + ", " + len + "]: " + e, e);
            }
            if (vecs.length != b) {
                throw new IllegalStateException("the model returned " + vecs.length + " rows for a batch of " + b);
            }
            for (int r = 0; r < b; r++) {
                out[s + r] = l2normalise(vecs[r]);
            }
        }
        return out;
    }

    public static float[] l2normalise(float[] v) {
        double n = 0;
        for (float x : v) {
            n += (double) x * x;
        }
        n = Math.max(Math.sqrt(n), 1e-12);
        float[] o = new float[v.length];
        for (int k = 0; k < v.length; k++) {
            o[k] = (float) (v[k] / n);
        }
        return o;
    }
}
