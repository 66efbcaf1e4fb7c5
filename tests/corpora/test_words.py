"""Frequent-word lists for word-level distillation (lwx_edge.data.words)."""
import shutil
import sys

import pytest

from lwx_edge.data import words as wd
from lwx_edge.errors import CorpusError


def test_cased_forms_keep_lower_case_words_and_capitalise_the_rest():
    forms = wd.cased_forms(["Leistung", "Paris", "paris", "Honig", "überall"])
    assert forms == {"leistung": "Leistung", "paris": "paris", "honig": "Honig", "überall": "überall"}


def test_frequent_words_are_alphabetic_ranked_distinct_and_cased():
    en = wd.frequent_words("en", 3000)
    assert len(en) == 3000 and len(set(en)) == 3000
    assert en[:3] == ["the", "to", "and"]
    assert all(w.isalpha() and len(w) >= 2 for w in en)
    de = wd.frequent_words("de", 3000, {"leistung": "Leistung"})
    assert "Leistung" in de and "leistung" not in de and "überall" in de


def test_frequent_words_without_wordfreq_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "wordfreq", None)
    with pytest.raises(CorpusError, match=r"lwx-edge\[data\]"):
        wd.frequent_words("en", 10)


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb (a Debian system) needed")
def test_build_words_writes_one_file_per_language_cased_by_its_word_list(tmp_path, monkeypatch):
    from test_gettext import _make_deb

    work = tmp_path / "debs"
    work.mkdir()
    debs = {pkg: _make_deb(work, pkg, pkg, {}, {f"usr/share/dict/{pkg}": "Leistung\nHaus\nParis\n" if lang == "de"
                                                else "Paris\n"})
            for pkg, lang in wd.WORDLISTS.items()}
    monkeypatch.setattr(wd, "download_debs", lambda pkgs, d, progress=True: ({p: debs[p] for p in pkgs}, []))
    summary = wd.build_words(tmp_path / "words", work, per_lang=2000, progress=False)
    assert sorted(p.name for p in (tmp_path / "words").iterdir()) == [
        "summary.json", "train.de.txt", "train.en.txt", "train.es.txt", "train.fr.txt", "train.it.txt"]
    de = (tmp_path / "words" / "train.de.txt").read_text().split("\n")[:-1]
    assert len(de) == 2000 and "Haus" in de and "haus" not in de and de[:2] == ["die", "der"]
    assert summary["de"] == {"words": 2000, "cased_from_word_list": sum(w != w.lower() for w in de)}
    assert summary["de"]["cased_from_word_list"] >= 2


def test_build_words_names_the_packages_apt_could_not_fetch(tmp_path, monkeypatch):
    monkeypatch.setattr(wd, "download_debs", lambda pkgs, d, progress=True: ({}, ["wngerman"]))
    with pytest.raises(CorpusError, match="apt-get download failed for wngerman"):
        wd.build_words(tmp_path / "words", tmp_path, progress=False)
    assert not (tmp_path / "words").exists()
