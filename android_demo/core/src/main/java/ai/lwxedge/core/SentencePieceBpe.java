package ai.lwxedge.core;

import java.io.IOException;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * A dependency-free reimplementation of SentencePiece BPE encoding, reading {@code tokenizer.model} (the
 * serialized {@code sentencepiece.ModelProto}) directly, and of {@code lwx_edge.tokenizer.Tokenizer.encode}.
 *
 * <p>It follows SentencePiece's C++ code path ({@code SentencePieceProcessor::Encode}):
 * <ol>
 *   <li>{@code Normalizer::Normalize}: the model's precompiled character map (a Darts double-array trie plus
 *       replacement strings, e.g. {@code nmt_nfkc}) applied longest-match-first, leading/trailing/repeated
 *       spaces removed, spaces escaped to U+2581, a dummy U+2581 prefix;</li>
 *   <li>{@code bpe::Model::SampleEncode} (no dropout): the text is split into UTF-8 characters (user-defined
 *       symbols kept whole), then adjacent symbols are merged greedily, always the pair whose concatenation is
 *       the vocabulary piece with the highest score, the leftmost pair among equal scores; merges into
 *       UNUSED pieces are undone afterwards;</li>
 *   <li>{@code PopulateSentencePieceText}: characters that are not in the vocabulary become {@code <unk>},
 *       consecutive unknown pieces are merged into one {@code <unk>} (or, with {@code byte_fallback}, each is
 *       spelled as {@code <0xXX>} byte pieces).</li>
 * </ol>
 * On top of that, {@link #encode(String, int)} applies {@link TextNormalizer#normalize} first and keeps the
 * first {@code maxLen} ids, exactly like the Python SDK. No BOS/EOS ids are added (the lwx-edge layout is
 * pad = 0, unk = 1, {@code <mask>} = 2, a control symbol).
 */
public final class SentencePieceBpe {
    public static final int PAD_ID = 0;
    public static final int UNK_ID = 1;
    public static final int MASK_ID = 2;
    public static final String MASK_PIECE = "<mask>";

    /** ModelProto.SentencePiece.Type */
    public static final int NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6;
    /** TrainerSpec.ModelType */
    public static final int MODEL_UNIGRAM = 1, MODEL_BPE = 2, MODEL_WORD = 3, MODEL_CHAR = 4;

    private static final byte[] SPACE_SYMBOL = "\u2581".getBytes(StandardCharsets.UTF_8);
    private static final int MAX_TRIE_RESULTS = 32; // Normalizer::kMaxTrieResultsSize

    /** Result of {@link #encode(String, int)}: ids after truncation, and the count before it. */
    public static final class Encoding {
        public final int[] ids;
        public final boolean truncated;
        public final int lengthBefore;

        Encoding(int[] ids, boolean truncated, int lengthBefore) {
            this.ids = ids;
            this.truncated = truncated;
            this.lengthBefore = lengthBefore;
        }
    }

    // ---------------------------------------------------------------------------------------- model data
    private final String[] pieces;      // as Java strings (for display / idToPiece)
    private final float[] scores;
    private final int[] types;
    private final Map<String, Integer> normalPieces = new HashMap<>();   // key: UTF-8 bytes as ISO-8859-1
    private final Map<String, Integer> reservedPieces = new HashMap<>();
    private final List<String> userDefined = new ArrayList<>();          // same byte-string keys
    private int maxUserDefinedBytes = 0;
    private final int unkId;
    private final int modelType;
    private final boolean byteFallback;
    private final boolean treatWhitespaceAsSuffix;
    private final int trainerUnkId, trainerBosId, trainerEosId, trainerPadId;
    // normalizer spec
    private final String normalizerName;
    private final boolean addDummyPrefix, removeExtraWhitespaces, escapeWhitespaces;
    private final int[] trie;          // Darts-clone double-array units (uint32)
    private final byte[] trieStrings;  // NUL-terminated replacement strings
    private final int[] byteToId = new int[256];

    // ---------------------------------------------------------------------------------------- loading

    /** Reads a SentencePiece {@code .model} file. */
    public static SentencePieceBpe load(Path path) throws IOException {
        byte[] b = Files.readAllBytes(path);
        try {
            return new SentencePieceBpe(b);
        } catch (IllegalArgumentException e) {
            throw new IOException(path + ": not a usable SentencePiece model (" + e.getMessage() + ")", e);
        }
    }

    /** Parses a serialized ModelProto. Throws IllegalArgumentException for a corrupt/unsupported model. */
    public SentencePieceBpe(byte[] modelProto) {
        List<String> ps = new ArrayList<>();
        List<Float> sc = new ArrayList<>();
        List<Integer> ty = new ArrayList<>();
        byte[] trainer = null, normalizer = null;
        Proto r = new Proto(modelProto, 0, modelProto.length);
        while (r.more()) {
            int tag = r.tag();
            int field = tag >>> 3;
            if (field == 1 && (tag & 7) == 2) {
                Proto p = r.sub();
                String piece = null;
                float score = 0f;
                int type = NORMAL;
                while (p.more()) {
                    int t = p.tag();
                    int f = t >>> 3;
                    if (f == 1 && (t & 7) == 2) {
                        piece = new String(p.bytes(), StandardCharsets.UTF_8);
                    } else if (f == 2 && (t & 7) == 5) {
                        score = Float.intBitsToFloat(p.fixed32());
                    } else if (f == 3 && (t & 7) == 0) {
                        type = (int) p.varint();
                    } else {
                        p.skip(t);
                    }
                }
                if (piece == null || piece.isEmpty()) {
                    throw new IllegalArgumentException("piece " + ps.size() + " is empty");
                }
                ps.add(piece);
                sc.add(score);
                ty.add(type);
            } else if (field == 2 && (tag & 7) == 2) {
                trainer = r.bytes();
            } else if (field == 3 && (tag & 7) == 2) {
                normalizer = r.bytes();
            } else {
                r.skip(tag);
            }
        }
        if (ps.isEmpty()) {
            throw new IllegalArgumentException("no pieces");
        }
        // TrainerSpec
        int mt = MODEL_UNIGRAM;
        boolean bf = false, suffix = false;
        int tUnk = 0, tBos = 1, tEos = 2, tPad = -1;
        if (trainer != null) {
            Proto t = new Proto(trainer, 0, trainer.length);
            while (t.more()) {
                int tag = t.tag();
                int f = tag >>> 3;
                if ((tag & 7) != 0) {
                    t.skip(tag);
                    continue;
                }
                long v = t.varint();
                switch (f) {
                    case 3: mt = (int) v; break;
                    case 24: suffix = v != 0; break;
                    case 35: bf = v != 0; break;
                    case 40: tUnk = (int) v; break;
                    case 41: tBos = (int) v; break;
                    case 42: tEos = (int) v; break;
                    case 43: tPad = (int) v; break;
                    default: break;
                }
            }
        }
        modelType = mt;
        byteFallback = bf;
        treatWhitespaceAsSuffix = suffix;
        trainerUnkId = tUnk;
        trainerBosId = tBos;
        trainerEosId = tEos;
        trainerPadId = tPad;
        if (modelType != MODEL_BPE) {
            throw new IllegalArgumentException("model_type " + modelType + " is not BPE (2); only BPE is supported");
        }
        // NormalizerSpec
        String name = "";
        byte[] charsmap = new byte[0];
        boolean dummy = true, removeWs = true, escapeWs = true;
        if (normalizer != null) {
            Proto n = new Proto(normalizer, 0, normalizer.length);
            while (n.more()) {
                int tag = n.tag();
                int f = tag >>> 3;
                if (f == 1 && (tag & 7) == 2) {
                    name = new String(n.bytes(), StandardCharsets.UTF_8);
                } else if (f == 2 && (tag & 7) == 2) {
                    charsmap = n.bytes();
                } else if (f == 3 && (tag & 7) == 0) {
                    dummy = n.varint() != 0;
                } else if (f == 4 && (tag & 7) == 0) {
                    removeWs = n.varint() != 0;
                } else if (f == 5 && (tag & 7) == 0) {
                    escapeWs = n.varint() != 0;
                } else {
                    n.skip(tag);
                }
            }
        }
        normalizerName = name;
        addDummyPrefix = dummy;
        removeExtraWhitespaces = removeWs;
        escapeWhitespaces = escapeWs;
        if (charsmap.length > 0) {
            // <trie size (uint32 LE)><double array trie><normalized strings>
            if (charsmap.length <= 4) {
                throw new IllegalArgumentException("precompiled_charsmap is broken");
            }
            long trieSize = (charsmap[0] & 0xffL) | (charsmap[1] & 0xffL) << 8 | (charsmap[2] & 0xffL) << 16
                    | (charsmap[3] & 0xffL) << 24;
            if (trieSize >= charsmap.length || trieSize % 4 != 0) {
                throw new IllegalArgumentException("precompiled_charsmap trie size exceeds the blob");
            }
            trie = new int[(int) (trieSize / 4)];
            for (int k = 0; k < trie.length; k++) {
                int o = 4 + 4 * k;
                trie[k] = (charsmap[o] & 0xff) | (charsmap[o + 1] & 0xff) << 8 | (charsmap[o + 2] & 0xff) << 16
                        | (charsmap[o + 3] & 0xff) << 24;
            }
            trieStrings = Arrays.copyOfRange(charsmap, 4 + (int) trieSize, charsmap.length);
        } else {
            trie = null;
            trieStrings = null;
        }
        // pieces (ModelInterface::InitializePieces)
        int n = ps.size();
        pieces = ps.toArray(new String[0]);
        scores = new float[n];
        types = new int[n];
        int unk = -1;
        Arrays.fill(byteToId, -1);
        for (int k = 0; k < n; k++) {
            scores[k] = sc.get(k);
            types[k] = ty.get(k);
            String key = key(pieces[k]);
            boolean normal = types[k] == NORMAL || types[k] == USER_DEFINED || types[k] == UNUSED;
            Map<String, Integer> target = normal ? normalPieces : reservedPieces;
            if (target.putIfAbsent(key, k) != null) {
                throw new IllegalArgumentException(pieces[k] + " is already defined");
            }
            if (types[k] == USER_DEFINED) {
                userDefined.add(key);
                maxUserDefinedBytes = Math.max(maxUserDefinedBytes, key.length());
            }
            if (types[k] == UNKNOWN) {
                if (unk >= 0) {
                    throw new IllegalArgumentException("unk is already defined");
                }
                unk = k;
            }
            if (types[k] == BYTE) {
                if (!byteFallback) {
                    throw new IllegalArgumentException("byte piece " + pieces[k] + " although byte_fallback is false");
                }
                int b = pieceToByte(pieces[k]);
                if (b < 0) {
                    throw new IllegalArgumentException("byte piece " + pieces[k] + " is invalid");
                }
                byteToId[b] = k;
            }
        }
        if (unk < 0) {
            throw new IllegalArgumentException("unk is not defined");
        }
        unkId = unk;
        if (byteFallback) {
            for (int b = 0; b < 256; b++) {
                if (byteToId[b] < 0) {
                    throw new IllegalArgumentException("byte_fallback is true but byte piece " + b + " is missing");
                }
            }
        }
    }

    /**
     * Checks the lwx-edge layout ({@code lwx_edge.tokenizer._check_layout}): pad = 0, unk = 1, id 2 the control
     * symbol {@code <mask>}, no BOS/EOS. Throws IllegalArgumentException naming every problem.
     */
    public SentencePieceBpe checkLwxLayout() {
        List<String> problems = new ArrayList<>();
        if (trainerPadId != PAD_ID) {
            problems.add("pad id is " + trainerPadId + ", expected " + PAD_ID);
        }
        if (unkId != UNK_ID || trainerUnkId != UNK_ID) {
            problems.add("unk id is " + unkId + ", expected " + UNK_ID);
        }
        if (pieces.length <= MASK_ID || !MASK_PIECE.equals(pieces[MASK_ID]) || types[MASK_ID] != CONTROL) {
            problems.add("id " + MASK_ID + " is not the control symbol " + MASK_PIECE);
        }
        if (trainerBosId >= 0 || trainerEosId >= 0) {
            problems.add("BOS/EOS must be disabled");
        }
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException("not an lwx-edge tokenizer: " + String.join("; ", problems));
        }
        return this;
    }

    private static int pieceToByte(String piece) {
        if (piece.length() == 6 && piece.startsWith("<0x") && piece.endsWith(">")) {
            try {
                return Integer.parseInt(piece.substring(3, 5), 16);
            } catch (NumberFormatException e) {
                return -1;
            }
        }
        return -1;
    }

    /** UTF-8 bytes of {@code s} as a one-char-per-byte string (hash key for byte slices). */
    private static String key(String s) {
        return new String(s.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1);
    }

    // ---------------------------------------------------------------------------------------- vocabulary

    public int vocabSize() {
        return pieces.length;
    }

    public String idToPiece(int id) {
        if (id < 0 || id >= pieces.length) {
            throw new IllegalArgumentException("token id " + id + " is outside the vocabulary [0, " + pieces.length + ")");
        }
        return pieces[id];
    }

    public float score(int id) {
        return scores[id];
    }

    public int type(int id) {
        return types[id];
    }

    /** Id of a piece; the unk id if it is not in the vocabulary (ModelInterface::PieceToId). */
    public int pieceToId(String piece) {
        return pieceToIdKey(key(piece));
    }

    private int pieceToIdKey(String k) {
        Integer r = reservedPieces.get(k);
        if (r != null) {
            return r;
        }
        Integer p = normalPieces.get(k);
        return p != null ? p : unkId;
    }

    public int unkId() {
        return unkId;
    }

    public String normalizerName() {
        return normalizerName;
    }

    public boolean byteFallback() {
        return byteFallback;
    }

    // ---------------------------------------------------------------------------------------- lwx-edge API

    /**
     * {@code Tokenizer(model, max_len).encode([text])} for one text: {@link TextNormalizer#normalize}, SentencePiece
     * ids, head kept at {@code maxLen}. Throws IllegalArgumentException (like the Python InputError) when the
     * text is empty/whitespace-only after normalisation or yields no tokens.
     */
    /** True when every code point is a control, format or separator character (Python: Cc, Cf, Zs, Zl, Zp). */
    static boolean invisibleOnly(String s) {
        return s.codePoints().allMatch(cp -> {
            int t = Character.getType(cp);
            return t == Character.CONTROL || t == Character.FORMAT || t == Character.SPACE_SEPARATOR
                    || t == Character.LINE_SEPARATOR || t == Character.PARAGRAPH_SEPARATOR;
        });
    }

    public Encoding encode(String text, int maxLen) {
        if (maxLen < 1) {
            throw new IllegalArgumentException("max_len must be a positive integer, got " + maxLen);
        }
        String norm = TextNormalizer.normalize(text, true);
        if (norm.isEmpty()) {
            throw new IllegalArgumentException("text is empty or whitespace-only");
        }
        if (invisibleOnly(norm)) {
            throw new IllegalArgumentException("text has no tokens after normalisation (only control or invisible characters)");
        }
        int[] ids = encodeRaw(norm);
        if (ids.length == 0) {
            throw new IllegalArgumentException("text has no tokens after normalisation");
        }
        if (ids.length > maxLen) {
            return new Encoding(Arrays.copyOf(ids, maxLen), true, ids.length);
        }
        return new Encoding(ids, false, ids.length);
    }

    /** SentencePiece's own {@code EncodeAsIds} of {@code text} (no lwx-edge normalisation, no truncation). */
    public int[] encodeRaw(String text) {
        for (int k = 0; k < text.length(); k++) {
            char c = text.charAt(k);
            if (Character.isSurrogate(c)) {
                if (Character.isHighSurrogate(c) && k + 1 < text.length() && Character.isLowSurrogate(text.charAt(k + 1))) {
                    k++;
                } else {
                    throw new IllegalArgumentException("text contains an unpaired surrogate at index " + k);
                }
            }
        }
        byte[] normalized = normalizeSp(text.getBytes(StandardCharsets.UTF_8));
        List<String> segments = new ArrayList<>();
        List<Integer> segIds = new ArrayList<>();
        bpe(normalized, segments, segIds);
        // PopulateSentencePieceText
        int[] out = new int[segIds.size() * (byteFallback ? 4 : 1)];
        int n = 0;
        boolean prevUnk = false;
        for (int k = 0; k < segIds.size(); k++) {
            int id = segIds.get(k);
            boolean isUnk = types[id] == UNKNOWN;
            if (types[id] == CONTROL) {
                out = ensure(out, n + 1);
                out[n++] = id;
            } else if (isUnk && byteFallback) {
                String w = segments.get(k);
                out = ensure(out, n + w.length());
                for (int b = 0; b < w.length(); b++) {
                    out[n++] = byteToId[w.charAt(b) & 0xff];
                }
            } else if (!(prevUnk && isUnk)) {  // consecutive unknown pieces are merged into one
                out = ensure(out, n + 1);
                out[n++] = id;
            }
            prevUnk = isUnk;
        }
        return Arrays.copyOf(out, n);
    }

    private static int[] ensure(int[] a, int size) {
        return size <= a.length ? a : Arrays.copyOf(a, Math.max(size, a.length * 2));
    }

    // ---------------------------------------------------------------------------------------- normalizer

    /** string_util::OneCharLen */
    private static int oneCharLen(byte b) {
        int hi = (b & 0xff) >>> 4;
        if (hi < 12) {
            return 1;
        }
        return hi < 14 ? 2 : (hi == 14 ? 3 : 4);
    }

    /** PrefixMatcher::PrefixMatch over the user-defined symbols: {length, found ? 1 : 0}. */
    private int[] prefixMatch(byte[] in, int pos) {
        int rest = in.length - pos;
        if (!userDefined.isEmpty()) {
            int best = 0;
            for (String u : userDefined) {
                int len = u.length();
                if (len <= rest && len > best) {
                    boolean eq = true;
                    for (int k = 0; k < len; k++) {
                        if ((byte) u.charAt(k) != in[pos + k]) {
                            eq = false;
                            break;
                        }
                    }
                    if (eq) {
                        best = len;
                    }
                }
            }
            if (best > 0) {
                return new int[] {best, 1};
            }
        }
        return new int[] {Math.min(rest, oneCharLen(in[pos])), 0};
    }

    /** Darts-clone DoubleArray::commonPrefixSearch; fills lengths/values, returns the number of matches. */
    private int commonPrefixSearch(byte[] key, int pos, int[] values, int[] lengths) {
        int num = 0;
        int nodePos = 0;
        int unit = trie[0];
        nodePos ^= offset(unit);
        for (int k = pos; k < key.length; k++) {
            int c = key[k] & 0xff;
            nodePos ^= c;
            if (nodePos < 0 || nodePos >= trie.length) {
                return num;
            }
            unit = trie[nodePos];
            if (label(unit) != c) {
                return num;
            }
            nodePos ^= offset(unit);
            if (hasLeaf(unit)) {
                if (num < values.length && nodePos >= 0 && nodePos < trie.length) {
                    values[num] = trie[nodePos] & 0x7fffffff;
                    lengths[num] = k - pos + 1;
                }
                num++;
            }
        }
        return num;
    }

    private static boolean hasLeaf(int unit) {
        return ((unit >>> 8) & 1) == 1;
    }

    private static int label(int unit) {
        return unit & (0x80000000 | 0xff);
    }

    private static int offset(int unit) {
        return (unit >>> 10) << ((unit & (1 << 9)) >>> 6);
    }

    private final int[] trieValues = new int[MAX_TRIE_RESULTS];
    private final int[] trieLengths = new int[MAX_TRIE_RESULTS];

    /**
     * Normalizer::NormalizePrefix: the replacement of the longest rule matching at {@code pos} (or the character
     * itself) and how many input bytes it consumes. Returns {start, length, consumed} where start &lt; 0 means
     * "from trieStrings at -start-1", otherwise from the input.
     */
    private synchronized int[] normalizePrefix(byte[] in, int pos) {
        int[] pm = prefixMatch(in, pos);
        if (pm[1] == 1) {
            return new int[] {pos, pm[0], pm[0]};
        }
        int longestLength = 0, longestValue = 0;
        if (trie != null) {
            int num = commonPrefixSearch(in, pos, trieValues, trieLengths);
            for (int k = 0; k < Math.min(num, MAX_TRIE_RESULTS); k++) {
                if (longestLength == 0 || trieLengths[k] > longestLength) {
                    longestLength = trieLengths[k];
                    longestValue = trieValues[k];
                }
            }
        }
        if (longestLength == 0) {
            int len = Math.min(in.length - pos, oneCharLen(in[pos]));
            return new int[] {pos, len, len};
        }
        int end = longestValue;
        while (end < trieStrings.length && trieStrings[end] != 0) {
            end++;
        }
        return new int[] {-longestValue - 1, end - longestValue, longestLength};
    }

    /** Normalizer::Normalize (the norm_to_orig alignment is not needed for ids). */
    byte[] normalizeSp(byte[] input) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(input.length * 3 + 3);
        int pos = 0;
        if (input.length == 0) {
            return new byte[0];
        }
        if (removeExtraWhitespaces) {
            while (pos < input.length) {
                int[] p = normalizePrefix(input, pos);
                byte[] src = p[0] < 0 ? trieStrings : input;
                int st = p[0] < 0 ? -p[0] - 1 : p[0];
                if (!(p[1] == 1 && src[st] == ' ')) {
                    break;
                }
                pos += p[2];
            }
        }
        if (pos >= input.length) {
            return new byte[0];
        }
        if (!treatWhitespaceAsSuffix && addDummyPrefix) {
            addWs(out);
        }
        boolean isPrevSpace = removeExtraWhitespaces;
        while (pos < input.length) {
            int[] p = normalizePrefix(input, pos);
            byte[] src = p[0] < 0 ? trieStrings : input;
            int st = p[0] < 0 ? -p[0] - 1 : p[0];
            int len = p[1];
            while (isPrevSpace && len > 0 && src[st] == ' ') {
                st++;
                len--;
            }
            if (len > 0) {
                for (int k = 0; k < len; k++) {
                    byte b = src[st + k];
                    if (escapeWhitespaces && b == ' ') {
                        out.write(SPACE_SYMBOL, 0, SPACE_SYMBOL.length);
                    } else {
                        out.write(b);
                    }
                }
                isPrevSpace = src[st + len - 1] == ' ';
            }
            pos += p[2];
            if (!removeExtraWhitespaces) {
                isPrevSpace = false;
            }
        }
        byte[] r = out.toByteArray();
        int n = r.length;
        if (removeExtraWhitespaces) {
            byte[] space = escapeWhitespaces ? SPACE_SYMBOL : new byte[] {' '};
            while (n >= space.length && endsWith(r, n, space)) {
                n -= space.length;
            }
        }
        if (treatWhitespaceAsSuffix && addDummyPrefix) {
            ByteArrayOutputStream o2 = new ByteArrayOutputStream(n + 3);
            o2.write(r, 0, n);
            addWs(o2);
            return o2.toByteArray();
        }
        return n == r.length ? r : Arrays.copyOf(r, n);
    }

    private void addWs(ByteArrayOutputStream out) {
        if (escapeWhitespaces) {
            out.write(SPACE_SYMBOL, 0, SPACE_SYMBOL.length);
        } else {
            out.write(' ');
        }
    }

    private static boolean endsWith(byte[] a, int n, byte[] suffix) {
        for (int k = 0; k < suffix.length; k++) {
            if (a[n - suffix.length + k] != suffix[k]) {
                return false;
            }
        }
        return true;
    }

    // ---------------------------------------------------------------------------------------- BPE

    private static final class Pair {
        final int left, right, size;
        final float score;

        Pair(int left, int right, float score, int size) {
            this.left = left;
            this.right = right;
            this.score = score;
            this.size = size;
        }
    }

    /** bpe::Model::SampleEncode with alpha = 0: appends (piece bytes as ISO-8859-1 key, id) to the lists. */
    private void bpe(byte[] normalized, List<String> outPieces, List<Integer> outIds) {
        if (normalized.length == 0) {
            return;
        }
        String text = new String(normalized, StandardCharsets.ISO_8859_1);
        int cap = normalized.length;
        int[] start = new int[cap], len = new int[cap], prev = new int[cap], next = new int[cap];
        boolean[] freeze = new boolean[cap];
        int count = 0;
        for (int pos = 0; pos < normalized.length; ) {
            int[] pm = prefixMatch(normalized, pos);
            start[count] = pos;
            len[count] = pm[0];
            freeze[count] = pm[1] == 1;
            prev[count] = count - 1;
            pos += pm[0];
            next[count] = pos >= normalized.length ? -1 : count + 1;
            count++;
        }
        // larger score first; equal scores: smaller left index first
        PriorityQueue<Pair> agenda = new PriorityQueue<>((a, b) -> {
            if (a.score != b.score) {
                return a.score > b.score ? -1 : 1;
            }
            return Integer.compare(a.left, b.left);
        });
        Map<String, String[]> revMerge = new HashMap<>();
        for (int k = 1; k < count; k++) {
            maybeAdd(k - 1, k, text, start, len, freeze, agenda, revMerge);
        }
        while (!agenda.isEmpty()) {
            Pair top = agenda.poll();
            if (len[top.left] == 0 || len[top.right] == 0 || len[top.left] + len[top.right] != top.size) {
                continue; // stale
            }
            len[top.left] += len[top.right];
            next[top.left] = next[top.right];
            if (next[top.right] >= 0) {
                prev[next[top.right]] = top.left;
            }
            len[top.right] = 0;
            maybeAdd(prev[top.left], top.left, text, start, len, freeze, agenda, revMerge);
            maybeAdd(top.left, next[top.left], text, start, len, freeze, agenda, revMerge);
        }
        for (int k = 0; k != -1; k = next[k]) {
            resegment(text.substring(start[k], start[k] + len[k]), revMerge, outPieces, outIds);
        }
    }

    private void maybeAdd(int left, int right, String text, int[] start, int[] len, boolean[] freeze,
                          PriorityQueue<Pair> agenda, Map<String, String[]> revMerge) {
        if (left == -1 || right == -1 || freeze[left] || freeze[right]) {
            return;
        }
        String piece = text.substring(start[left], start[left] + len[left] + len[right]);
        Integer id = normalPieces.get(piece);
        if (id == null) {
            return;
        }
        agenda.add(new Pair(left, right, scores[id], piece.length()));
        if (types[id] == UNUSED) {
            revMerge.put(piece, new String[] {text.substring(start[left], start[left] + len[left]),
                    text.substring(start[right], start[right] + len[right])});
        }
    }

    private void resegment(String w, Map<String, String[]> revMerge, List<String> outPieces, List<Integer> outIds) {
        int id = pieceToIdKey(w);
        if (types[id] != UNUSED) {
            outPieces.add(w);
            outIds.add(id);
            return;
        }
        String[] p = revMerge.get(w);
        if (p == null) {
            outPieces.add(w);
            outIds.add(id);
            return;
        }
        resegment(p[0], revMerge, outPieces, outIds);
        resegment(p[1], revMerge, outPieces, outIds);
    }

    // ---------------------------------------------------------------------------------------- protobuf wire

    /** Minimal protobuf wire-format reader (varint, fixed32, fixed64, length-delimited). */
    private static final class Proto {
        private final byte[] b;
        private int p;
        private final int end;

        Proto(byte[] b, int start, int end) {
            this.b = b;
            this.p = start;
            this.end = end;
        }

        boolean more() {
            return p < end;
        }

        int tag() {
            long t = varint();
            if (t == 0 || t > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("bad protobuf tag at byte " + p);
            }
            return (int) t;
        }

        long varint() {
            long r = 0;
            for (int shift = 0; shift < 64; shift += 7) {
                if (p >= end) {
                    throw new IllegalArgumentException("truncated protobuf varint");
                }
                int c = b[p++] & 0xff;
                r |= (long) (c & 0x7f) << shift;
                if ((c & 0x80) == 0) {
                    return r;
                }
            }
            throw new IllegalArgumentException("protobuf varint too long");
        }

        int fixed32() {
            if (p + 4 > end) {
                throw new IllegalArgumentException("truncated protobuf fixed32");
            }
            int v = (b[p] & 0xff) | (b[p + 1] & 0xff) << 8 | (b[p + 2] & 0xff) << 16 | (b[p + 3] & 0xff) << 24;
            p += 4;
            return v;
        }

        byte[] bytes() {
            long n = varint();
            if (n < 0 || p + n > end) {
                throw new IllegalArgumentException("truncated protobuf length-delimited field");
            }
            byte[] r = Arrays.copyOfRange(b, p, p + (int) n);
            p += (int) n;
            return r;
        }

        Proto sub() {
            long n = varint();
            if (n < 0 || p + n > end) {
                throw new IllegalArgumentException("truncated protobuf message");
            }
            Proto s = new Proto(b, p, p + (int) n);
            p += (int) n;
            return s;
        }

        void skip(int tag) {
            switch (tag & 7) {
                case 0: varint(); break;
                case 1: if (p + 8 > end) { throw new IllegalArgumentException("truncated fixed64"); } p += 8; break;
                case 2: { long n = varint(); if (n < 0 || p + n > end) { throw new IllegalArgumentException("truncated field"); } p += (int) n; break; }
                case 5: if (p + 4 > end) { throw new IllegalArgumentException("truncated fixed32"); } p += 4; break;
                default: throw new IllegalArgumentException("unsupported protobuf wire type " + (tag & 7));
            }
        }
    }
}
