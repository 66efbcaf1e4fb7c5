package ai.lwxedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.junit.Assume;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Parity with the Python SDK on fixtures written by {@code tools/android_parity.py}. The fixture directories
 * come from the system property {@code lwx.fixtures} (separated by the platform path separator), which
 * {@code android_demo/run_jvm_tests.sh} sets from its arguments.
 */
@RunWith(Parameterized.class)
public class ParityTest {
    private static final double PROBA_TOL = 1e-5;
    private static final double SCORE_TOL = 1e-5;

    @Parameters(name = "{0}")
    public static Collection<Object[]> fixtures() {
        String prop = System.getProperty("lwx.fixtures", "");
        List<Object[]> out = new ArrayList<>();
        for (String p : prop.split(File.pathSeparator)) {
            if (!p.isEmpty()) {
                out.add(new Object[] {p});
            }
        }
        return out;
    }

    private final Path dir;

    public ParityTest(String dir) {
        this.dir = Paths.get(dir);
    }

    private Map<String, Object> json(String name) throws IOException {
        return Json.readObject(dir.resolve(name));
    }

    private static void report(String line) {
        System.out.println("[parity] " + line);
    }

    // ---------------------------------------------------------------------------------------- bundle

    @Test
    public void bundleOpensAndVerifiesWhatItUses() throws IOException {
        Bundle b = Bundle.open(dir.resolve("bundle"));
        Map<String, Object> tokens = json("tokens.json");
        assertEquals(Json.integer(tokens.get("max_len"), "max_len"), b.maxLen(Bundle.PTE_INT8));
        Path tok = b.file(Bundle.TOKENIZER);
        assertEquals(tokens.get("tokenizer_sha256"), Bundle.sha256(tok));
        SentencePieceBpe sp = b.tokenizer();
        assertEquals(Json.integer(tokens.get("vocab_size"), "vocab_size"), sp.vocabSize());
    }

    @Test
    public void bundleRefusesACorruptTokenizer() throws IOException {
        Path copy = Files.createTempDirectory("lwx-bundle");
        try {
            for (String f : new String[] {Bundle.MANIFEST, Bundle.CONFIG, Bundle.TOKENIZER}) {
                Files.copy(dir.resolve("bundle").resolve(f), copy.resolve(f));
            }
            byte[] t = Files.readAllBytes(copy.resolve(Bundle.TOKENIZER));
            t[t.length / 2] ^= 1;
            Files.write(copy.resolve(Bundle.TOKENIZER), t);
            Bundle b = Bundle.open(copy);
            try {
                b.tokenizer();
                fail("a tokenizer.model that does not match the manifest was accepted");
            } catch (IOException expected) {
                assertTrue(expected.getMessage(), expected.getMessage().contains("sha256"));
            }
        } finally {
            for (String f : new String[] {Bundle.MANIFEST, Bundle.CONFIG, Bundle.TOKENIZER}) {
                Files.deleteIfExists(copy.resolve(f));
            }
            Files.deleteIfExists(copy);
        }
    }

    // ---------------------------------------------------------------------------------------- tokens

    @Test
    public void normalizeMatchesPython() throws IOException {
        List<Object> cases = Json.arr(json("tokens.json").get("cases"), "cases");
        List<String> bad = new ArrayList<>();
        for (Object o : cases) {
            Map<String, Object> c = Json.obj(o, "case");
            String got = TextNormalizer.normalize(Json.str(c.get("text"), "text"));
            if (!got.equals(c.get("normalized"))) {
                bad.add(c.get("id") + " " + c.get("lang") + ": " + esc((String) c.get("text")) + " -> java "
                        + esc(got) + " / python " + esc((String) c.get("normalized")));
            }
        }
        report(dir.getFileName() + ": normalize() identical for " + (cases.size() - bad.size()) + "/" + cases.size()
                + " probe texts");
        if (!bad.isEmpty()) {
            fail(bad.size() + " texts normalise differently:\n" + String.join("\n", bad.subList(0, Math.min(20, bad.size()))));
        }
    }

