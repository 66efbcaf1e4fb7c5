package ai.lwxedge.core;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * Reads NumPy {@code .npy} arrays (format 1.0/2.0/3.0, C order, little-endian {@code <f4 <f8 <i4 <i8 |b1}) and
 * {@code .npz} archives (a zip of .npy files, as written by {@code np.savez}) into double arrays. Nothing
 * here can execute code: object arrays ({@code allow_pickle}) are refused.
 */
public final class Npy {
    /** A decoded array: row-major data (as doubles; int64 values beyond 2^53 lose precision) and shape. */
    public static final class Array {
        public final String dtype;
        public final int[] shape;
        public final double[] data;

        Array(String dtype, int[] shape, double[] data) {
            this.dtype = dtype;
            this.shape = shape;
            this.data = data;
        }

        public int size() {
            return data.length;
        }

        /** Rows of a 2-d array as float[] (the on-device representation of embeddings). */
        public float[][] toFloatMatrix() {
            if (shape.length != 2) {
                throw new IllegalArgumentException("expected a 2-d array, got " + shape.length + "-d");
            }
            float[][] m = new float[shape[0]][shape[1]];
            for (int r = 0; r < shape[0]; r++) {
                for (int c = 0; c < shape[1]; c++) {
                    m[r][c] = (float) data[r * shape[1] + c];
                }
            }
            return m;
        }

        public float[] toFloatVector() {
            float[] v = new float[data.length];
            for (int k = 0; k < v.length; k++) {
                v[k] = (float) data[k];
            }
            return v;
        }
    }

    private Npy() {
    }

    public static Array read(Path path) throws IOException {
        try {
            return parse(Files.readAllBytes(path));
        } catch (IllegalArgumentException e) {
            throw new IOException(path + ": " + e.getMessage(), e);
        }
    }

    /** All arrays of an .npz file, by name without the ".npy" suffix. */
    public static Map<String, Array> readNpz(Path path) throws IOException {
        Map<String, Array> out = new LinkedHashMap<>();
        try (ZipFile zip = new ZipFile(path.toFile())) {
            List<? extends ZipEntry> entries = list(zip);
            for (ZipEntry e : entries) {
                String name = e.getName();
                if (e.isDirectory()) {
                    continue;
                }
                try (InputStream in = zip.getInputStream(e)) {
                    byte[] b = readAll(in);
                    String key = name.endsWith(".npy") ? name.substring(0, name.length() - 4) : name;
                    try {
                        out.put(key, parse(b));
                    } catch (IllegalArgumentException ex) {
                        throw new IOException(path + " [" + name + "]: " + ex.getMessage(), ex);
                    }
                }
            }
        }
        return out;
    }

    private static List<? extends ZipEntry> list(ZipFile zip) {
        List<ZipEntry> l = new ArrayList<>();
        Enumeration<? extends ZipEntry> en = zip.entries();
        while (en.hasMoreElements()) {
            l.add(en.nextElement());
        }
        return l;
    }

    private static byte[] readAll(InputStream in) throws IOException {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        byte[] buf = new byte[1 << 16];
        int n;
        while ((n = in.read(buf)) > 0) {
            o.write(buf, 0, n);
        }
        return o.toByteArray();
    }

    /** Parses the bytes of one .npy file. */
    public static Array parse(byte[] b) {
        if (b.length < 10 || (b[0] & 0xff) != 0x93 || b[1] != 'N' || b[2] != 'U' || b[3] != 'M' || b[4] != 'P'
                || b[5] != 'Y') {
            throw new IllegalArgumentException("not a .npy file (bad magic)");
        }
        int major = b[6] & 0xff;
        int headerLen, headerStart;
        if (major == 1) {
            headerLen = (b[8] & 0xff) | (b[9] & 0xff) << 8;
            headerStart = 10;
        } else if (major == 2 || major == 3) {
            if (b.length < 12) {
                throw new IllegalArgumentException("truncated .npy header");
            }
            headerLen = (b[8] & 0xff) | (b[9] & 0xff) << 8 | (b[10] & 0xff) << 16 | (b[11] & 0xff) << 24;
            headerStart = 12;
        } else {
            throw new IllegalArgumentException("unsupported .npy version " + major);
        }
        if (headerLen < 0 || headerStart + headerLen > b.length) {
            throw new IllegalArgumentException("truncated .npy header");
        }
        String header = new String(b, headerStart, headerLen,
                major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
        String descr = headerValue(header, "descr");
        String fortran = headerValue(header, "fortran_order");
        String shapeStr = headerValue(header, "shape");
        if (descr == null || fortran == null || shapeStr == null) {
            throw new IllegalArgumentException("incomplete .npy header: " + header.trim());
        }
        descr = descr.replace("'", "").replace("\"", "").trim();
        if (!fortran.trim().equals("False")) {
            throw new IllegalArgumentException("Fortran-order arrays are not supported");
        }
        String inner = shapeStr.trim();
        if (!inner.startsWith("(") || !inner.endsWith(")")) {
            throw new IllegalArgumentException("bad shape " + shapeStr);
        }
        inner = inner.substring(1, inner.length() - 1).trim();
        List<Integer> dims = new ArrayList<>();
        long count = 1;
        if (!inner.isEmpty()) {
            for (String d : inner.split(",")) {
                d = d.trim();
                if (d.isEmpty()) {
                    continue;
                }
                int v = Integer.parseInt(d);
                dims.add(v);
                count *= v;
            }
        }
        int[] shape = new int[dims.size()];
        for (int k = 0; k < shape.length; k++) {
            shape[k] = dims.get(k);
        }
        int itemSize;
        switch (descr) {
            case "<f4": case "<i4": itemSize = 4; break;
            case "<f8": case "<i8": itemSize = 8; break;
            case "|b1": case "|u1": case "|i1": itemSize = 1; break;
            default:
                throw new IllegalArgumentException("unsupported dtype " + descr
                        + " (expected little-endian float32/float64/int32/int64/bool)");
        }
        int dataStart = headerStart + headerLen;
        if (dataStart + count * itemSize > b.length) {
            throw new IllegalArgumentException("truncated .npy data (" + (b.length - dataStart) + " bytes for "
                    + count + " items of " + itemSize + " bytes)");
        }
        ByteBuffer buf = ByteBuffer.wrap(b, dataStart, (int) (count * itemSize)).order(ByteOrder.LITTLE_ENDIAN);
        double[] data = new double[(int) count];
        for (int k = 0; k < count; k++) {
            switch (descr) {
                case "<f4": data[k] = buf.getFloat(); break;
                case "<f8": data[k] = buf.getDouble(); break;
                case "<i4": data[k] = buf.getInt(); break;
                case "<i8": data[k] = buf.getLong(); break;
                case "|u1": case "|b1": data[k] = buf.get() & 0xff; break;
                default: data[k] = buf.get(); break;
            }
        }
        return new Array(descr, shape, data);
    }

    /** The raw text of {@code 'key': value} in a .npy header dict (values here never contain a top-level ','). */
    private static String headerValue(String header, String key) {
        int k = header.indexOf("'" + key + "'");
        if (k < 0) {
            return null;
        }
        int colon = header.indexOf(':', k);
        if (colon < 0) {
            return null;
        }
        int depth = 0;
        int end = colon + 1;
        for (; end < header.length(); end++) {
            char c = header.charAt(end);
            if (c == '(') {
                depth++;
            } else if (c == ')') {
                depth--;
            } else if ((c == ',' || c == '}') && depth == 0) {
                break;
            }
        }
        return header.substring(colon + 1, end);
    }
}
