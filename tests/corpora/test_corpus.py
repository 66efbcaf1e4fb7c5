"""Corpus readers, stats, the pair filter and the monolingual builder (hand-made inputs, no network)."""
import gzip
import json

import pytest

from lwx_edge.data.corpus import (
    CorpusStats,
    Pair,
    PairFilter,
    allowed_chars,
    filter_pairs,
    langs_from_name,
    read_aligned,
    read_parallel,
    read_tsv,
    text_drop_reason,
)
from lwx_edge.data.mono import build_mono, read_mono
from lwx_edge.errors import CorpusError

# ------------------------------------------------------------------------------------------------ readers


def test_tsv_plain_gz_and_given_languages(tmp_path):
    p = tmp_path / "x.en-fr.tsv"
    p.write_text("Hello\tBonjour\n\nCat\tChat\r\n", encoding="utf-8")
    g = tmp_path / "y.en-de.tsv.gz"
    g.write_bytes(gzip.compress("Dog\tHund\nThe  big\t dog\n".encode()))
    assert list(read_parallel(p)) == [Pair("Hello", "Bonjour", "en", "fr"), Pair("Cat", "Chat", "en", "fr")]
    assert list(read_parallel(g)) == [Pair("Dog", "Hund", "en", "de"), Pair("The big", "dog", "en", "de")]
    # gzip is recognised by its magic bytes too, and explicit languages override the name
    disguised = tmp_path / "plain-name.txt"
    disguised.write_bytes(gzip.compress(b"Tree\tArbol\n"))
    assert list(read_tsv(disguised, "en", "es")) == [Pair("Tree", "Arbol", "en", "es")]
    with pytest.raises(CorpusError, match="'zh' is not supported"):
        list(read_tsv(disguised, "en", "zh"))


def test_aligned_files_plain_gz_and_moses_prefix(tmp_path):
    a, b = tmp_path / "c.en-it.en", tmp_path / "c.en-it.it.gz"
    a.write_text("one\ntwo\n\nthree\n", encoding="utf-8")
    b.write_bytes(gzip.compress("uno\ndue\n\ntre\n".encode()))
    got = list(read_aligned(a, b, "en", "it"))
    assert got == [Pair("one", "uno", "en", "it"), Pair("two", "due", "en", "it"), Pair("three", "tre", "en", "it")]
    b2 = tmp_path / "c.en-it.it"
    b2.write_text("uno\ndue\n\ntre\n", encoding="utf-8")
    assert list(read_parallel(tmp_path / "c.en-it")) == got  # Moses prefix: NAME.en-it.{en,it}


def test_bad_lines_are_counted_not_fatal_unless_strict(tmp_path):
    p = tmp_path / "x.en-fr.tsv"
    p.write_bytes(b"ok\td'accord\nonly one field\nbad \xff utf8\tx\n\tempty\nyes\toui\na\tb\tc\n")
    stats = CorpusStats()
    pairs = list(read_tsv(p, stats=stats))
    assert [x.src for x in pairs] == ["ok", "yes"]
    assert stats.read == 6 and stats.dropped == {"bad_line": 3, "empty": 1}
    assert stats.first_bad == ["x.en-fr.tsv:2: expected 2 tab-separated fields, got 1",
                               "x.en-fr.tsv:3: not valid UTF-8", "x.en-fr.tsv:4: empty source side",
                               "x.en-fr.tsv:6: expected 2 tab-separated fields, got 3"]
    with pytest.raises(CorpusError, match=r"^x\.en-fr\.tsv:2: expected 2 tab-separated fields, got 1$"):
        list(read_tsv(p, strict=True))
    p.write_bytes(b"ok\td'accord\nbad \xff\tx\n")
    with pytest.raises(CorpusError, match=r"x\.en-fr\.tsv:2: not valid UTF-8"):
        list(read_tsv(p, strict=True))


def test_aligned_bad_lines_and_strict(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"one\ntw\xffo\nthree\nfour\n")
    b.write_bytes(b"un\ndeux\n\nquatre\n")
    stats = CorpusStats()
    assert [p.tgt for p in read_aligned(a, b, "en", "fr", stats=stats)] == ["un", "quatre"]
    assert stats.read == 4 and stats.dropped == {"bad_line": 1, "empty": 1}
    assert stats.first_bad == ["a.txt:2: not valid UTF-8", "a.txt:3: empty target side"]
    with pytest.raises(CorpusError, match=r"a\.txt:2: not valid UTF-8"):
        list(read_aligned(a, b, "en", "fr", strict=True))