    @Test
    public void tokenIdsMatchPython() throws IOException {
        Map<String, Object> tokens = json("tokens.json");
        int maxLen = (int) Json.integer(tokens.get("max_len"), "max_len");
        SentencePieceBpe sp = Bundle.open(dir.resolve("bundle")).tokenizer();
        List<Object> cases = Json.arr(tokens.get("cases"), "cases");
        List<String> bad = new ArrayList<>();
        int errors = 0, truncated = 0;
        for (Object o : cases) {
            Map<String, Object> c = Json.obj(o, "case");
            String text = Json.str(c.get("text"), "text");
            String label = c.get("id") + " " + c.get("lang") + " " + esc(text.length() > 80 ? text.substring(0, 80) + "..." : text);
            Object error = c.get("error");
            SentencePieceBpe.Encoding enc;
            try {
                enc = sp.encode(text, maxLen);
            } catch (IllegalArgumentException e) {
                if (error == null) {
                    bad.add(label + ": java raised '" + e.getMessage() + "', python encoded it");
                } else if (!e.getMessage().contains("empty".equals(error) ? "empty" : "no tokens")) {
                    bad.add(label + ": java raised '" + e.getMessage() + "', python's error kind is " + error);
                } else {
                    errors++;
                }
                continue;
            }
            if (error != null) {
                bad.add(label + ": python raised (" + error + "), java encoded " + Arrays.toString(enc.ids));
                continue;
            }
            List<Object> want = Json.arr(c.get("ids"), "ids");
            int[] w = new int[want.size()];
            for (int k = 0; k < w.length; k++) {
                w[k] = (int) Json.integer(want.get(k), "id");
            }
            boolean wantTrunc = Boolean.TRUE.equals(c.get("truncated"));
            long wantBefore = Json.integer(c.get("length_before"), "length_before");
            if (!Arrays.equals(w, enc.ids) || wantTrunc != enc.truncated || wantBefore != enc.lengthBefore) {
                bad.add(label + ":\n   python " + Arrays.toString(w) + " truncated=" + wantTrunc + " before=" + wantBefore
                        + "\n   java   " + Arrays.toString(enc.ids) + " truncated=" + enc.truncated + " before=" + enc.lengthBefore);
            } else if (enc.truncated) {
                truncated++;
            }
        }
        report(dir.getFileName() + ": token ids identical for " + (cases.size() - bad.size()) + "/" + cases.size()
                + " probe texts (" + errors + " rejected as empty by both, " + truncated + " truncated at max_len=" + maxLen + ")");
        if (!bad.isEmpty()) {
            fail(bad.size() + " of " + cases.size() + " texts tokenise differently:\n"
                    + String.join("\n", bad.subList(0, Math.min(20, bad.size()))));
        }
    }

    /**
     * normalize() of every single code point. Differences are tolerated only for code points the Java runtime
     * does not know (a newer Unicode version in CPython); they are reported.
     */
    @Test
    public void normalizeTableMatchesPython() throws IOException {
        Path p = dir.resolve("normalize_table.json");
        Assume.assumeTrue("no normalize_table.json", Files.isRegularFile(p));
        Map<String, Object> t = Json.readObject(p);
        Map<String, Object> changed = Json.obj(t.get("changed"), "changed");
        List<String> bad = new ArrayList<>();
        int unknownToJava = 0, checked = 0;
        for (int cp = 0; cp <= Character.MAX_CODE_POINT; cp++) {
            if (cp >= 0xD800 && cp <= 0xDFFF) {
                continue;
            }
            String c = new String(Character.toChars(cp));
            Object want = changed.get(Integer.toString(cp));
            String expected = want == null ? c : (String) want;
            String got = TextNormalizer.normalize(c);
            checked++;
            if (!got.equals(expected)) {
                if (!Character.isDefined(cp)) {
                    unknownToJava++;
                } else {
                    bad.add(String.format("U+%04X: java %s python %s", cp, esc(got), esc(expected)));
                }
            }
        }
        report(dir.getFileName() + ": normalize() of single code points identical for " + (checked - bad.size() - unknownToJava)
                + "/" + checked + " (" + unknownToJava + " differ only on code points unassigned in this JVM's Unicode tables (java "
                + System.getProperty("java.version") + ", python unicode " + t.get("unicode_version") + "))");
        if (!bad.isEmpty()) {
            fail(bad.size() + " code points normalise differently:\n" + String.join("\n", bad.subList(0, Math.min(30, bad.size()))));
        }
    }

