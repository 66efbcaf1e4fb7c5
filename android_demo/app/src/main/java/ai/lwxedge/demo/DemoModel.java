package ai.lwxedge.demo;

import ai.lwxedge.core.Bundle;
import ai.lwxedge.core.CosineSearch;
import ai.lwxedge.core.Head;
import ai.lwxedge.core.SentencePieceBpe;
import ai.lwxedge.core.TextEmbedder;
import ai.lwxedge.core.VectorIndex;
import android.content.Context;
import android.content.res.AssetManager;
import android.database.Cursor;
import android.database.sqlite.SQLiteDatabase;
import android.database.sqlite.SQLiteException;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Everything the screen shows, without UI code: the bundle (verified against its manifest), the tokenizer,
 * the ExecuTorch program, the optional head, the embedded sentence list and the optional bundled index
 * (assets/index/notes.lwxindex, written by lwx_edge.Index), plus per-step timings.
 */
final class DemoModel implements AutoCloseable {
    static final int TOP_K = 3;
    static final String INDEX_ASSET = "notes.lwxindex";

    /** What one query produced. Times in milliseconds. */
    static final class Result {
        int tokens;
        boolean truncated;
        String label;          // null without a head
        double labelProbability;
        final List<String> neighbours = new ArrayList<>();
        final List<Double> neighbourScores = new ArrayList<>();
        final List<VectorIndex.Hit> indexHits = new ArrayList<>();   // empty without an index
        final Map<String, Double> millis = new LinkedHashMap<>();
    }

    final Bundle bundle;
    final SentencePieceBpe tokenizer;
    final int maxLen;
    final Head head;               // may be null
    final String headWarning;      // why the head is missing or unusable, or null
    final List<String> sentences;
    final VectorIndex index;       // may be null
    final String indexWarning;     // why the index is missing or unusable, or null
    final Map<String, Double> loadMillis = new LinkedHashMap<>();
    private final ExecuTorchRuntime runtime;
    private final TextEmbedder embedder;
    private final CosineSearch search;

    private DemoModel(Context ctx) throws Exception {
        File root = new File(ctx.getFilesDir(), "lwx");
        long t = System.nanoTime();
        String stamp = Long.toString(ctx.getPackageManager().getPackageInfo(ctx.getPackageName(), 0).lastUpdateTime);
        File modelDir = copyAssetDir(ctx.getAssets(), "model", new File(root, "model"), stamp);
        File headDir = copyAssetDir(ctx.getAssets(), "head", new File(root, "head"), stamp);
        File indexDir = copyAssetDir(ctx.getAssets(), "index", new File(root, "index"), stamp);
        if (modelDir == null) {
            throw new IOException("the APK has no assets/model (build with -PlwxBundle=<bundle with model.int8.pte>)");
        }
        t = lap("copy assets", t);

        bundle = Bundle.open(modelDir.toPath());
        tokenizer = bundle.tokenizer();                 // sha256-verified, lwx-edge layout checked
        maxLen = bundle.maxLen(Bundle.PTE_INT8);
        String pte = bundle.file(Bundle.PTE_INT8).toString();   // sha256-verified
        t = lap("verify bundle + read tokenizer", t);

        runtime = new ExecuTorchRuntime(pte, 0);
        long programMaxLen = runtime.constant("get_max_seq_len");
        if (programMaxLen > 0 && programMaxLen < maxLen) {
            throw new IOException("model.int8.pte accepts " + programMaxLen + " tokens but the manifest says " + maxLen);
        }
        long programBatch = runtime.constant("get_max_batch");
        int maxBatch = (int) Math.max(1, programBatch > 0 ? programBatch : bundle.maxBatch(Bundle.PTE_INT8));
        embedder = new TextEmbedder(tokenizer, runtime, maxLen, maxBatch);
        t = lap("load model.int8.pte", t);

        Head h = null;
        String warn = null;
        if (headDir != null && new File(headDir, "head.json").isFile()) {
            h = Head.load(headDir.toPath());
            warn = h.encoderMismatch(bundle);
            if (warn != null) {
                h = null;
            }
        } else {
            warn = "no head bundled (build with -PlwxHead=DIR, a head from lwx-edge fit)";
        }
        head = h;
        headWarning = warn;
        t = lap("load head", t);

        sentences = readSentences(ctx.getAssets());
        float[][] vectors = embedder.embed(sentences);
        search = new CosineSearch(vectors);
        t = lap("embed " + sentences.size() + " sentences", t);

        VectorIndex ix = null;
        String iw = null;
        File indexFile = indexDir == null ? null : new File(indexDir, INDEX_ASSET);
        if (indexFile != null && indexFile.isFile()) {
            ix = readIndex(indexFile);
            iw = ix.encoderMismatch(bundle, Bundle.PTE_INT8);   // vectors of another encoder: refused
            if (iw != null) {
                ix = null;
            }
        } else {
            iw = "no index bundled (build with -PlwxIndex=FILE.lwxindex, see README)";
        }
        index = ix;
        indexWarning = iw;
        lap("open index" + (ix != null ? " (" + ix.size() + " items)" : ""), t);
    }

