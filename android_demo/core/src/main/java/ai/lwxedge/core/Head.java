package ai.lwxedge.core;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A classifier head saved by the Python SDK ({@code head.save(dir)} / {@code lwx-edge fit --out dir}): a
 * directory with {@code head.json} (metadata) and {@code head.npz} (float32 {@code mean}, {@code scale},
 * {@code W{i}} [in, out], {@code b{i}} [out]). Prediction, as in {@code lwx_edge.heads.base.forward}:
 * <pre>x = e / max(||e||, 1e-12);  z = (x - mean) / scale;  h = act_i(h W_i + b_i);  p = softmax(h)</pre>
 * computed here in double precision (the SDK computes the layers in float32, the softmax in float64).
 */
public final class Head {
    public static final String FORMAT = "lwx-edge-head";
    public static final int FORMAT_VERSION = 1;

    private final List<String> classes;
    private final String kind;
    private final int nFeatures;
    private final float[] mean;   // null if not standardised
    private final float[] scale;
    private final List<float[][]> weights = new ArrayList<>(); // [in][out]
    private final List<float[]> biases = new ArrayList<>();
    private final List<String> activations = new ArrayList<>();
    private final Map<String, Object> encoderInfo;               // may be null
    private final Map<String, Object> meta;

    private Head(Map<String, Object> meta, Map<String, Npy.Array> arrays, Path where) throws IOException {
        this.meta = meta;
        try {
            kind = Json.str(meta.get("kind"), "kind");
            List<Object> cl = Json.arr(meta.get("classes"), "classes");
            List<String> names = new ArrayList<>();
            for (Object c : cl) {
                names.add(c instanceof Long ? Long.toString((Long) c) : String.valueOf(c));
            }
            classes = Collections.unmodifiableList(names);
            nFeatures = (int) Json.integer(meta.get("n_features"), "n_features");
            Map<String, Object> input = meta.get("input") == null ? Collections.<String, Object>emptyMap() : Json.obj(meta.get("input"), "input");
            boolean standardize = Boolean.TRUE.equals(input.get("standardize"));
            if (standardize) {
                mean = need(arrays, "mean", where).toFloatVector();
                scale = need(arrays, "scale", where).toFloatVector();
                if (mean.length != nFeatures || scale.length != nFeatures) {
                    throw new IOException(where + ": mean/scale have " + mean.length + " values, expected " + nFeatures);
                }
            } else {
                mean = null;
                scale = null;
            }
            int d = nFeatures;
            for (Object o : Json.arr(meta.get("layers"), "layers")) {
                Map<String, Object> spec = Json.obj(o, "layer");
                String act = Json.str(spec.get("activation"), "activation");
                if (!act.equals("tanh") && !act.equals("relu") && !act.equals("identity")) {
                    throw new IOException(where + ": unknown activation " + act);
                }
                Npy.Array w = need(arrays, Json.str(spec.get("weight"), "weight"), where);
                Npy.Array b = need(arrays, Json.str(spec.get("bias"), "bias"), where);
                if (w.shape.length != 2 || w.shape[0] != d || b.shape.length != 1 || b.shape[0] != w.shape[1]) {
                    throw new IOException(where + ": layer shapes do not chain (W " + java.util.Arrays.toString(w.shape)
                            + " after " + d + " features)");
                }
                weights.add(w.toFloatMatrix());
                biases.add(b.toFloatVector());
                activations.add(act);
                d = w.shape[1];
            }
            if (d != classes.size()) {
                throw new IOException(where + ": the output layer has " + d + " units but the head has "
                        + classes.size() + " classes");
            }
            Object enc = meta.get("encoder");
            encoderInfo = enc instanceof Map ? Json.obj(enc, "encoder") : null;
        } catch (IllegalArgumentException e) {
            throw new IOException(where + ": head.json and head.npz do not fit together (" + e.getMessage() + ")", e);
        }
    }

    private static Npy.Array need(Map<String, Npy.Array> arrays, String name, Path where) throws IOException {
        Npy.Array a = arrays.get(name);
        if (a == null) {
            throw new IOException(where + ": head.npz has no array " + name);
        }
        return a;
    }

    /** Loads a head directory (or its head.json), verifying head.npz against the sha256 recorded in head.json. */
    public static Head load(Path dir) throws IOException {
        if (Files.isRegularFile(dir) && dir.getFileName().toString().equals("head.json")) {
            dir = dir.getParent();
        }
        Map<String, Object> meta = Json.readObject(dir.resolve("head.json"));
        if (!FORMAT.equals(meta.get("format"))) {
            throw new IOException(dir + "/head.json: not an lwx-edge head");
        }
        Object fv = meta.get("format_version");
        if (!(fv instanceof Long) || (Long) fv != FORMAT_VERSION) {
            throw new IOException(dir + ": head format version " + fv + " is not supported (this reads " + FORMAT_VERSION + ")");
        }
        Map<String, Object> w = meta.get("weights") instanceof Map ? Json.obj(meta.get("weights"), "weights") : Collections.<String, Object>emptyMap();
        String file = w.get("file") instanceof String ? (String) w.get("file") : "head.npz";
        Path npz = dir.resolve(file);
        if (!Files.isRegularFile(npz)) {
            throw new IOException(dir + ": weights file " + file + " is missing");
        }
        if (w.get("sha256") instanceof String) {
            String got = Bundle.sha256(npz);
            if (!got.equals(w.get("sha256"))) {
                throw new IOException(npz + ": corrupt (sha256 does not match head.json)");
            }
        }
        return new Head(meta, Npy.readNpz(npz), dir);
    }

