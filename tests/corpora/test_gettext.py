"""Gettext corpus: .mo reading, message cleaning, the man-page guard, the builder on local .debs. No network."""
from __future__ import annotations

import json
import shutil
import struct
import subprocess

import pytest

from lwx_edge.data import gettext as gt
from lwx_edge.errors import CorpusError

HEADER = "Content-Type: text/plain; charset=UTF-8\nPlural-Forms: nplurals=2; plural=(n > 1);\n"

# (msgid bytes as stored, msgstr bytes as stored)
ENTRIES = [
    ("", HEADER),
    ("Open File", "Ouvrir le fichier"),
    ("%d file\x00%d files", "%d fichier\x00%d fichiers"),  # plural
    ("menu\x04Quit", "Quitter"),  # context
    ("Untranslated", ""),  # empty translation
]


def write_mo(path, entries, byteorder="<"):
    """A minimal GNU .mo writer (no hash table), enough for read_mo and for stdlib gettext."""
    entries = sorted((k.encode("utf-8"), v.encode("utf-8")) for k, v in entries)
    n = len(entries)
    orig_off, trans_off = 28, 28 + 8 * n
    data_off = 28 + 16 * n
    blob = b""
    orig_tab, trans_tab = [], []
    for k, _ in entries:
        orig_tab.append((len(k), data_off + len(blob)))
        blob += k + b"\x00"
    for _, v in entries:
        trans_tab.append((len(v), data_off + len(blob)))
        blob += v + b"\x00"
    out = struct.pack(byteorder + "7I", 0x950412DE, 0, n, orig_off, trans_off, 0, data_off)
    for length, off in orig_tab + trans_tab:
        out += struct.pack(byteorder + "2I", length, off)
    path.write_bytes(out + blob)
    return path


EXPECTED = [("%d file", "%d fichier"), ("Open File", "Ouvrir le fichier"), ("Quit", "Quitter")]


@pytest.mark.parametrize("byteorder", ["<", ">"])
def test_read_mo_header_plural_context_empty(tmp_path, byteorder):
    mo = write_mo(tmp_path / "x.mo", ENTRIES, byteorder)
    got = sorted(gt.read_mo(mo))
    assert got == EXPECTED


def test_test_writer_agrees_with_stdlib_gettext(tmp_path):
    import gettext as stdlib

    mo = write_mo(tmp_path / "x.mo", ENTRIES)
    with open(mo, "rb") as f:
        t = stdlib.GNUTranslations(f)
    assert t.gettext("Open File") == "Ouvrir le fichier"
    assert t.ngettext("%d file", "%d files", 1) == "%d fichier"
    assert t.pgettext("menu", "Quit") == "Quitter"


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="msgfmt (Debian package gettext) not installed")
def test_read_mo_on_msgfmt_output(tmp_path):
    po = tmp_path / "x.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
        '"Plural-Forms: nplurals=2; plural=(n > 1);\\n"\n\n'
        'msgid "Open File"\nmsgstr "Ouvrir le fichier"\n\n'
        'msgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] "%d fichier"\nmsgstr[1] "%d fichiers"\n\n'
        'msgctxt "menu"\nmsgid "Quit"\nmsgstr "Quitter"\n\n'
        'msgid "Untranslated"\nmsgstr ""\n', encoding="utf-8")
    mo = tmp_path / "x.mo"
    subprocess.run(["msgfmt", "-o", str(mo), str(po)], check=True)
    assert sorted(gt.read_mo(mo)) == EXPECTED