def test_aligned_files_must_have_equal_lengths(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("one\ntwo\n")
    b.write_text("un\n")
    it = read_aligned(a, b, "en", "fr")
    with pytest.raises(CorpusError, match=r"a\.txt has 2 lines but .*b\.txt has 1.*not line-aligned"):
        next(it)  # raised before the first pair, not after a partial read


def test_missing_unreadable_and_corrupt_files(tmp_path):
    with pytest.raises(CorpusError, match=r"nope\.en-fr\.tsv: no such corpus file"):
        list(read_tsv(tmp_path / "nope.en-fr.tsv"))
    d = tmp_path / "dir.en-fr.tsv"
    d.mkdir()
    with pytest.raises(CorpusError, match=r"dir\.en-fr\.tsv: cannot read"):
        list(read_tsv(d))
    g = tmp_path / "cut.en-fr.tsv.gz"
    g.write_bytes(gzip.compress(b"a\tb\n" * 1000)[:40])
    with pytest.raises(CorpusError, match=r"cut\.en-fr\.tsv\.gz: cannot read"):
        list(read_tsv(g))
    with pytest.raises(CorpusError, match="no such corpus file"):
        list(read_aligned(tmp_path / "a", tmp_path / "b", "en", "fr"))


def test_langs_from_name():
    assert langs_from_name("data/train.en-fr.tsv") == ("en", "fr")
    assert langs_from_name("dev.en-it.tsv.gz") == ("en", "it")
    assert langs_from_name("europarl.de-es") == ("de", "es")
    with pytest.raises(CorpusError, match=r"corpus\.tsv: cannot tell the languages"):
        langs_from_name("corpus.tsv")
    with pytest.raises(CorpusError, match="'zh' is not supported"):
        langs_from_name("a.en-zh.tsv")


# ---------------------------------------------------------------------------------------------- filter


def test_filter_each_reason_and_original_casing():
    p = lambda a, b, lang="fr": Pair(a, b, "en", lang)  # noqa: E731
    pairs = [p("A Text Editor", "Un Éditeur De Texte"),               # kept, casing kept
             p("a  text editor", "un éditeur de texte"),              # duplicate once normalised
             p("x", "y"),                                             # too_short
             p("a" * 2001, "b" * 2001),                               # too_long
             p("a" * 30, "b" * 100),                                  # ratio (both > 20 chars, 3.3x)
             p("OK", "D'accord, tout va bien"),                       # short side <= 20: no ratio check
             p("12345", "12345"),                                     # no_words
             p("A library", "Библиотека"),                            # charset (Cyrillic)
             p("Tab\x07bell", "Tab cloche"),                          # charset (control character)
             p("Ändern Sie die Größe", "Change the size", "de")]      # source is English: ä is fine
    stats = CorpusStats()
    kept = list(filter_pairs(pairs, PairFilter(), stats))
    assert [(k.src, k.tgt) for k in kept] == [("A Text Editor", "Un Éditeur De Texte"),
                                             ("OK", "D'accord, tout va bien"),
                                             ("Ändern Sie die Größe", "Change the size")]
    assert dict(stats.dropped) == {"duplicate": 1, "too_short": 1, "too_long": 1, "ratio": 1, "no_words": 1,
                                   "charset": 2}
    assert stats.kept == 3 and stats.total == 10
    assert stats.report().startswith("read 10 pairs, kept 3 (30.0%); dropped: charset 2, ")


def test_filter_switches_and_thresholds():
    pairs = [Pair("Same", "Même", "en", "fr"), Pair("same", "même", "en", "fr"),
             Pair("Кот", "Chat", "en", "fr")]
    assert len(list(filter_pairs(pairs, PairFilter(dedupe=False, charset=False)))) == 3
    assert len(list(filter_pairs(pairs, PairFilter(min_chars=5)))) == 0
    long_pair = [Pair("a" * 30, "b" * 100, "en", "fr")]
    assert list(filter_pairs(long_pair, PairFilter(max_ratio=3.0))) == []
    assert list(filter_pairs(long_pair, PairFilter(max_ratio=3.0, ratio_min_chars=30))) == long_pair


def test_allowed_chars_and_common_symbols():
    assert "ß" in allowed_chars("de") and "ñ" in allowed_chars("es") and "œ" in allowed_chars("fr")
    assert {"©", "°", "×", "→", "€"} <= allowed_chars("en")
    assert "ж" not in allowed_chars("fr") and "中" not in allowed_chars("it") and "\x07" not in allowed_chars("en")
    assert text_drop_reason("Copyright © 2024, 5 °C, 3 × 4 → 12", "en") is None
    assert text_drop_reason("日本語のテキスト", "en") == "charset"
    with pytest.raises(CorpusError, match="'zh' is not supported"):
        allowed_chars("zh")


def test_stats_merge_and_report():
    a = CorpusStats(read=10, kept=7)
    a.bad("a.tsv:3", "not valid UTF-8")
    a.dropped["duplicate"] += 2
    b = CorpusStats(read=1_234, kept=1_200)
    b.bad("b.tsv:17", "expected 2 tab-separated fields, got 1")
    b.dropped["charset"] += 33
    total = a + b
    a += b
    assert a == total
    assert total.read == 1_244 and total.kept == 1_207 and total.dropped == {"bad_line": 2, "duplicate": 2,
                                                                          "charset": 33}
    text = total.report()
    assert text.splitlines()[0] == ("read 1,244 pairs, kept 1,207 (97.0%); dropped: charset 33, bad_line 2, "
                                    "duplicate 2; first bad line: a.tsv:3: not valid UTF-8")
    assert text.splitlines()[1] == "  also: b.tsv:17: expected 2 tab-separated fields, got 1"


def test_reader_and_filter_share_stats(tmp_path):
    p = tmp_path / "x.en-es.tsv"
    p.write_text("Hello\tHola\nHello\tHola\nbroken line\nCat\tGato\n", encoding="utf-8")
    stats = CorpusStats()
    kept = list(filter_pairs(read_parallel(p, stats=stats), stats=stats))
    assert [k.tgt for k in kept] == ["Hola", "Gato"]
    assert stats.read == 4 == stats.kept + sum(stats.dropped.values())
    assert "read 4 pairs, kept 2 (50.0%)" in stats.report()


# ------------------------------------------------------------------------------------------------ mono


def test_mono_from_train_files_only(tmp_path):
    d, g = tmp_path / "ddtp", tmp_path / "gettext"
    d.mkdir()
    g.mkdir()
    (d / "train.en-fr.tsv").write_text("A cat\tUn chat\nA dog\tUn chien\na  cat\tun chat\n")
    (d / "test.en-fr.tsv").write_text("Secret test\tSecret de test\n")
    (d / "dev.docs.jsonl").write_text(json.dumps({"short": {"en": "Dev only"}}) + "\n")
    (d / "train.docs.jsonl").write_text(json.dumps(
        {"md5": "m", "short": {"en": "An editor", "fr": "Un éditeur"},
         "long": {"en": "First para.\nA cat", "de": "Erster Absatz."}}) + "\n")
    (g / "train.en-de.tsv").write_text("Open file\tDatei öffnen\nA dog\tEin Hund\nKey\tКлюч\n")
    summary = build_mono(tmp_path / "mono", [d, g], langs=("en", "fr", "de"))
    assert summary == {"en": 6, "fr": 3, "de": 3}
    assert list(read_mono(tmp_path / "mono" / "train.en.txt")) == [
        "A cat", "A dog", "An editor", "First para.", "Open file", "Key"]
    assert list(read_mono(tmp_path / "mono" / "train.de.txt")) == ["Erster Absatz.", "Datei öffnen", "Ein Hund"]
    assert "Secret" not in (tmp_path / "mono" / "train.fr.txt").read_text()
    info = json.loads((tmp_path / "mono" / "summary.json").read_text())
    assert info["dropped"] == {"charset": 1}
    # one directory (or none usable) is fine as long as there is a train file somewhere
    assert build_mono(tmp_path / "mono2", [g], langs=("de",)) == {"de": 2}
    with pytest.raises(CorpusError, match="no train"):
        build_mono(tmp_path / "mono3", [tmp_path / "missing"])


def test_read_mono_skips_blank_lines_and_reports_missing(tmp_path):
    f = tmp_path / "train.en.txt"
    f.write_text("one\n\n  two  \n\n")
    assert list(read_mono(f)) == ["one", "two"]
    with pytest.raises(CorpusError, match="no such monolingual file"):
        list(read_mono(tmp_path / "none.txt"))
    f.write_bytes("été\r\n".encode() + "caf\xe9\n".encode("latin-1"))  # a Latin-1 line: refused, not "caf\ufffd"
    with pytest.raises(CorpusError, match=r"train.en.txt line 2: not valid UTF-8 \(byte 0xe9\)"):
        list(read_mono(f))