    public List<String> classes() {
        return classes;
    }

    public String kind() {
        return kind;
    }

    public int nFeatures() {
        return nFeatures;
    }

    public Map<String, Object> meta() {
        return meta;
    }

    /** Logits for one embedding (need not be normalised: it is L2-normalised first). */
    public double[] logits(float[] embedding) {
        if (embedding.length != nFeatures) {
            throw new IllegalArgumentException("embedding has " + embedding.length + " dimensions, the head expects " + nFeatures);
        }
        double norm = 0;
        for (float v : embedding) {
            norm += (double) v * v;
        }
        norm = Math.max(Math.sqrt(norm), 1e-12);
        double[] h = new double[nFeatures];
        for (int k = 0; k < nFeatures; k++) {
            double x = embedding[k] / norm;
            h[k] = mean == null ? x : (x - mean[k]) / scale[k];
        }
        for (int layer = 0; layer < weights.size(); layer++) {
            float[][] wl = weights.get(layer);
            float[] bl = biases.get(layer);
            int out = bl.length;
            double[] z = new double[out];
            for (int o = 0; o < out; o++) {
                z[o] = bl[o];
            }
            for (int in = 0; in < h.length; in++) {
                double hv = h[in];
                if (hv == 0) {
                    continue;
                }
                float[] row = wl[in];
                for (int o = 0; o < out; o++) {
                    z[o] += hv * row[o];
                }
            }
            String act = activations.get(layer);
            if (act.equals("tanh")) {
                for (int o = 0; o < out; o++) {
                    z[o] = Math.tanh(z[o]);
                }
            } else if (act.equals("relu")) {
                for (int o = 0; o < out; o++) {
                    z[o] = Math.max(z[o], 0.0);
                }
            }
            h = z;
        }
        return h;
    }

    /** Class probabilities (softmax of the logits), in {@link #classes()} order. */
    public double[] predictProba(float[] embedding) {
        double[] z = logits(embedding);
        double max = Double.NEGATIVE_INFINITY;
        for (double v : z) {
            max = Math.max(max, v);
        }
        double sum = 0;
        double[] p = new double[z.length];
        for (int k = 0; k < z.length; k++) {
            p[k] = Math.exp(z[k] - max);
            sum += p[k];
        }
        for (int k = 0; k < z.length; k++) {
            p[k] /= sum;
        }
        return p;
    }

    /** Index of the predicted class (the first maximum, like numpy's argmax). */
    public int predictIndex(float[] embedding) {
        double[] z = logits(embedding);
        int best = 0;
        for (int k = 1; k < z.length; k++) {
            if (z[k] > z[best]) {
                best = k;
            }
        }
        return best;
    }

    public String predict(float[] embedding) {
        return classes.get(predictIndex(embedding));
    }

    /**
     * Why this head must not be used with the bundle's encoder ({@code lwx_edge.heads.base.check_encoder}), or
     * null when it matches or the head/bundle records too little to tell.
     */
    public String encoderMismatch(Bundle bundle) {
        if (encoderInfo == null || !(encoderInfo.get("sha256") instanceof String)) {
            return null;
        }
        Set<Object> ours = new HashSet<>();
        if (encoderInfo.get("model_files") instanceof Map) {
            ours.addAll(Json.obj(encoderInfo.get("model_files"), "model_files").values());
        }
        ours.add(encoderInfo.get("sha256"));
        Set<Object> theirs = new HashSet<>(bundle.modelFileHashes().values());
        if (theirs.isEmpty()) {
            return null;
        }
        theirs.retainAll(ours);
        if (theirs.isEmpty()) {
            return "the head was fitted on another encoder (model differs); refit it on this bundle";
        }
        Object tok = encoderInfo.get("tokenizer_sha256");
        String ourTok = bundle.fileSha256(Bundle.TOKENIZER);
        if (tok instanceof String && ourTok != null && !tok.equals(ourTok)) {
            return "the head was fitted on another encoder (tokenizer differs); refit it on this bundle";
        }
        Object dim = encoderInfo.get("embedding_dim");
        Integer ourDim = bundle.embeddingDim();
        if (dim instanceof Long && ourDim != null && ((Long) dim).intValue() != ourDim) {
            return "the head was fitted on another encoder (embedding size differs); refit it on this bundle";
        }
        return null;
    }
}