def test_read_mo_latin1_charset(tmp_path):
    mo = tmp_path / "l1.mo"
    # write raw latin-1 bytes for the translation
    entries = [(b"", b"Content-Type: text/plain; charset=ISO-8859-1\n"), (b"Delete", "Löschen".encode("latin-1"))]
    n = len(entries)
    blob, tabs = b"", []
    for k, _ in entries:
        tabs.append((len(k), 28 + 16 * n + len(blob)))
        blob += k + b"\x00"
    for _, v in entries:
        tabs.append((len(v), 28 + 16 * n + len(blob)))
        blob += v + b"\x00"
    head = struct.pack("<7I", 0x950412DE, 0, n, 28, 28 + 8 * n, 0, 0)
    mo.write_bytes(head + b"".join(struct.pack("<2I", *t) for t in tabs) + blob)
    assert list(gt.read_mo(mo)) == [("Delete", "Löschen")]


def test_read_mo_rejects_garbage(tmp_path):
    bad = tmp_path / "bad.mo"
    bad.write_bytes(b"not a catalog at all, just text")
    with pytest.raises(CorpusError):
        list(gt.read_mo(bad))


@pytest.mark.parametrize("raw, want", [
    ("_File", "File"),
    ("Save _As…", "Save As…"),
    ("E_xit", "Exit"),
    ("&Open", "Open"),
    ("Rock && Roll", "Rock & Roll"),
    ("Line one\nline\ttwo  three", "Line one line two three"),
    ("<b>Bold</b> &amp; plain", "Bold & plain"),
    ("Copying %d of %d files", "Copying %d of %d files"),
    ("Could not open “%s”: %s", "Could not open “%s”: %s"),
])
def test_clean_message_keeps_and_cleans(raw, want):
    assert gt.clean_message(raw) == want


@pytest.mark.parametrize("raw", [
    "OK", "No", "%s", "%s: %s (%d)", "%s of %s", "{0}", "${name}", "%(count)d", "%1$s %2$s",
    "/usr/share/locale", "--verbose", "-h", "foo_bar_baz", "LC_ALL", "org.gnome.desktop", "GtkWidget::show",
    "   ", "\n",
])
def test_clean_message_drops(raw):
    assert gt.clean_message(raw) is None


def test_clean_message_output_is_one_line():
    out = gt.clean_message("First line.\n\tSecond\tline.\r\n")
    assert out == "First line. Second line."
    assert "\t" not in out and "\n" not in out


@pytest.mark.parametrize("pkgs", [("coreutils", "manpages-fr"), ("manpages-l10n",), ("de-manpages",)])
def test_manpages_guard(pkgs, tmp_path):
    with pytest.raises(CorpusError, match="manpages"):
        gt.build_gettext(out_dir=tmp_path / "out", packages=pkgs, work_dir=tmp_path / "debs", progress=False)
    assert not (tmp_path / "debs").exists()  # refused before downloading anything


def test_default_packages_have_no_manpages():
    assert gt.DEFAULT_PACKAGES and not any("manpages" in p for p in gt.DEFAULT_PACKAGES)
    assert len(set(gt.DEFAULT_PACKAGES)) == len(gt.DEFAULT_PACKAGES)


# ------------------------------------------------------------------------------- entries, cleaning, build


@pytest.mark.parametrize("msgid, msgstr, want", [
    ("_Open File", "_Ouvrir le fichier", ("Open File", "Ouvrir le fichier")),
    ("Sa~ve Document", "Enre~gistrer le document", ("Save Document", "Enregistrer le document")),  # LibreOffice
    ("Copy the files to ~/Documents", "Copier les fichiers dans ~/Documents",
     ("Copy the files to ~/Documents", "Copier les fichiers dans ~/Documents")),  # "~/" is a path, kept
    ("Set LC_ALL for this session", "Définir LC_ALL pour cette session",
     ("Set LC_ALL for this session", "Définir LC_ALL pour cette session")),  # identifiers keep their "_"
    ("Cannot open %s: %s", "Impossible d'ouvrir %s : %s", ("Cannot open %s: %s", "Impossible d'ouvrir %s : %s")),
    ("Delete $(ARG1)?", "Supprimer $(ARG1) ?", ("Delete $(ARG1)?", "Supprimer $(ARG1) ?")),
    ("Description", "Description", None),            # untranslated copy
    ("Tsikimba", "tsikimba", None),                    # copy up to case (iso-codes language names)
    ("translator-credits", "Jean Dupont <jd@example.org>", None),
    ("calendar:week_start:0", "calendar:week_start:1", None),
    ("%s: %s: line %d", "%s : %s : ligne %d", None),  # placeholder-heavy
    ("%1 of %2", "%1 sur %2", None),
    ("Go", "Aller", None),                             # fewer than 3 letters
    ("Open", "--open", None),                          # the translation is not prose
])
def test_clean_entry(msgid, msgstr, want):
    assert gt.clean_entry(msgid, msgstr) == want


