package ai.lwxedge.core;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * An lwx-edge model bundle directory ({@code lwx_edge.bundle}): {@code manifest.json} lists every file with
 * its sha256 and size; {@code config.json} holds the model section ({@code max_len}, {@code d_model}, ...);
 * {@code manifest.artifacts} describes exported models ({@code model.int8.pte}: max_len, max_batch, ...).
 *
 * <p>Like {@code Encoder.load(verify=True)}, only the files actually used are hashed, each once, when first
 * asked for with {@link #file(String)} (config.json when the bundle is opened). A file listed in the manifest
 * may be absent as long as it is never used (the parity fixtures carry only config + tokenizer).
 */
public final class Bundle {
    public static final String FORMAT = "lwx-edge-bundle";
    /** Bundle format versions this reads (lwx_edge.bundle: 2 records the text contract in config.json). */
    public static final int FORMAT_VERSION = 2, OLDEST_FORMAT_VERSION = 1;
    public static final String CONFIG = "config.json";
    public static final String MANIFEST = "manifest.json";
    public static final String TOKENIZER = "tokenizer.model";
    public static final String PTE_INT8 = "model.int8.pte";
    /** Model files an encoder may be identified by (lwx_edge.encoder.ARTIFACTS). */
    public static final String[] MODEL_FILES = {"model.int8.onnx", "model.onnx", "model.int8.pte", "model.pte",
            "model.safetensors"};

    private final Path root;
    private final Map<String, Object> manifest;
    private final Map<String, Object> files;
    private final Map<String, Object> config;
    private final Set<String> verified = Collections.synchronizedSet(new HashSet<>());
    private final boolean verify;

    private Bundle(Path root, Map<String, Object> manifest, boolean verify) throws IOException {
        this.root = root;
        this.manifest = manifest;
        this.verify = verify;
        if (!FORMAT.equals(manifest.get("format"))) {
            throw new IOException(root + ": manifest.json is not an lwx-edge bundle manifest");
        }
        Object fv = manifest.get("format_version");
        if (!(fv instanceof Long) || (Long) fv < OLDEST_FORMAT_VERSION || (Long) fv > FORMAT_VERSION) {
            throw new IOException(root + ": bundle format version " + fv + " is not supported (this reads versions "
                    + OLDEST_FORMAT_VERSION + " to " + FORMAT_VERSION + ")");
        }
        if (!(manifest.get("files") instanceof Map)) {
            throw new IOException(root + ": manifest.json has no file list");
        }
        files = Json.obj(manifest.get("files"), "files");
        for (String required : new String[] {CONFIG, TOKENIZER}) {
            if (!files.containsKey(required)) {
                throw new IOException(root + ": bundle has no " + required);
            }
        }
        config = Json.readObject(file(CONFIG));
        if (!(config.get("model") instanceof Map)) {
            throw new IOException(root + ": config.json has no 'model' section");
        }
    }

    /** Opens a bundle, verifying the sha256 and size of each file when it is first used. */
    public static Bundle open(Path dir) throws IOException {
        return open(dir, true);
    }

    public static Bundle open(Path dir, boolean verify) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IOException(dir + ": no such bundle directory");
        }
        Path m = dir.resolve(MANIFEST);
        if (!Files.isRegularFile(m)) {
            throw new IOException(dir + ": not a model bundle (manifest.json is missing)");
        }
        return new Bundle(dir, Json.readObject(m), verify);
    }

    public Path path() {
        return root;
    }

    public Map<String, Object> manifest() {
        return manifest;
    }

    public Map<String, Object> config() {
        return config;
    }

    public boolean has(String name) {
        return files.containsKey(name);
    }

    /** sha256 the manifest records for {@code name}, or null. */
    public String fileSha256(String name) {
        Object e = files.get(name);
        if (e instanceof Map && Json.obj(e, name).get("sha256") instanceof String) {
            return (String) Json.obj(e, name).get("sha256");
        }
        return null;
    }

    /** sha256 of the bundle's model files (those of {@link #MODEL_FILES} it lists). */
    public Map<String, String> modelFileHashes() {
        Map<String, String> m = new LinkedHashMap<>();
        for (String n : MODEL_FILES) {
            String h = fileSha256(n);
            if (h != null) {
                m.put(n, h);
            }
        }
        return m;
    }

    /** Path of a listed file, checked (present, size and sha256 as in the manifest) the first time. */
    public Path file(String name) throws IOException {
        Object entry = files.get(name);
        if (!(entry instanceof Map)) {
            throw new IOException(root + ": bundle has no " + name);
        }
        Path p = root.resolve(name);
        if (!Files.isRegularFile(p)) {
            throw new IOException(root + ": " + name + " is listed in the manifest but missing");
        }
        if (verify && !verified.contains(name)) {
            Map<String, Object> e = Json.obj(entry, name);
            long size = Files.size(p);
            Object want = e.get("bytes");
            if (want instanceof Long && (Long) want != size) {
                throw new IOException(root + ": " + name + " is truncated or changed (" + size
                        + " bytes, manifest says " + want + ")");
            }
            if (!sha256(p).equals(e.get("sha256"))) {
                throw new IOException(root + ": " + name + " is corrupt (sha256 does not match the manifest)");
            }
            verified.add(name);
        }
        return p;
    }

    /** The bundle's tokenizer, verified and checked for the lwx-edge layout. */
    public SentencePieceBpe tokenizer() throws IOException {
        SentencePieceBpe sp = SentencePieceBpe.load(file(TOKENIZER));
        try {
            sp.checkLwxLayout();
        } catch (IllegalArgumentException e) {
            throw new IOException(root + ": " + e.getMessage(), e);
        }
        Object vocab = Json.obj(config.get("model"), "model").get("vocab_size");
        if (vocab instanceof Long && sp.vocabSize() > (Long) vocab) {
            throw new IOException(root + ": tokenizer.model has " + sp.vocabSize() + " pieces but the model's vocabulary is "
                    + vocab + ": tokenizer and model do not belong together");
        }
        return sp;
    }

    private Map<String, Object> artifact(String name) {
        Object arts = manifest.get("artifacts");
        if (arts instanceof Map) {
            Object a = Json.obj(arts, "artifacts").get(name);
            if (a instanceof Map) {
                return Json.obj(a, name);
            }
        }
        return Collections.emptyMap();
    }

    /** Max tokens per text for {@code artifact} (its manifest entry's max_len, else config.model.max_len). */
    public int maxLen(String artifact) throws IOException {
        Object v = artifact == null ? null : artifact(artifact).get("max_len");
        if (!(v instanceof Long) || (Long) v < 1) {
            v = Json.obj(config.get("model"), "model").get("max_len");
        }
        if (!(v instanceof Long) || (Long) v < 1) {
            throw new IOException(root + ": config.json has no valid model.max_len");
        }
        return (int) (long) (Long) v;
    }

    /** Largest batch the exported program accepts (manifest artifacts[name].max_batch), or 1. */
    public int maxBatch(String artifact) {
        Object v = artifact(artifact).get("max_batch");
        return v instanceof Long && (Long) v >= 1 ? (int) (long) (Long) v : 1;
    }

    /** config.embedding_dim or config.model.d_model, or null. */
    public Integer embeddingDim() {
        Object d = config.get("embedding_dim");
        if (!(d instanceof Long)) {
            d = Json.obj(config.get("model"), "model").get("d_model");
        }
        return d instanceof Long ? (int) (long) (Long) d : null;
    }

    // ------------------------------------------------------------------------------------------ hashing

    public static String sha256(Path p) throws IOException {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        try (InputStream in = Files.newInputStream(p)) {
            byte[] buf = new byte[1 << 20];
            int n;
            while ((n = in.read(buf)) > 0) {
                md.update(buf, 0, n);
            }
        }
        return hex(md.digest());
    }

    static String hex(byte[] d) {
        StringBuilder b = new StringBuilder(d.length * 2);
        for (byte x : d) {
            b.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return b.toString();
    }
}
