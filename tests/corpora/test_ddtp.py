"""The DDTP builder on hand-written apt lists (no network, no real /var/lib/apt/lists)."""
import bz2
import gzip
import hashlib
import json
import lzma
import shutil
import subprocess

import pytest

from lwx_edge.data.ddtp import build_ddtp, description_md5, find_lists, parse_description, read_index, split_of, stanzas
from lwx_edge.errors import CorpusError


def test_split_of_matches_the_md5_rule():
    # hand computation: int(md5(name).hexdigest(), 16) % 10 -> test {0,1}, dev {2,3}, train otherwise
    known = {"libreoffice": "test", "grep": "test", "dpkg": "dev", "util-linux": "dev", "coreutils": "train",
             "vlc": "train"}
    for name, split in known.items():
        h = int(hashlib.md5(name.encode()).hexdigest(), 16) % 10
        assert split_of(name) == split == ("test" if h in (0, 1) else "dev" if h in (2, 3) else "train")
    counts = {s: sum(split_of(f"pkg{i}") == s for i in range(2000)) for s in ("train", "dev", "test")}
    assert 1000 < counts["train"] < 1400 and 300 < counts["dev"] < 500 and 300 < counts["test"] < 500


def test_parse_description_paragraphs():
    short, paras = parse_description("An editor\n Line one\n continues.\n .\n  * item\n .\n Second\tpart.")
    assert short == "An editor" and paras == ["Line one continues.", "* item", "Second part."]
    assert parse_description("Only a short one") == ("Only a short one", [])


def test_stanzas_keep_continuation_lines_for_the_md5():
    recs = list(stanzas("Package: a\nDescription-en: Short\n Long line.\n .\n More.\n\n\nPackage: b\n"))
    assert recs == [{"Package": "a", "Description-en": "Short\n Long line.\n .\n More."}, {"Package": "b"}]
    assert description_md5(recs[0]["Description-en"]) == hashlib.md5(b"Short\n Long line.\n .\n More.\n").hexdigest()