def test_parse_mo_errors_name_the_catalog(tmp_path):
    data = write_mo(tmp_path / "x.mo", ENTRIES).read_bytes()
    with pytest.raises(CorpusError, match=r"pkg\.deb:fr/x: truncated"):
        list(gt.parse_mo(data[:60], "pkg.deb:fr/x"))
    with pytest.raises(CorpusError, match="no such .mo file"):
        list(gt.read_mo(tmp_path / "missing.mo"))


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="msgfmt (Debian package gettext) not installed")
def test_fuzzy_entries_never_reach_the_corpus(tmp_path):
    po = tmp_path / "f.po"
    po.write_text('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
                  '#, fuzzy\nmsgid "Close Window"\nmsgstr "Fermer l\'onglet"\n\n'
                  'msgid "Close Tab"\nmsgstr "Fermer l\'onglet"\n', encoding="utf-8")
    subprocess.run(["msgfmt", "-o", str(tmp_path / "f.mo"), str(po)], check=True)
    assert list(gt.read_mo(tmp_path / "f.mo")) == [("Close Tab", "Fermer l'onglet")]


def _source_in(split, prefix):
    from lwx_edge.data.ddtp import split_of

    return next(f"{prefix}{i}" for i in range(1000) if split_of(f"{prefix}{i}") == split)


