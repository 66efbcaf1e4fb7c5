package ai.lwxedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/** Fixture-free unit tests of the JVM core (JSON, .npy, search ties, normalisation, padding). */
public class CoreUnitTest {

    @Test
    public void jsonParsesWhatPythonWrites() {
        Object v = Json.parse("{\"a\": [1, -2.5e3, true, null, \"\\u00e9\\ud83d\\ude00\\n\"], \"b\": {}, \"c\": 12345678901234}");
        Map<String, Object> m = Json.obj(v, "top");
        List<Object> a = Json.arr(m.get("a"), "a");
        assertEquals(1L, a.get(0));
        assertEquals(-2500.0, (Double) a.get(1), 0);
        assertEquals(Boolean.TRUE, a.get(2));
        assertEquals(null, a.get(3));
        assertEquals("\u00e9\ud83d\ude00\n", a.get(4));
        assertEquals(12345678901234L, m.get("c"));
        try {
            Json.parse("{\"a\": 1,}");
            fail("trailing comma accepted");
        } catch (IllegalArgumentException expected) {
            // ok
        }
    }

    private static byte[] npy(String descr, String shape, ByteBuffer data) {
        String header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
        int total = 10 + header.length() + 1;
        int pad = (64 - total % 64) % 64;
        StringBuilder h = new StringBuilder(header);
        for (int k = 0; k < pad; k++) {
            h.append(' ');
        }
        h.append('\n');
        byte[] hb = h.toString().getBytes(StandardCharsets.ISO_8859_1);
        ByteBuffer b = ByteBuffer.allocate(10 + hb.length + data.capacity()).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.ISO_8859_1)).put((byte) 1).put((byte) 0);
        b.putShort((short) hb.length).put(hb).put(data.array());
        return b.array();
    }

    @Test
    public void npyReadsFloat32Matrix() {
        ByteBuffer d = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
        for (int k = 0; k < 6; k++) {
            d.putFloat(k * 0.5f);
        }
        Npy.Array a = Npy.parse(npy("<f4", "(2, 3)", d));
        assertArrayEquals(new int[] {2, 3}, a.shape);
        assertEquals(2.5, a.toFloatMatrix()[1][2], 0);
        ByteBuffer one = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putDouble(7.25);
        assertEquals(7.25, Npy.parse(npy("<f8", "()", one)).data[0], 0);
    }

    @Test
    public void searchBreaksTiesByLowerIndexAndClipsK() {
        float[][] corpus = {{1, 0}, {0, 1}, {1, 0}, {2, 0}, {-1, 0}};
        CosineSearch s = new CosineSearch(corpus);
        CosineSearch.Hit[] hits = s.search(new float[] {3, 0}, 10);
        assertEquals(5, hits.length);
        assertEquals(0, hits[0].index);
        assertEquals(2, hits[1].index);
        assertEquals(3, hits[2].index);
        assertEquals(1, hits[3].index);
        assertEquals(4, hits[4].index);
        assertEquals(1.0, hits[0].score, 1e-12);
        CosineSearch.Hit[] top2 = s.search(new float[] {1, 0}, 2);
        assertEquals(0, top2[0].index);
        assertEquals(2, top2[1].index);
    }

    @Test
    public void normalizeLikePython() {
        assertEquals("\"smart\" - it's ... ok", TextNormalizer.normalize("  \u201cSmart\u201d \u2014 it\u2019s \u2026\u00a0OK\t"));
        assertEquals("finance abc", TextNormalizer.normalize("\ufb01nance \uff21\uff22\uff23"));
        assertEquals("caf\u00e9", TextNormalizer.normalize("CAFE\u0301"));
        assertEquals("\u03bf\u03b4\u03bf\u03c2", TextNormalizer.normalize("\u039f\u0394\u039f\u03a3"));   // final sigma
        assertEquals("i\u0307stanbul", TextNormalizer.normalize("\u0130stanbul"));
        assertEquals("", TextNormalizer.normalize(" \u3000\u2028\u0085 "));
        assertEquals("a b", TextNormalizer.normalize("a\u001f\u001cb"));  // Python treats U+001C..U+001F as whitespace
        assertEquals("a\u200bb", TextNormalizer.normalize("a\u200bb"));    // but not U+200B
    }

    @Test
    public void embedderPadsBatchesLikeTheSdk() {
        final long[][] seen = new long[2][];
        TextEmbedder.Runtime fake = (ids, mask, batch, len) -> {
            seen[0] = ids.clone();
            seen[1] = mask.clone();
            float[][] out = new float[batch][2];
            for (int r = 0; r < batch; r++) {
                out[r][0] = 3 * (r + 1);
                out[r][1] = 4 * (r + 1);
            }
            return out;
        };
        float[][] v = TextEmbedder.embedIds(fake, new int[][] {{5, 6, 7}, {8}}, 4);
        assertArrayEquals(new long[] {5, 6, 7, 8, 0, 0}, seen[0]);
        assertArrayEquals(new long[] {1, 1, 1, 1, 0, 0}, seen[1]);
        assertEquals(0.6f, v[0][0], 1e-7);
        assertEquals(0.8f, v[1][1], 1e-7);
        assertTrue(v.length == 2);
    }
}