    /** The character properties of CPython's Final_Sigma rule, for every code point this JVM knows. */
    @Test
    public void finalSigmaPropertiesMatchPython() throws IOException {
        Path p = dir.resolve("normalize_table.json");
        Assume.assumeTrue("no normalize_table.json", Files.isRegularFile(p));
        Map<String, Object> t = Json.readObject(p);
        Assume.assumeTrue("normalize_table.json has no case properties", t.containsKey("cased"));
        java.util.Set<Long> cased = new java.util.HashSet<>();
        java.util.Set<Long> ignorable = new java.util.HashSet<>();
        for (Object o : Json.arr(t.get("cased"), "cased")) {
            cased.add((Long) o);
        }
        for (Object o : Json.arr(t.get("case_ignorable"), "case_ignorable")) {
            ignorable.add((Long) o);
        }
        Map<String, Object> pyCategories = t.containsKey("categories") ? Json.obj(t.get("categories"), "categories") : Map.of();
        List<String> bad = new ArrayList<>();
        List<String> versionDiffs = new ArrayList<>();
        int checked = 0;
        for (int cp = 0; cp <= Character.MAX_CODE_POINT; cp++) {
            if ((cp >= 0xD800 && cp <= 0xDFFF) || !Character.isDefined(cp)) {
                continue;
            }
            checked++;
            boolean c = TextNormalizer.isCased(cp) != cased.contains((long) cp);
            boolean i = TextNormalizer.isCaseIgnorable(cp) != ignorable.contains((long) cp);
            if (!c && !i) {
                continue;
            }
            String py = (String) pyCategories.getOrDefault(Integer.toString(cp), "other");
            String java = caseCategory(cp);
            String what = String.format("U+%04X %s%s (java category %s, python %s)", cp, c ? "cased " : "",
                    i ? "case-ignorable" : "", java, py);
            (py.equals(java) ? bad : versionDiffs).add(what);
        }
        report(dir.getFileName() + ": Cased / Case_Ignorable identical for " + (checked - bad.size() - versionDiffs.size())
                + "/" + checked + " code points assigned in this JVM" + (versionDiffs.isEmpty() ? "" : "; "
                + versionDiffs.size() + " differ because the Unicode versions give them another category: " + versionDiffs));
        if (!bad.isEmpty()) {
            fail(bad.size() + " property differences:\n" + String.join("\n", bad.subList(0, Math.min(30, bad.size()))));
        }
    }

    // ---------------------------------------------------------------------------------------- head