def _make_deb(work, pkg, source, catalogs, files=None):
    """A tiny .deb named like apt-get download would name it, holding {relative path: entries} catalogs
    and {relative path: text} plain files."""
    root = work / f"root-{pkg}"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {pkg}\nSource: {source} (1.0-1)\nVersion: 1.0\nArchitecture: all\n"
        "Maintainer: Test <test@example.org>\nDescription: test package\n")
    for rel, entries in catalogs.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        write_mo(root / rel, [("", "Content-Type: text/plain; charset=UTF-8\n"), *entries])
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    deb = work / f"{pkg}_1.0_all.deb"
    subprocess.run(["dpkg-deb", "-Znone", "--root-owner-group", "-b", str(root), str(deb)], check=True,
                   capture_output=True)
    shutil.rmtree(root)
    return deb


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb (a Debian system) needed")
def test_build_gettext_from_local_debs(tmp_path, monkeypatch):
    work = tmp_path / "debs"
    work.mkdir()
    train_src, test_src = _source_in("train", "src"), _source_in("test", "src")
    loc = "usr/share/locale/{}/LC_MESSAGES/app.mo"
    _make_deb(work, "appa", train_src, {
        loc.format("fr"): [("Open File", "Ouvrir le fichier"), ("_Quit", "_Quitter"), ("OK", "OK")],
        loc.format("fr_CA"): [("Open File", "Ouvrir le fichier (CA)")],   # regional variant: skipped
        loc.format("de_DE"): [("Open File", "Datei öffnen")],            # no bare de/: de_DE is used
        loc.format("es_MX"): [("Open File", "Abrir archivo")],           # only a regional variant: skipped
        loc.format("ru"): [("Open File", "Открыть файл")],               # not a requested language
    })
    _make_deb(work, "appb-l10n", test_src, {
        "usr/lib/office/program/resource/fr/LC_MESSAGES/sw.mo": [
            ("Open File", "Ouvrir un fichier"),            # English already in train: dropped from test
            ("Insert ~Table", "Insérer un ~tableau")],
    })
    calls = []

    def fake_run(cmd, **kw):  # no network in tests: apt-get "fails", dpkg-deb runs for real
        if cmd[0] == "apt-get":
            calls.append(cmd)
            return subprocess.CompletedProcess(cmd, 100, b"", b"E: Unable to locate package")
        return subprocess.run(cmd, capture_output=True, **kw)

    monkeypatch.setattr(gt, "_run", fake_run)
    out = tmp_path / "out"
    summary = gt.build_gettext(out, langs=("fr", "de", "es"), packages=("appa", "appb-l10n", "nosuchpkg"),
                               work_dir=work, progress=False)
    read = lambda name: (out / name).read_text(encoding="utf-8").splitlines()  # noqa: E731
    assert read("train.en-fr.tsv") == ["Open File\tOuvrir le fichier", "Quit\tQuitter"]
    assert read("train.en-de.tsv") == ["Open File\tDatei öffnen"]
    assert read("test.en-fr.tsv") == ["Insert Table\tInsérer un tableau"]
    assert read("dev.en-fr.tsv") == [] and read("test.en-de.tsv") == [] and read("train.en-es.tsv") == []
    assert summary["missing"] == ["nosuchpkg"] and [c[2:] for c in calls] == [["nosuchpkg"], ["nosuchpkg"]]
    assert summary["packages"]["appa"] == {"source": train_src, "split": "train", "strings": {"de": 1, "fr": 2}}
    assert summary["packages"]["appb-l10n"]["split"] == "test"
    assert summary["dropped"] == {"cleaning": 1, "seen_in_earlier_split": 1}
    assert summary["train"]["en-fr"] == {"pairs": 2} and summary["test"]["en-fr"] == {"pairs": 1}
    assert json.loads((out / "summary.json").read_text())["missing"] == ["nosuchpkg"]
    assert sorted(p.name for p in work.iterdir()) == ["appa_1.0_all.deb", "appb-l10n_1.0_all.deb"]


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb (a Debian system) needed")
def test_build_gettext_splits_one_source_by_domain(tmp_path, monkeypatch):
    """The Wesnoth campaigns share one source package: split_by="domain" sends each campaign to its own split."""
    work = tmp_path / "debs"
    work.mkdir()
    train_dom, test_dom = _source_in("train", "campaign"), _source_in("test", "campaign")
    loc = "usr/share/games/game/locale/fr/LC_MESSAGES/{}.mo"
    _make_deb(work, "game-a", "game", {loc.format(train_dom): [("We must hurry!", "Dépêchons-nous !")]})
    _make_deb(work, "game-b", "game", {loc.format(test_dom): [("Where is the king?", "Où est le roi ?")]})
    monkeypatch.setattr(gt, "_run", lambda cmd, **kw: subprocess.run(cmd, capture_output=True, **kw)
                        if cmd[0] != "apt-get" else subprocess.CompletedProcess(cmd, 100, b"", b""))
    out = tmp_path / "out"
    summary = gt.build_gettext(out, langs=("fr",), packages=("game-a", "game-b"), work_dir=work, progress=False,
                               split_by="domain")
    assert (out / "train.en-fr.tsv").read_text() == "We must hurry!\tDépêchons-nous !\n"
    assert (out / "test.en-fr.tsv").read_text() == "Where is the king?\tOù est le roi ?\n"
    assert summary["packages"]["game-b"]["split"] == {test_dom: "test"}
    with pytest.raises(CorpusError, match="split_by must be 'source' or 'domain'; got 'package'"):
        gt.build_gettext(out, packages=("game-a",), work_dir=work, split_by="package")


def test_dialogue_packages_are_campaigns_not_manpages():
    assert len(gt.DIALOGUE_PACKAGES) == 16 and all(p.startswith("wesnoth-1.16-") for p in gt.DIALOGUE_PACKAGES)