def test_read_index_every_compression(tmp_path):
    text = "Package: a\nDescription-md5: x\n\n"
    (tmp_path / "l_Packages").write_text(text)
    (tmp_path / "l_Packages.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "l_Packages.xz").write_bytes(lzma.compress(text.encode()))
    (tmp_path / "l_Packages.bz2").write_bytes(bz2.compress(text.encode()))
    for ext in ("", ".gz", ".xz", ".bz2"):
        assert read_index(tmp_path / f"l_Packages{ext}") == text
    if shutil.which("lz4"):
        subprocess.run(["lz4", "-q", "-f", str(tmp_path / "l_Packages"), str(tmp_path / "l_Packages.lz4")], check=True)
        assert read_index(tmp_path / "l_Packages.lz4") == text
    bad = tmp_path / "broken_Packages.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(CorpusError, match="broken_Packages.gz: cannot read"):
        read_index(bad)
    with pytest.raises(CorpusError, match="no such apt list"):
        read_index(tmp_path / "gone_Packages")


def test_find_lists_takes_one_file_per_list(tmp_path):
    for name in ("a_main_binary-amd64_Packages", "a_main_binary-amd64_Packages.lz4", "b_main_binary-i386_Packages.gz",
                 "a_main_i18n_Translation-fr.gz", "a_main_i18n_Translation-fr_CA", "a_main_binary-amd64_Packages.diff_Index"):
        (tmp_path / name).write_text("")
    assert [p.name for p in find_lists(tmp_path, "Packages")] == ["a_main_binary-amd64_Packages",
                                                                   "b_main_binary-i386_Packages.gz"]
    assert [p.name for p in find_lists(tmp_path, "Translation-fr")] == ["a_main_i18n_Translation-fr.gz"]


def _source_in(split, prefix="src"):
    return next(f"{prefix}{i}" for i in range(1000) if split_of(f"{prefix}{i}") == split)


@pytest.fixture
def lists(tmp_path):
    train, test, dev = _source_in("train"), _source_in("test"), _source_in("dev", "solo")
    solo_desc = "A solo tool\n It does one thing."
    solo_md5 = description_md5(solo_desc)
    d = tmp_path / "lists"
    d.mkdir()
    (d / "x_main_binary-amd64_Packages").write_text(
        f"Package: ed1\nSource: {train} (1.0)\nSection: editors\nDescription: A text editor\nDescription-md5: m1\n\n"
        f"Package: ed1-doc\nSource: {train}\nSection: doc\nDescription-md5: m2\n\n"
        f"Package: ed1-extra\nSource: {train}\nSection: contrib/editors\nDescription-md5: m1\n\n"
        f"Package: game\nSource: {test}\nSection: contrib/games\nDescription-md5: m3\n\n"
        f"Package: {dev}\nSection: utils\nDescription: {solo_desc}\n\n"  # no Source, no Description-md5
        "Package: manpages-fr\nSection: doc\nDescription-md5: m4\n\n")
    (d / "x_main_i18n_Translation-en").write_text(
        "Package: ed1\nDescription-md5: m1\nDescription-en: A text editor\n It edits text files.\n .\n"
        " It is small\n and fast.\n .\n  *\n\n"
        "Package: ed1-doc\nDescription-md5: m2\nDescription-en: Documentation of ed1\n\n"
        "Package: game\nDescription-md5: m3\nDescription-en: A puzzle game\n Solve puzzles.\n .\n Many levels.\n\n"
        f"Package: {dev}\nDescription-md5: {solo_md5}\nDescription-en: {solo_desc}\n\n"
        "Package: manpages-fr\nDescription-md5: m4\nDescription-en: French manual pages\n\n")
    (d / "x_main_i18n_Translation-fr.gz").write_bytes(gzip.compress((
        "Package: ed1\nDescription-md5: m1\nDescription-fr: Un éditeur de texte\n Il modifie des fichiers.\n"
        " .\n Il est petit\n et rapide.\n .\n  *\n\n"
        "Package: game\nDescription-md5: m3\nDescription-fr: Un jeu de réflexion\n Des énigmes sur\n beaucoup de niveaux.\n\n"
        f"Package: {dev}\nDescription-md5: {solo_md5}\nDescription-fr: Un outil seul\n Il fait une chose.\n\n"
        "Package: gone\nDescription-md5: m9\nDescription-fr: Paquet disparu\n\n"
        "Package: manpages-fr\nDescription-md5: m4\nDescription-fr: Pages de manuel en français\n\n").encode()))
    (d / "x_main_i18n_Translation-de.xz").write_bytes(lzma.compress(
        "Package: ed1\nDescription-md5: m1\nDescription-de: Ein Texteditor\n Er bearbeitet Textdateien.\n\n".encode()))
    return d, {"train": train, "test": test, "dev": dev}


def test_build_ddtp_on_hand_written_lists(lists, tmp_path):
    d, src = lists
    out = tmp_path / "out"
    summary = build_ddtp(d, out, langs=("fr", "de"), progress=False)
    read = lambda name: (out / name).read_text(encoding="utf-8").splitlines()  # noqa: E731
    assert read("train.en-fr.tsv") == ["A text editor\tUn éditeur de texte",
                                       "It edits text files.\tIl modifie des fichiers.",
                                       "It is small and fast.\tIl est petit et rapide."]  # "*" paragraph skipped
    assert read("train.en-de.tsv") == ["A text editor\tEin Texteditor"]  # 1 vs 3 paragraphs: short only
    assert read("test.en-fr.tsv") == ["A puzzle game\tUn jeu de réflexion"]  # 2 vs 1 paragraphs
    assert read("dev.en-fr.tsv") == ["A solo tool\tUn outil seul", "It does one thing.\tIl fait une chose."]
    assert read("dev.en-de.tsv") == [] and read("test.en-de.tsv") == []

    docs = {s: [json.loads(x) for x in read(f"{s}.docs.jsonl")] for s in ("train", "dev", "test")}
    assert [(r["md5"], r["package"], r["source"], r["section"]) for r in docs["train"]] == [
        ("m1", "ed1", src["train"], "editors"), ("m2", "ed1-doc", src["train"], "doc")]  # m1 once
    m1 = docs["train"][0]
    assert m1["short"] == {"en": "A text editor", "fr": "Un éditeur de texte", "de": "Ein Texteditor"}
    assert m1["long"] == {"en": "It edits text files.\nIt is small and fast.\n*",
                          "fr": "Il modifie des fichiers.\nIl est petit et rapide.\n*",
                          "de": "Er bearbeitet Textdateien."}
    assert docs["train"][1]["short"] == {"en": "Documentation of ed1"} and "long" in docs["train"][1]
    assert [(r["package"], r["section"]) for r in docs["test"]] == [("game", "games")]  # contrib/ stripped
    assert [(r["source"], r["section"]) for r in docs["dev"]] == [(src["dev"], "utils")]  # source = package
    for split, records in docs.items():  # one source, one split
        assert all(split_of(r["source"]) == split for r in records)
    everything = "".join((out / f.name).read_text() for f in out.iterdir())
    assert "manuel" not in everything and "manual pages" not in everything and "disparu" not in everything

    assert summary["train"]["en-fr"] == {"pairs": 3, "descriptions": 1, "aligned_long": 1, "unaligned_long": 0}
    assert summary["train"]["en-de"]["unaligned_long"] == 1
    assert summary["train"]["docs"] == 2 and summary["train"]["labels"]["editors"] == 1
    assert summary["test"]["labels"]["games"] == 1
    assert summary["skipped"]["no_package_fr"] == 1 and summary["skipped"]["manpages_packages"] == 1
    assert json.loads((out / "summary.json").read_text())["train"] == summary["train"]
    assert not [f for f in out.iterdir() if f.name.endswith(".tmp")]  # atomic writes leave no temp files


def test_build_ddtp_needs_lists(tmp_path):
    with pytest.raises(CorpusError, match="no .*Packages lists.*apt-get update"):
        build_ddtp(tmp_path, tmp_path / "out", progress=False)
    (tmp_path / "x_binary-amd64_Packages").write_text("Package: a\nDescription-md5: m\n\n")
    with pytest.raises(CorpusError, match="no .*Translation-en"):
        build_ddtp(tmp_path, tmp_path / "out", progress=False)
