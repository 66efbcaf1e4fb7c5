package ai.lwxedge.core;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Properties;
import java.util.Set;

/**
 * Reads an index file written by {@code lwx_edge.index.Index} (format {@code lwx-edge-index} version 1, one
 * SQLite file) and searches it exactly like Python's {@code Index.search} with a query vector: the query is
 * L2-normalised ({@code x / max(||x||, 1e-12)}), item {@code i} scores {@code scale[i] * dot(int8_row_i, query)}
 * accumulated in float, results are best first, equal scores in row (rowid) order, {@code k} is clipped to the
 * number of items. All rows are held in memory ({@code dim} bytes + a float per item).
 *
 * <p>Only {@link #open(Path)} uses SQLite, through plain {@code java.sql} JDBC (the tests use the xerial
 * sqlite-jdbc driver). On Android, run {@link #META_SQL} and {@link #ITEMS_SQL} with
 * {@code android.database.sqlite.SQLiteDatabase.openDatabase(path, null, OPEN_READONLY)} instead and hand the
 * results to {@link #fromRows}, which does all the checking.
 */
public final class VectorIndex {
    public static final String FORMAT = "lwx-edge-index";
    public static final int FORMAT_VERSION = 1;
    /** The meta table: (key, value) text pairs. */
    public static final String META_SQL = "SELECT key, value FROM meta";
    /** The items in the order search ties follow: id (text or integer, read as text), text, int8 blob, scale. */
    public static final String ITEMS_SQL = "SELECT rowid, id, text, vector, scale FROM items ORDER BY rowid";

    /** One result: the item's id (an integer id as its decimal text), cosine score and stored text (or null). */
    public static final class Hit {
        public final String id;
        public final float score;
        public final String text;

        Hit(String id, float score, String text) {
            this.id = id;
            this.score = score;
            this.text = text;
        }

        @Override
        public String toString() {
            return id + ":" + score;
        }
    }

    /** The items table as read by any SQLite API, in rowid order; {@link #fromRows} checks it. */
    public static final class Rows {
        final List<Long> rowids = new ArrayList<>();
        final List<String> ids = new ArrayList<>();
        final List<String> texts = new ArrayList<>();
        final List<byte[]> vectors = new ArrayList<>();
        final List<Double> scales = new ArrayList<>();

        public Rows add(long rowid, String id, String text, byte[] vector, double scale) {
            rowids.add(rowid);
            ids.add(id);
            texts.add(text);
            vectors.add(vector);
            scales.add(scale);
            return this;
        }

        public int size() {
            return ids.size();
        }
    }

    private final String source;
    private final Map<String, String> meta;
    private final Map<String, Object> encoder;
    private final int dim;
    private final String[] ids;
    private final String[] texts;
    private final byte[] vectors; // n * dim, row-major
    private final float[] scales;

    private VectorIndex(String source, Map<String, String> meta, Map<String, Object> encoder, int dim, String[] ids,
                        String[] texts, byte[] vectors, float[] scales) {
        this.source = source;
        this.meta = meta;
        this.encoder = encoder;
        this.dim = dim;
        this.ids = ids;
        this.texts = texts;
        this.vectors = vectors;
        this.scales = scales;
    }

    /** Opens an index file read-only through JDBC ({@code jdbc:sqlite:PATH}) and loads all of its items. */
    public static VectorIndex open(Path path) throws IOException {
        if (!Files.isRegularFile(path)) {
            throw new IOException(path + ": no such index file");
        }
        byte[] head = new byte[16];
        int got;
        try (InputStream in = Files.newInputStream(path)) {
            got = in.readNBytes(head, 0, head.length);
        }
        if (got != 16 || !new String(head, StandardCharsets.ISO_8859_1).equals("SQLite format 3\u0000")) {
            throw new IOException(path + ": not an lwx-edge index (not an SQLite file)");
        }
        String url = "jdbc:sqlite:" + path;
        try {
            DriverManager.getDriver(url);
        } catch (SQLException e) {
            throw new IOException("no SQLite JDBC driver on the classpath to read " + path
                    + " (xerial sqlite-jdbc; Debian: apt-get install libxerial-sqlite-jdbc-java)", e);
        }
        Properties props = new Properties();
        props.setProperty("open_mode", "1"); // SQLITE_OPEN_READONLY (xerial's name; other drivers ignore it)
        Map<String, String> meta = new LinkedHashMap<>();
        Rows rows = new Rows();
        try (Connection conn = DriverManager.getConnection(url, props); Statement st = conn.createStatement()) {
            try (ResultSet rs = st.executeQuery(META_SQL)) {
                while (rs.next()) {
                    meta.put(rs.getString(1), rs.getString(2));
                }
            }
            checkMeta(path.toString(), meta); // before reading items: a clear error for another format
            try (ResultSet rs = st.executeQuery(ITEMS_SQL)) {
                while (rs.next()) {
                    rows.add(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getBytes(4), rs.getDouble(5));
                }
            }
        } catch (SQLException e) {
            throw new IOException(path + ": not an lwx-edge index, or damaged (" + e.getMessage() + ")", e);
        }
        return fromRows(path.toString(), meta, rows);
    }

