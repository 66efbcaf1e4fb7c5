package ai.lwxedge.core;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small, strict JSON reader (RFC 8259) with no dependencies: objects become {@code LinkedHashMap<String,
 * Object>}, arrays {@code ArrayList<Object>}, numbers {@code Long} (integers that fit) or {@code Double},
 * plus {@code String}, {@code Boolean} and {@code null}. Enough for manifest.json, config.json, head.json
 * and the parity fixtures; not a general-purpose library.
 */
public final class Json {
    private final String s;
    private int i;

    private Json(String s) {
        this.s = s;
    }

    /** Parses a whole JSON document. */
    public static Object parse(String text) {
        Json p = new Json(text);
        p.ws();
        Object v = p.value();
        p.ws();
        if (p.i != p.s.length()) {
            throw p.error("trailing characters after the JSON value");
        }
        return v;
    }

    /** Reads and parses a UTF-8 JSON file. */
    public static Object read(Path path) throws IOException {
        byte[] b = Files.readAllBytes(path);
        try {
            return parse(new String(b, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            throw new IOException(path + ": " + e.getMessage(), e);
        }
    }

    /** Reads a JSON file whose top level must be an object. */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> readObject(Path path) throws IOException {
        Object v = read(path);
        if (!(v instanceof Map)) {
            throw new IOException(path + ": expected a JSON object at the top level");
        }
        return (Map<String, Object>) v;
    }

    // ------------------------------------------------------------------------------------ typed access

    @SuppressWarnings("unchecked")
    public static Map<String, Object> obj(Object v, String what) {
        if (!(v instanceof Map)) {
            throw new IllegalArgumentException(what + ": expected a JSON object");
        }
        return (Map<String, Object>) v;
    }

    @SuppressWarnings("unchecked")
    public static List<Object> arr(Object v, String what) {
        if (!(v instanceof List)) {
            throw new IllegalArgumentException(what + ": expected a JSON array");
        }
        return (List<Object>) v;
    }

    public static String str(Object v, String what) {
        if (!(v instanceof String)) {
            throw new IllegalArgumentException(what + ": expected a JSON string");
        }
        return (String) v;
    }

    public static long integer(Object v, String what) {
        if (v instanceof Long) {
            return (Long) v;
        }
        if (v instanceof Double && ((Double) v) == Math.rint((Double) v)) {
            return (long) (double) (Double) v;
        }
        throw new IllegalArgumentException(what + ": expected an integer");
    }

    public static double number(Object v, String what) {
        if (v instanceof Number) {
            return ((Number) v).doubleValue();
        }
        throw new IllegalArgumentException(what + ": expected a number");
    }

    // ------------------------------------------------------------------------------------ parser

    private IllegalArgumentException error(String msg) {
        return new IllegalArgumentException("invalid JSON at offset " + i + ": " + msg);
    }

    private void ws() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                i++;
            } else {
                break;
            }
        }
    }

    private Object value() {
        if (i >= s.length()) {
            throw error("unexpected end of input");
        }
        char c = s.charAt(i);
        switch (c) {
            case '{':
                return object();
            case '[':
                return array();
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                // Python's json.dumps writes these for non-finite floats
                if (s.startsWith("NaN", i)) {
                    i += 3;
                    return Double.NaN;
                }
                if (s.startsWith("Infinity", i)) {
                    i += 8;
                    return Double.POSITIVE_INFINITY;
                }
                throw error("unexpected character '" + c + "'");
        }
    }

    private Object literal(String word, Object v) {
        if (!s.startsWith(word, i)) {
            throw error("expected " + word);
        }
        i += word.length();
        return v;
    }

    private Map<String, Object> object() {
        Map<String, Object> m = new LinkedHashMap<>();
        i++; // {
        ws();
        if (i < s.length() && s.charAt(i) == '}') {
            i++;
            return m;
        }
        while (true) {
            ws();
            if (i >= s.length() || s.charAt(i) != '"') {
                throw error("expected a string key");
            }
            String k = string();
            ws();
            expect(':');
            ws();
            m.put(k, value());
            ws();
            if (i < s.length() && s.charAt(i) == ',') {
                i++;
                continue;
            }
            expect('}');
            return m;
        }
    }

    private List<Object> array() {
        List<Object> a = new ArrayList<>();
        i++; // [
        ws();
        if (i < s.length() && s.charAt(i) == ']') {
            i++;
            return a;
        }
        while (true) {
            ws();
            a.add(value());
            ws();
            if (i < s.length() && s.charAt(i) == ',') {
                i++;
                continue;
            }
            expect(']');
            return a;
        }
    }

    private void expect(char c) {
        if (i >= s.length() || s.charAt(i) != c) {
            throw error("expected '" + c + "'");
        }
        i++;
    }

    private String string() {
        i++; // opening quote
        StringBuilder b = new StringBuilder();
        while (true) {
            if (i >= s.length()) {
                throw error("unterminated string");
            }
            char c = s.charAt(i++);
            if (c == '"') {
                return b.toString();
            }
            if (c == '\\') {
                if (i >= s.length()) {
                    throw error("unterminated escape");
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"': b.append('"'); break;
                    case '\\': b.append('\\'); break;
                    case '/': b.append('/'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u':
                        if (i + 4 > s.length()) {
                            throw error("short \\u escape");
                        }
                        try {
                            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException ex) {
                            throw error("bad \\u escape");
                        }
                        i += 4;
                        break;
                    default:
                        throw error("bad escape \\" + e);
                }
            } else if (c < 0x20) {
                throw error("control character in string");
            } else {
                b.append(c);
            }
        }
    }

    private Object number() {
        int start = i;
        if (s.charAt(i) == '-') {
            i++;
            if (s.startsWith("Infinity", i)) {
                i += 8;
                return Double.NEGATIVE_INFINITY;
            }
        }
        boolean isInt = true;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c >= '0' && c <= '9') {
                i++;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                isInt = false;
                i++;
            } else {
                break;
            }
        }
        String t = s.substring(start, i);
        try {
            if (isInt) {
                try {
                    return Long.parseLong(t);
                } catch (NumberFormatException big) {
                    return Double.parseDouble(t);
                }
            }
            return Double.parseDouble(t);
        } catch (NumberFormatException ex) {
            throw error("bad number " + t);
        }
    }
}