    /** The index file through Android's SQLite (read-only); all checks are VectorIndex.fromRows's. */
    private static VectorIndex readIndex(File file) throws IOException {
        Map<String, String> meta = new LinkedHashMap<>();
        VectorIndex.Rows rows = new VectorIndex.Rows();
        try (SQLiteDatabase db = SQLiteDatabase.openDatabase(file.getPath(), null, SQLiteDatabase.OPEN_READONLY)) {
            try (Cursor c = db.rawQuery(VectorIndex.META_SQL, null)) {
                while (c.moveToNext()) {
                    meta.put(c.getString(0), c.getString(1));
                }
            }
            try (Cursor c = db.rawQuery(VectorIndex.ITEMS_SQL, null)) {
                while (c.moveToNext()) {   // an integer id reads as its decimal text, as in VectorIndex.open
                    rows.add(c.getLong(0), c.getString(1), c.isNull(2) ? null : c.getString(2), c.getBlob(3),
                            c.getDouble(4));
                }
            }
        } catch (SQLiteException e) {
            throw new IOException(file + ": not an lwx-edge index, or damaged (" + e.getMessage() + ")", e);
        }
        return VectorIndex.fromRows(file.getPath(), meta, rows);
    }

    static DemoModel load(Context ctx) throws Exception {
        return new DemoModel(ctx);
    }

    private long lap(String what, long since) {
        long now = System.nanoTime();
        loadMillis.put(what, (now - since) / 1e6);
        return now;
    }

    Result query(String text) throws Exception {
        Result r = new Result();
        long t0 = System.nanoTime();
        SentencePieceBpe.Encoding enc = tokenizer.encode(text, maxLen);   // IllegalArgumentException if empty
        long t1 = System.nanoTime();
        float[] e = TextEmbedder.embedIds(runtime, new int[][] {enc.ids}, 1)[0];
        long t2 = System.nanoTime();
        if (head != null) {
            double[] p = head.predictProba(e);
            int best = 0;
            for (int k = 1; k < p.length; k++) {
                if (p[k] > p[best]) {
                    best = k;
                }
            }
            r.label = head.classes().get(best);
            r.labelProbability = p[best];
        }
        long t3 = System.nanoTime();
        for (CosineSearch.Hit hit : search.search(e, TOP_K)) {
            r.neighbours.add(sentences.get(hit.index));
            r.neighbourScores.add(hit.score);
        }
        long t4 = System.nanoTime();
        if (index != null) {
            r.indexHits.addAll(index.search(e, TOP_K));
        }
        long t5 = System.nanoTime();
        r.tokens = enc.ids.length;
        r.truncated = enc.truncated;
        r.millis.put("tokenize", (t1 - t0) / 1e6);
        r.millis.put("encoder (ExecuTorch)", (t2 - t1) / 1e6);
        r.millis.put("head", (t3 - t2) / 1e6);
        r.millis.put("search (" + sentences.size() + ")", (t4 - t3) / 1e6);
        if (index != null) {
            r.millis.put("index search (" + index.size() + ")", (t5 - t4) / 1e6);
        }
        r.millis.put("total", (t5 - t0) / 1e6);
        return r;
    }

    @Override
    public void close() {
        runtime.close();
    }

    // ---------------------------------------------------------------------------------------- assets

    /**
     * Copies assets/NAME/* to dest (ExecuTorch loads a file path; the SDK's files are used as they are), once
     * per installed APK: {@code stamp} is the package's lastUpdateTime. Null if the asset folder is absent.
     */
    private static File copyAssetDir(AssetManager assets, String name, File dest, String stamp) throws IOException {
        String[] files = assets.list(name);
        if (files == null || files.length == 0) {
            return null;
        }
        File marker = new File(dest, ".copied-from-apk");
        if (marker.isFile() && new String(Files.readAllBytes(marker.toPath()), StandardCharsets.UTF_8).equals(stamp)) {
            return dest;
        }
        if (!dest.isDirectory() && !dest.mkdirs()) {
            throw new IOException("cannot create " + dest);
        }
        byte[] buf = new byte[1 << 16];
        for (String f : files) {
            File out = new File(dest, f);
            File tmp = new File(dest, f + ".tmp");
            try (InputStream in = assets.open(name + "/" + f); OutputStream o = Files.newOutputStream(tmp.toPath())) {
                int n;
                while ((n = in.read(buf)) > 0) {
                    o.write(buf, 0, n);
                }
            }
            if (!tmp.renameTo(out)) {
                throw new IOException("cannot write " + out);
            }
        }
        Files.write(marker.toPath(), stamp.getBytes(StandardCharsets.UTF_8));
        return dest;
    }

    private static List<String> readSentences(AssetManager assets) throws IOException {
        try (InputStream in = assets.open("sentences.txt")) {
            String all = new String(readAll(in), StandardCharsets.UTF_8);
            List<String> out = new ArrayList<>();
            for (String line : all.split("\n")) {
                String s = line.trim();
                if (!s.isEmpty() && !s.startsWith("#")) {
                    out.add(s);
                }
            }
            if (out.isEmpty()) {
                throw new IOException("assets/sentences.txt has no sentences");
            }
            return Collections.unmodifiableList(out);
        }
    }

    private static byte[] readAll(InputStream in) throws IOException {
        java.io.ByteArrayOutputStream o = new java.io.ByteArrayOutputStream();
        byte[] buf = new byte[1 << 14];
        int n;
        while ((n = in.read(buf)) > 0) {
            o.write(buf, 0, n);
        }
        return o.toByteArray();
    }

    static String describe(Map<String, Double> millis) {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, Double> e : millis.entrySet()) {
            b.append(String.format(java.util.Locale.ROOT, "%-30s %8.1f ms%n", e.getKey(), e.getValue()));
        }
        return b.toString();
    }
}
