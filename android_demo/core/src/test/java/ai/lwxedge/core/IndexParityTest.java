package ai.lwxedge.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * {@link VectorIndex} against Python's {@code Index.search} on the index fixtures of
 * {@code tools/android_parity.py} ({@code index.lwxindex}, {@code index_queries.npy}, {@code index_expected.json}):
 * identical ids in order, scores within 1e-4. Runs once per directory of the system property
 * {@code lwx.fixtures} (as {@link ParityTest}) that holds an {@code index.lwxindex}.
 */
@RunWith(Parameterized.class)
public class IndexParityTest {
    private static final double SCORE_TOL = 1e-4;

    @Parameters(name = "{0}")
    public static Collection<Object[]> fixtures() {
        String prop = System.getProperty("lwx.fixtures", "");
        List<Object[]> out = new ArrayList<>();
        for (String p : prop.split(File.pathSeparator)) {
            if (!p.isEmpty() && Files.isRegularFile(Paths.get(p, "index.lwxindex"))) {
                out.add(new Object[] {p});
            }
        }
        return out;
    }

    private final Path dir;

    public IndexParityTest(String dir) {
        this.dir = Paths.get(dir);
    }

    @Test
    public void topKMatchesPython() throws IOException {
        Map<String, Object> expected = Json.readObject(dir.resolve("index_expected.json"));
        VectorIndex index = VectorIndex.open(dir.resolve(Json.str(expected.get("index"), "index")));
        assertEquals(Json.integer(expected.get("items"), "items"), index.size());
        assertEquals(Json.integer(expected.get("dim"), "dim"), index.dim());
        assertEquals(expected.get("encoder_sha256"), index.encoderSha256());
        int k = (int) Json.integer(expected.get("top_k"), "top_k");
        float[][] queries = Npy.read(dir.resolve("index_queries.npy")).toFloatMatrix();
        List<Object> cases = Json.arr(expected.get("queries"), "queries");
        assertEquals(cases.size(), queries.length);
        List<String> ties = new ArrayList<>();
        for (Object o : Json.arr(expected.get("tie_ids"), "tie_ids")) {
            ties.add(Json.str(o, "tie id"));
        }
        double worst = 0;
        int tieQueries = 0;
        for (int q = 0; q < queries.length; q++) {
            Map<String, Object> c = Json.obj(cases.get(q), "query");
            List<Object> wantIds = Json.arr(c.get("ids"), "ids");
            List<Object> wantScores = Json.arr(c.get("scores"), "scores");
            List<VectorIndex.Hit> hits = index.search(queries[q], k);
            List<String> got = new ArrayList<>();
            for (VectorIndex.Hit h : hits) {
                got.add(h.id);
            }
            assertEquals(dir.getFileName() + " query " + q + " ids", wantIds, new ArrayList<Object>(got));
            for (int j = 0; j < hits.size(); j++) {
                worst = Math.max(worst, Math.abs(hits.get(j).score - Json.number(wantScores.get(j), "score")));
            }
            if (got.stream().filter(ties::contains).count() > 1) {
                tieQueries++;
            }
        }
        System.out.println("[parity] " + dir.getFileName() + ": index top-k identical for " + queries.length + "/"
                + queries.length + " queries (" + index.size() + " items, dim " + index.dim() + ", top_k " + k + ", "
                + tieQueries + " with equal scores in the top-k); scores within " + String.format("%.2e", worst));
        assertTrue("max score difference " + worst, worst <= SCORE_TOL);
    }
}
