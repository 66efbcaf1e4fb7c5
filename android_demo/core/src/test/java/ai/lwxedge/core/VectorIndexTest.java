package ai.lwxedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** Fixture-free tests of {@link VectorIndex}: tiny index files written here with JDBC (the schema of lwx_edge.index). */
public class VectorIndexTest {
    private Path tmp;

    @Before
    public void makeDir() throws IOException {
        tmp = Files.createTempDirectory("lwx-index");
    }

    @After
    public void removeDir() throws IOException {
        try (var files = Files.walk(tmp)) {
            List<Path> all = new ArrayList<>();
            files.forEach(all::add);
            for (int k = all.size() - 1; k >= 0; k--) { // children before their directory
                Files.delete(all.get(k));
            }
        }
    }

    private static Connection connect(Path p) throws SQLException {
        return DriverManager.getConnection("jdbc:sqlite:" + p);
    }

    /** An index file as lwx_edge.index.Index._create makes it, with these meta overrides and rows. */
    private Path write(String name, String version, Object[][] rows) throws SQLException {
        return write(name, version, "{\"sha256\": \"abc123\", \"model_files\": {}}", rows);
    }

    private Path write(String name, String version, String encoder, Object[][] rows) throws SQLException {
        Path p = tmp.resolve(name);
        try (Connection c = connect(p); Statement st = c.createStatement()) {
            st.executeUpdate("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
            st.executeUpdate("CREATE TABLE items (rowid INTEGER PRIMARY KEY, id NOT NULL UNIQUE, text TEXT, "
                    + "metadata TEXT, vector BLOB NOT NULL, scale REAL NOT NULL)");
            String[][] meta = {{"format", "lwx-edge-index"}, {"format_version", version}, {"dim", "4"},
                {"storage", "int8"}, {"encoder", encoder},
                {"text_contract", "{\"max_len\": 8, \"tokenizer\": {}}"}};
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO meta VALUES (?, ?)")) {
                for (String[] kv : meta) {
                    ps.setString(1, kv[0]);
                    ps.setString(2, kv[1]);
                    ps.executeUpdate();
                }
            }
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO items (rowid, id, text, metadata, vector, scale) VALUES (?, ?, ?, NULL, ?, ?)")) {
                for (Object[] r : rows) {
                    ps.setLong(1, (Integer) r[0]);
                    if (r[1] instanceof Long) {
                        ps.setLong(2, (Long) r[1]);
                    } else {
                        ps.setString(2, (String) r[1]);
                    }
                    ps.setString(3, (String) r[2]);
                    ps.setBytes(4, (byte[]) r[3]);
                    ps.setDouble(5, (Double) r[4]);
                    ps.executeUpdate();
                }
            }
        }
        return p;
    }

    private static byte[] v(int... x) {
        byte[] b = new byte[x.length];
        for (int k = 0; k < x.length; k++) {
            b[k] = (byte) x[k];
        }
        return b;
    }

    private static List<String> ids(List<VectorIndex.Hit> hits) {
        List<String> out = new ArrayList<>();
        for (VectorIndex.Hit h : hits) {
            out.add(h.id);
        }
        return out;
    }

    @Test
    public void searchesInScoreThenRowOrder() throws Exception {
        // inserted out of rowid order; rowids 2 and 9 hold the same vector (a tie: row order decides)
        Path p = write("a.lwxindex", "1", new Object[][] {
            {9, "tie-late", "nine", v(127, 0, 0, 0), 0.5 / 127},
            {2, 7L, "two", v(127, 0, 0, 0), 0.5 / 127},
            {4, "007", null, v(-127, 0, 0, 0), 1.0 / 127},
            {6, "b", "six", v(100, 100, 0, 0), 1.0 / 127},
            {7, -3L, "seven", v(0, 0, 127, -127), 0.25 / 127},
        });
        VectorIndex index = VectorIndex.open(p);
        assertEquals(5, index.size());
        assertEquals(4, index.dim());
        assertEquals("abc123", index.encoderSha256());
        assertEquals("7", index.id(0));        // an integer id reads as its decimal text, rows in rowid order
        assertEquals("007", index.id(1));      // a text id stays text
        List<VectorIndex.Hit> hits = index.search(new float[] {2f, 0f, 0f, 0f}, 10); // not normalised
        assertEquals(List.of("b", "7", "tie-late", "-3", "007"), ids(hits));
        assertEquals(100f / 127, hits.get(0).score, 1e-6);
        assertEquals(0.5f, hits.get(1).score, 1e-6);
        assertEquals(hits.get(1).score, hits.get(2).score, 0f);
        assertEquals("two", hits.get(1).text);
        assertEquals(0f, hits.get(3).score, 0f);
        assertEquals(-1f, hits.get(4).score, 1e-6);
        assertNull(hits.get(4).text);
        assertEquals(List.of("b", "7"), ids(index.search(new float[] {1f, 0f, 0f, 0f}, 2)));
        // the tie on top, cut at k = 1: the lower row stays
        assertEquals(List.of("7"), ids(index.search(new float[] {1f, -1f, 0f, 0f}, 1)));
        assertEquals(List.of("7", "tie-late", "b"), ids(index.search(new float[] {1f, -1f, 0f, 0f}, 3)));
        assertArrayEquals(new float[] {0f, 0f, 0f, 0f, 0f}, index.scores(new float[] {0f, 0f, 0f, 0f}), 0f);
        try {
            index.search(new float[] {1f, 0f, 0f}, 3);
            fail("a 3-dimensional query was accepted");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("3 dimensions"));
        }
    }

    /** A bundle directory with a real config.json (read and verified) and recorded hashes for the rest. */
    private Path bundle(String name, int dModel, String pteSha, String tokSha) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Path config = dir.resolve(Bundle.CONFIG);
        Files.write(config, ("{\"model\": {\"d_model\": " + dModel + "}}").getBytes(StandardCharsets.UTF_8));
        String manifest = "{\"format\": \"lwx-edge-bundle\", \"format_version\": 2, \"files\": {"
                + "\"config.json\": {\"sha256\": \"" + Bundle.sha256(config) + "\", \"size\": "
                + Files.size(config) + "}, "
                + "\"tokenizer.model\": {\"sha256\": \"" + tokSha + "\", \"size\": 1}, "
                + "\"model.int8.pte\": {\"sha256\": \"" + pteSha + "\", \"size\": 1}}}";
        Files.write(dir.resolve(Bundle.MANIFEST), manifest.getBytes(StandardCharsets.UTF_8));
        return dir;
    }

    @Test
    public void checksTheEncoderAgainstTheBundle() throws Exception {
        // as Encoder.identity() records it: every model file of the bundle, the primary one as sha256
        String encoder = "{\"sha256\": \"onnx1\", \"tokenizer_sha256\": \"tok1\", \"embedding_dim\": 4, "
                + "\"model_files\": {\"model.int8.onnx\": \"onnx1\", \"model.int8.pte\": \"pte1\"}}";
        VectorIndex index = VectorIndex.open(write("e.lwxindex", "1", encoder,
                new Object[][] {{1, "a", "x", v(127, 0, 0, 0), 1.0 / 127}}));
        assertNull(index.encoderMismatch(Bundle.open(bundle("same", 4, "pte1", "tok1")), Bundle.PTE_INT8));
        String[][] cases = {{"model", "4", "pte2", "tok1"}, {"tokenizer", "4", "pte1", "tok2"},
            {"embedding size", "8", "pte1", "tok1"}};
        for (String[] c : cases) {
            Bundle b = Bundle.open(bundle("b-" + c[0].replace(' ', '-'), Integer.parseInt(c[1]), c[2], c[3]));
            String why = index.encoderMismatch(b, Bundle.PTE_INT8);
            assertTrue(c[0] + ": " + why, why != null && why.contains("another encoder (" + c[0] + " differs"));
        }
        // a bundle without the artifact cannot have made the vectors
        assertTrue(index.encoderMismatch(Bundle.open(bundle("no-pte", 4, "pte1", "tok1")), "model.pte") != null);
    }

    private static void refused(Path p, String why) {
        try {
            VectorIndex.open(p);
            fail(p + " was opened");
        } catch (IOException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(why));
        }
    }

    @Test
    public void refusesWhatIsNotAVersion1Index() throws Exception {
        Path other = tmp.resolve("other.db");
        try (Connection c = connect(other); Statement st = c.createStatement()) {
            st.executeUpdate("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)");
        }
        refused(other, "not an lwx-edge index");
        Path text = tmp.resolve("text.lwxindex");
        Files.write(text, "id,text\n1,hello\n".getBytes(StandardCharsets.UTF_8));
        refused(text, "not an lwx-edge index (not an SQLite file)");
        refused(tmp.resolve("missing.lwxindex"), "no such index file");
        refused(write("v2.lwxindex", "2", new Object[0][]), "index format version 2");
        refused(write("short.lwxindex", "1", new Object[][] {{1, "x", "t", v(1, 2, 3), 0.1}}),
                "has a 3-byte vector (the index stores 4)");
    }
}