    @Test
    public void headProbabilitiesMatchPython() throws IOException {
        Head head = Head.load(dir.resolve("head"));
        Map<String, Object> cases = json("head_cases.json");
        assertEquals(Json.arr(cases.get("classes"), "classes"), new ArrayList<Object>(head.classes()));
        float[][] e = Npy.read(dir.resolve("head_embeddings.npy")).toFloatMatrix();
        Npy.Array proba = Npy.read(dir.resolve("head_proba.npy"));
        List<Object> predicted = Json.arr(cases.get("predicted"), "predicted");
        int nc = head.classes().size();
        assertEquals(e.length * nc, proba.size());
        double worst = 0;
        int labelsOk = 0;
        for (int r = 0; r < e.length; r++) {
            double[] p = head.predictProba(e[r]);
            for (int k = 0; k < nc; k++) {
                worst = Math.max(worst, Math.abs(p[k] - proba.data[r * nc + k]));
            }
            if (head.predict(e[r]).equals(predicted.get(r))) {
                labelsOk++;
            }
        }
        report(dir.getFileName() + ": head (" + head.kind() + ", " + nc + " classes) probabilities of " + e.length
                + " embeddings within " + String.format("%.2e", worst) + " of python (tolerance 1e-5); labels identical "
                + labelsOk + "/" + e.length);
        assertTrue("max |p_java - p_python| = " + worst, worst <= PROBA_TOL);
        assertEquals(e.length, labelsOk);
    }

    // ---------------------------------------------------------------------------------------- search

    @Test
    public void searchMatchesPython() throws IOException {
        List<Object> cases = Json.arr(json("search.json").get("cases"), "cases");
        int queries = 0;
        double worst = 0;
        for (Object o : cases) {
            Map<String, Object> c = Json.obj(o, "case");
            float[][] corpus = Npy.read(dir.resolve(Json.str(c.get("corpus"), "corpus"))).toFloatMatrix();
            float[][] qs = Npy.read(dir.resolve(Json.str(c.get("queries"), "queries"))).toFloatMatrix();
            int k = (int) Json.integer(c.get("top_k"), "top_k");
            List<Object> idx = Json.arr(c.get("indices"), "indices");
            List<Object> sc = Json.arr(c.get("scores"), "scores");
            CosineSearch s = new CosineSearch(corpus);
            for (int q = 0; q < qs.length; q++) {
                CosineSearch.Hit[] hits = s.search(qs[q], k);
                List<Object> wi = Json.arr(idx.get(q), "indices row");
                List<Object> ws = Json.arr(sc.get(q), "scores row");
                int[] want = new int[wi.size()];
                int[] got = new int[hits.length];
                for (int j = 0; j < want.length; j++) {
                    want[j] = (int) Json.integer(wi.get(j), "index");
                }
                for (int j = 0; j < got.length; j++) {
                    got[j] = hits[j].index;
                    worst = Math.max(worst, Math.abs(hits[j].score - Json.number(ws.get(j), "score")));
                }
                assertArrayEquals(c.get("name") + " query " + q, want, got);
                queries++;
            }
        }
        report(dir.getFileName() + ": top-k identical for " + queries + "/" + queries + " queries in " + cases.size()
                + " corpora; scores within " + String.format("%.2e", worst));
        assertTrue("max score difference " + worst, worst <= SCORE_TOL);
    }

    /** Two-letter general category if it is one of tools/android_parity.py's CASE_CATEGORIES, else "other". */
    static String caseCategory(int cp) {
        switch (Character.getType(cp)) {
            case Character.UPPERCASE_LETTER: return "Lu";
            case Character.LOWERCASE_LETTER: return "Ll";
            case Character.TITLECASE_LETTER: return "Lt";
            case Character.MODIFIER_LETTER: return "Lm";
            case Character.NON_SPACING_MARK: return "Mn";
            case Character.COMBINING_SPACING_MARK: return "Mc";
            case Character.ENCLOSING_MARK: return "Me";
            case Character.FORMAT: return "Cf";
            case Character.MODIFIER_SYMBOL: return "Sk";
            default: return "other";
        }
    }

    static String esc(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int k = 0; k < s.length(); ) {
            int cp = s.codePointAt(k);
            k += Character.charCount(cp);
            if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || Character.getType(cp) == Character.FORMAT
                    || Character.isWhitespace(cp) && cp != ' ' || cp == 0xa0) {
                b.append(String.format("\\u%04x", cp));
            } else {
                b.appendCodePoint(cp);
            }
        }
        return b.append('"').toString();
    }
}
