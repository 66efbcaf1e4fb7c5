package ai.lwxedge.core;

import java.text.Normalizer;
import java.util.Locale;

/**
 * Java port of {@code lwx_edge.text.normalize}: NFKC, typographic quotes/dashes/spaces to ASCII, runs of
 * whitespace collapsed to one space, stripped, lowercased. Applied before SentencePiece.
 *
 * <p>Python's {@code \s} / {@code str.isspace()} set is reproduced exactly ({@link #isPythonSpace}), which is
 * wider than Java's {@code Character.isWhitespace} (it includes U+0085, U+00A0, U+2007, U+202F and
 * U+001C..U+001F). Lowercasing is CPython's {@code str.lower()} ({@link #pythonLower}): the full Unicode
 * mapping (U+0130 to "i" + U+0307) and CPython's Final_Sigma rule. The two runtimes may ship different
 * Unicode versions (Java 17: 13.0; CPython 3.11: 14.0), which matters only for characters added since.
 */
public final class TextNormalizer {
    private TextNormalizer() {
    }

    /** lwx_edge.text._TYPOGRAPHIC: char to replacement, or null. */
    static String typographic(char c) {
        switch (c) {
            case '\u2018': case '\u2019': case '\u201a': case '\u201b': case '\u2032':
            case '\u2039': case '\u203a':
                return "'";
            case '\u201c': case '\u201d': case '\u201e': case '\u201f': case '\u00ab': case '\u00bb':
                return "\"";
            case '\u2013': case '\u2014': case '\u2212': case '\u2010': case '\u2011':
                return "-";
            case '\u2026':
                return "...";
            case '\u00a0': case '\u202f': case '\u2009': case '\u22c5':
                return " ";
            default:
                return null;
        }
    }

    /** Exactly the code points for which CPython's {@code str.isspace()} (and {@code re}'s {@code \s}) is true. */
    public static boolean isPythonSpace(int cp) {
        if (cp >= 0x09 && cp <= 0x0d) {
            return true;
        }
        if (cp >= 0x1c && cp <= 0x20) {
            return true;
        }
        switch (cp) {
            case 0x85: case 0xa0: case 0x1680: case 0x2028: case 0x2029: case 0x202f: case 0x205f: case 0x3000:
                return true;
            default:
                return cp >= 0x2000 && cp <= 0x200a;
        }
    }

    /** {@code normalize(text, lower=True)}. */
    public static String normalize(String text) {
        return normalize(text, true);
    }

    public static String normalize(String text, boolean lower) {
        String t = Normalizer.normalize(text, Normalizer.Form.NFKC);
        StringBuilder tr = new StringBuilder(t.length());
        for (int k = 0; k < t.length(); k++) {
            char c = t.charAt(k);
            String r = typographic(c);
            if (r != null) {
                tr.append(r);
            } else {
                tr.append(c);
            }
        }
        // re.sub(r"\s+", " ", text).strip()
        StringBuilder out = new StringBuilder(tr.length());
        boolean inSpace = false;
        for (int k = 0; k < tr.length(); ) {
            int cp = tr.codePointAt(k);
            k += Character.charCount(cp);
            if (isPythonSpace(cp)) {
                inSpace = true;
                continue;
            }
            if (inSpace && out.length() > 0) {
                out.append(' ');
            }
            inSpace = false;
            out.appendCodePoint(cp);
        }
        String s = out.toString();
        return lower ? pythonLower(s) : s;
    }

    /**
     * CPython's {@code str.lower()}: the full Unicode lowercase mapping of each code point
     * ({@code toLowerCase(Locale.ROOT)} is context-free for every character but U+03A3), and for capital sigma
     * CPython's Final_Sigma rule ({@code handle_capital_sigma} in unicodeobject.c): "ς" when preceded by a
     * cased character and not followed by one, case-ignorable characters skipped in both directions. Java's
     * own rule looks for word boundaries instead and differs on mixed-script text, so it is not used.
     */
    public static String pythonLower(String s) {
        if (s.indexOf('\u03a3') < 0) {
            return s.toLowerCase(Locale.ROOT);
        }
        StringBuilder b = new StringBuilder(s.length());
        for (int k = 0; k < s.length(); ) {
            int cp = s.codePointAt(k);
            if (cp == 0x3a3) {
                b.append(finalSigma(s, k) ? '\u03c2' : '\u03c3');
            } else {
                b.append(new String(Character.toChars(cp)).toLowerCase(Locale.ROOT));
            }
            k += Character.charCount(cp);
        }
        return b.toString();
    }

    private static boolean finalSigma(String s, int i) {
        int j = i;
        int c = 0;
        boolean found = false;
        while (j > 0) {
            c = s.codePointBefore(j);
            j -= Character.charCount(c);
            if (!isCaseIgnorable(c)) {
                found = true;
                break;
            }
        }
        boolean fin = found && isCased(c);
        if (fin) {
            j = i + 1; // U+03A3 is one UTF-16 unit
            while (j < s.length()) {
                c = s.codePointAt(j);
                if (!isCaseIgnorable(c)) {
                    return !isCased(c);
                }
                j += Character.charCount(c);
            }
        }
        return fin;
    }

    /** Unicode "Cased": Lowercase, Uppercase (with their Other_ contributions) or Lt. */
    public static boolean isCased(int cp) {
        return Character.isLowerCase(cp) || Character.isUpperCase(cp) || Character.isTitleCase(cp);
    }

    /** Unicode "Case_Ignorable": Mn, Me, Cf, Lm, Sk, or Word_Break MidLetter / MidNumLet / Single_Quote. */
    public static boolean isCaseIgnorable(int cp) {
        switch (Character.getType(cp)) {
            case Character.NON_SPACING_MARK: case Character.ENCLOSING_MARK: case Character.FORMAT:
            case Character.MODIFIER_LETTER: case Character.MODIFIER_SYMBOL:
                return true;
            default:
                break;
        }
        switch (cp) {
            case 0x27: case 0x2e: case 0x3a: case 0xb7: case 0x387: case 0x55f: case 0x5f4: case 0x2018: case 0x2019:
            case 0x2024: case 0x2027: case 0xfe13: case 0xfe52: case 0xfe55: case 0xff07: case 0xff0e: case 0xff1a:
                return true;
            default:
                return false;
        }
    }
}
