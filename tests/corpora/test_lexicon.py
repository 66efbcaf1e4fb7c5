"""Words and short names with their translations (lwx_edge.data.lexicon)."""
import gzip
import json
import shutil
import sys

import pytest

from lwx_edge.data import lexicon as lx
from lwx_edge.errors import CorpusError


def test_emoji_names_pair_the_cldr_names_without_skin_tones_or_flags():
    names = lx.emoji_names(["fr", "de"])
    fr, de = dict(names["fr"]), dict(names["de"])
    assert fr["red apple"] == "pomme rouge" and de["red apple"] == "roter apfel"
    assert len(names["fr"]) == len(names["de"]) > 1500
    assert not any("skin tone" in en for en, _ in names["fr"])
    assert not any(xx.startswith("drapeau ") and "flag" not in en for en, xx in names["fr"])   # no "Wales"


def test_cldr_names_pair_countries_days_months_and_units():
    fr = set(lx.cldr_names(["fr"])["fr"])
    assert {("Germany", "Allemagne"), ("Monday", "lundi"), ("January", "janvier"),
            ("kilometers", "kilomètres")} <= fr
    assert not any("{" in en or "{" in xx for en, xx in fr)


def _dictd(entries: list[str]) -> tuple[str, bytes]:
    """A dictd .index and .dict holding ``entries``, offsets in dictd's base-64 digits."""
    def digits(n: int) -> str:
        s = ""
        while True:
            s = lx._DICTD_B64[n % 64] + s
            n //= 64
            if not n:
                return s

    data, index, offset = b"info", [f"00databaseinfo\t{digits(0)}\t{digits(4)}"], 4
    for text in entries:
        raw = text.encode("utf-8")
        index.append(f"{text.split()[0]}\t{digits(offset)}\t{digits(len(raw))}")
        data += raw
        offset += len(raw)
    return "\n".join(index) + "\n", data


def test_dictd_entries_keep_the_first_alternative_of_the_first_sense():
    index, data = _dictd(["cinta /θˈinta/\n1. bond, tie\n2. ribbon\n", "carro /kˈaro/\ncart, chariot\n",
                          "Asie /azi/ <n>\nAsia\n", "vide /vid/\n"])
    assert list(lx.dictd_entries(index, data)) == [("cinta", "bond"), ("carro", "cart"), ("Asie", "Asia")]


def test_ding_words_keep_one_word_senses_and_drop_phrases_and_symbols():
    text = ("# comment\nFurcht {f}; Angst {f} :: fear; dread\n"
            "Haus {n} | Häuser {pl} :: house | houses\n"
            "worunter :: + which/what\n"
            "Guten Morgen! :: Good morning!\n")
    assert list(lx.ding_words(text)) == [("fear", "Furcht"), ("house", "Haus")]


def test_most_frequent_ranks_by_the_english_side_and_keeps_each_once():
    pairs = [("xylophone", "Xylophon"), ("house", "Haus"), ("House", "Gebäude"), ("water", "Wasser")]
    assert lx.most_frequent(pairs, 2) == [("house", "Haus"), ("water", "Wasser")]


def test_the_lexicon_names_a_missing_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "emoji", None)
    with pytest.raises(CorpusError, match=r"needs emoji: pip install 'lwx-edge\[data\]'"):
        lx.emoji_names()


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb (a Debian system) needed")
def test_build_lexicon_writes_one_file_per_language_from_every_source(tmp_path, monkeypatch):
    from test_gettext import _make_deb

    work = tmp_path / "debs"
    work.mkdir()
    debs = {lx.DING: _make_deb(work, lx.DING, "trans-de-en", {}, {
        "usr/share/trans/de-en": "Furcht {f} :: fear\nHaus {n} :: house\nAuto {n} :: auto\n"})}
    packed = {}
    for lang, pkg in lx.FREEDICT.items():
        index, data = _dictd([f"wort{lang} /x/\nword {lang}\n"])
        debs[pkg] = _make_deb(work, pkg, pkg, {}, {f"usr/share/dictd/freedict-{lang}.index": index})
        packed[debs[pkg]] = gzip.compress(data)                 # binary: served beside the package's files
    monkeypatch.setattr(lx, "download_debs", lambda pkgs, d, progress=True: ({p: debs[p] for p in pkgs}, []))
    real_files = lx.deb_files

    def deb_files(deb, wanted):
        yield from real_files(deb, wanted)
        if deb in packed and wanted("usr/share/dictd/x.dict.dz"):
            yield "usr/share/dictd/x.dict.dz", packed[deb]
    monkeypatch.setattr(lx, "deb_files", deb_files)
    summary = lx.build_lexicon(tmp_path / "lexicon", work, progress=False)
    out = tmp_path / "lexicon"
    assert sorted(p.name for p in out.iterdir()) == [
        "summary.json", "train.en-de.tsv", "train.en-es.tsv", "train.en-fr.tsv", "train.en-it.tsv"]
    de = [line.split("\t") for line in (out / "train.en-de.tsv").read_text().splitlines()]
    assert ["fear", "Furcht"] in de and ["house", "Haus"] in de
    assert ["auto", "Auto"] not in de                       # the same word on both sides teaches nothing
    assert ["red apple", "roter apfel"] in de and ["Germany", "Deutschland"] in de
    fr = [line.split("\t") for line in (out / "train.en-fr.tsv").read_text().splitlines()]
    assert ["word fr", "wortfr"] in fr
    assert summary == json.loads((out / "summary.json").read_text())
    assert summary["sources"]["ding"]["de"] == 3 and summary["sources"]["freedict"]["fr"] == 1
    assert summary["pairs"]["de"] == len(de)


def test_build_lexicon_names_the_packages_apt_could_not_fetch(tmp_path, monkeypatch):
    monkeypatch.setattr(lx, "download_debs", lambda pkgs, d, progress=True: ({}, ["dict-freedict-ita-eng"]))
    with pytest.raises(CorpusError, match="apt-get download failed for dict-freedict-ita-eng"):
        lx.build_lexicon(tmp_path / "lexicon", tmp_path, progress=False)
    assert not (tmp_path / "lexicon").exists()