    /**
     * An index from its two tables as read elsewhere (e.g. {@code android.database.sqlite}): {@code meta} from
     * {@link #META_SQL}, {@code rows} from {@link #ITEMS_SQL} in that order. {@code source} names the file in
     * error messages.
     */
    public static VectorIndex fromRows(String source, Map<String, String> meta, Rows rows) throws IOException {
        int dim = checkMeta(source, meta);
        Map<String, Object> encoder;
        try {
            encoder = Json.obj(Json.parse(meta.get("encoder")), "encoder");
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IOException(source + ": the index's meta table is damaged (encoder: " + e.getMessage() + ")", e);
        }
        int n = rows.size();
        String[] ids = new String[n];
        String[] texts = new String[n];
        byte[] vectors = new byte[Math.multiplyExact(n, dim)];
        float[] scales = new float[n];
        for (int r = 0; r < n; r++) {
            byte[] v = rows.vectors.get(r);
            String id = rows.ids.get(r);
            if (id == null) {
                throw new IOException(source + ": item rowid " + rows.rowids.get(r) + " has no id; the file is damaged");
            }
            if (v == null || v.length != dim) {
                throw new IOException(source + ": item " + id + " (rowid " + rows.rowids.get(r) + ") has a "
                        + (v == null ? 0 : v.length) + "-byte vector (the index stores " + dim + "); the file is damaged");
            }
            double s = rows.scales.get(r);
            if (!Double.isFinite(s)) {
                throw new IOException(source + ": item " + id + " has scale " + s + "; the file is damaged");
            }
            ids[r] = id;
            texts[r] = rows.texts.get(r);
            System.arraycopy(v, 0, vectors, r * dim, dim);
            scales[r] = (float) s; // written from a float32, so exact
        }
        return new VectorIndex(source, Collections.unmodifiableMap(new LinkedHashMap<>(meta)), encoder, dim, ids, texts,
                vectors, scales);
    }

    /** Checks format, version, storage and dimension; returns the dimension. */
    private static int checkMeta(String source, Map<String, String> meta) throws IOException {
        String format = meta.get("format");
        if (!FORMAT.equals(format)) {
            throw new IOException(source + ": not an lwx-edge index (format " + (format == null ? "missing" : "'" + format + "'") + ")");
        }
        String version = meta.get("format_version");
        if (!Integer.toString(FORMAT_VERSION).equals(version)) {
            throw new IOException(source + ": index format version " + version + " (this reader reads version "
                    + FORMAT_VERSION + ")");
        }
        String storage = meta.getOrDefault("storage", "int8");
        if (!"int8".equals(storage)) {
            throw new IOException(source + ": index storage '" + storage + "' (this reader reads int8)");
        }
        int dim;
        try {
            dim = Integer.parseInt(meta.get("dim"));
        } catch (NumberFormatException e) {
            dim = -1;
        }
        if (dim < 1) {
            throw new IOException(source + ": the index's meta table is damaged (dim " + meta.get("dim") + ")");
        }
        return dim;
    }

    public int size() {
        return ids.length;
    }

    public int dim() {
        return dim;
    }

    public String source() {
        return source;
    }

    /** The meta table as stored (text values; {@code encoder} and {@code text_contract} are JSON). */
    public Map<String, String> meta() {
        return meta;
    }

    /** The sha256 of the model that made the vectors ({@code encoder.sha256} in the meta table), or null. */
    public String encoderSha256() {
        Object s = encoder.get("sha256");
        return s instanceof String ? (String) s : null;
    }

    /**
     * Null if the vectors of this index were made by the encoder that runs {@code artifact} of {@code bundle}
     * (e.g. {@link Bundle#PTE_INT8}), else why not; the check of Python's {@code Index.open(path, encoder)}:
     * the artifact's sha256 is one of the model files the index records, and tokenizer and embedding size agree.
     * Scores against vectors of another encoder mean nothing, so the app refuses such an index.
     */
    public String encoderMismatch(Bundle bundle, String artifact) {
        Set<Object> ours = new HashSet<>();
        if (encoder.get("model_files") instanceof Map) {
            ours.addAll(Json.obj(encoder.get("model_files"), "model_files").values());
        }
        ours.add(encoder.get("sha256"));
        ours.remove(null);
        String running = bundle.fileSha256(artifact);
        String what = null;
        if (running == null || !ours.contains(running)) {
            what = "model differs";
        } else if (encoder.get("tokenizer_sha256") instanceof String
                && !encoder.get("tokenizer_sha256").equals(bundle.fileSha256(Bundle.TOKENIZER))) {
            what = "tokenizer differs";
        } else if (bundle.embeddingDim() != null && bundle.embeddingDim() != dim) {
            what = "embedding size differs: " + dim + " vs " + bundle.embeddingDim();
        }
        return what == null ? null : source + ": the index was built by another encoder (" + what + "); rebuild it "
                + "with this bundle (lwx-edge index add INDEX --input ITEMS --model BUNDLE)";
    }

    public String id(int row) {
        return ids[row];
    }

    public String text(int row) {
        return texts[row];
    }

    /** Score of every item for {@code query} (need not be normalised), in row order. */
    public float[] scores(float[] query) {
        if (query.length != dim) {
            throw new IllegalArgumentException("query vector has " + query.length + " dimensions, the index " + dim);
        }
        double n = 0;
        for (float x : query) {
            if (!Float.isFinite(x)) {
                throw new IllegalArgumentException("query contains NaN or infinite values");
            }
            n += (double) x * x;
        }
        float norm = (float) Math.max(Math.sqrt(n), 1e-12);
        float[] q = new float[dim];
        for (int k = 0; k < dim; k++) {
            q[k] = query[k] / norm;
        }
        float[] s = new float[ids.length];
        for (int r = 0, off = 0; r < ids.length; r++, off += dim) {
            float acc = 0f;
            for (int k = 0; k < dim; k++) {
                acc += vectors[off + k] * q[k];
            }
            s[r] = scales[r] * acc;
        }
        return s;
    }

    /** The {@code topK} items nearest to {@code query}, best first; equal scores: lower row first. */
    public List<Hit> search(float[] query, int topK) {
        if (topK < 1) {
            throw new IllegalArgumentException("top_k must be a positive integer, got " + topK);
        }
        float[] s = scores(query);
        int k = Math.min(topK, s.length);
        // bounded heap whose head is the worst kept hit (lowest score, then highest row)
        PriorityQueue<Integer> heap = new PriorityQueue<>(k + 1, (a, b) -> {
            int c = compare(s[a], s[b]);
            return c != 0 ? c : Integer.compare(b, a);
        });
        for (int r = 0; r < s.length && k > 0; r++) {
            if (heap.size() < k) {
                heap.add(r);
            } else if (s[r] > s[heap.peek()]) { // equal score: the kept one has the lower row
                heap.poll();
                heap.add(r);
            }
        }
        Integer[] idx = heap.toArray(new Integer[0]);
        Arrays.sort(idx, (a, b) -> {
            int c = compare(s[b], s[a]);
            return c != 0 ? c : Integer.compare(a, b);
        });
        List<Hit> out = new ArrayList<>(idx.length);
        for (int r : idx) {
            out.add(new Hit(ids[r], s[r], texts[r]));
        }
        return out;
    }

    /** Numeric order with 0.0 == -0.0, as numpy compares (scores are never NaN). */
    private static int compare(float a, float b) {
        return a < b ? -1 : a > b ? 1 : 0;
    }
}
