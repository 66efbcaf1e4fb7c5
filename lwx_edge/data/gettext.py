"""More parallel text from Debian: the gettext catalogs (msgid -> msgstr) of common packages.

``build_gettext`` runs ``apt-get download`` into a work directory (the packages are never installed:
containers often drop /usr/share/locale at install time), streams each .deb's data archive through
``dpkg-deb --fsys-tarfile`` and reads the ``.../<lang>/LC_MESSAGES/*.mo`` catalogs in it (under
/usr/share/locale, and LibreOffice's ``program/resource`` tree). Each entry becomes an (English msgid,
translated msgstr) pair after :func:`clean_entry`.

Split: the *source* package of each .deb is hashed with :func:`lwx_edge.data.ddtp.split_of`, the DDTP
rule, so every catalog of one upstream project (libreoffice-l10n-fr and -de, say, which share all their
English strings) lands in one split. UI strings such as "Cancel" recur across projects, so an English
message is kept only in the earliest split (train < dev < test) where it occurs: no English sentence of
dev or test is in train (dropped copies are counted as ``seen_in_earlier_split``).

Debian man-page translations (manpages-fr, manpages-l10n, ...) are reserved for independent evaluation:
any package with "manpages" in its name is refused.
"""
from __future__ import annotations

import html
import logging
import re
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterator

from ..atomic import write_json_atomic, write_text_atomic
from ..errors import CorpusError
from ..text import normalize
from .ddtp import SPLITS, split_of

log = logging.getLogger(__name__)

# Chosen by translated strings per MB of download on bookworm (fr+de+es+it entries counted in each .deb),
# for ordinary UI and message text; about 130 MB in all. Never man-page translation packages.
DEFAULT_PACKAGES = (
    # GNU and Debian command-line tools
    "coreutils", "tar", "grep", "sed", "findutils", "diffutils", "wget", "gettext", "bash", "dpkg", "apt",
    "gnupg-l10n", "util-linux-locales", "e2fsprogs-l10n", "nano", "make", "sudo",
    # toolchain and version control
    "gcc-12-locales", "binutils-common", "git",
    # desktop libraries and data
    "libgtk-3-common", "libgtk-4-common", "libglib2.0-data", "iso-codes", "xkb-data",
    # GNOME, Xfce, Cinnamon, MATE
    "gnome-control-center-data", "nautilus-data", "gedit-common", "gnome-shell-common", "gnome-software-common",
    "evolution-common", "evolution-data-server-common", "network-manager", "network-manager-gnome",
    "gnome-disk-utility", "orca", "gthumb-data", "rhythmbox-data", "shotwell-common", "totem-common",
    "evince-common", "thunar-data", "cinnamon-l10n", "caja-common",
    # applications
    "libreoffice-l10n-fr", "libreoffice-l10n-de", "libreoffice-l10n-es", "libreoffice-l10n-it",
    "vlc-l10n", "audacity-data", "gnumeric-common", "gnucash-common", "gramps", "digikam-data",
    "pidgin-data", "hexchat-common", "claws-mail-i18n", "sylpheed-i18n", "filezilla-common",
    "system-config-printer-common",
)

# Everyday-style dialogue: the official campaigns of The Battle for Wesnoth (conversation lines, questions,
# orders, narration), each campaign one gettext domain. Used with split_by="domain" (all share one source).
DIALOGUE_PACKAGES = tuple(f"wesnoth-1.16-{c}" for c in (
    "did", "dm", "dw", "ei", "httt", "l", "low", "nr", "sof", "sota", "sotbe", "thot", "trow", "tsg", "ttb",
    "utbs"))

_MO_PATH = re.compile(r"/(?P<lang>[a-z]{2,3})(?P<region>_[A-Z]{2})?/LC_MESSAGES/(?P<domain>[^/]+)\.mo$")


def _check_packages(packages) -> list[str]:
    bad = [p for p in packages if "manpages" in p]
    if bad:
        raise CorpusError(f"{', '.join(bad)}: man-page translations are reserved for independent evaluation "
                          "and are never used for training")
    return list(dict.fromkeys(packages))


# --------------------------------------------------------------------------------------------- .mo files

def parse_mo(data: bytes, name: str = "<mo>") -> Iterator[tuple[str, str]]:
    r"""(msgid, msgstr) of a compiled catalog. The header entry (msgid "") only sets the charset; a context
    ("ctxt\x04msgid") is dropped; plural entries give their singular msgid and first form; empty
    translations are skipped. Fuzzy entries are not in a .mo unless compiled with --use-fuzzy."""
    if len(data) < 20:
        raise CorpusError(f"{name}: not a gettext .mo file (too short)")
    magic = data[:4]
    if magic == b"\xde\x12\x04\x95":
        endian = "<"
    elif magic == b"\x95\x04\x12\xde":
        endian = ">"
    else:
        raise CorpusError(f"{name}: not a gettext .mo file (bad magic number)")
    _, n, orig_off, trans_off = struct.unpack(endian + "4I", data[4:20])
    if max(orig_off, trans_off) + 8 * n > len(data):
        raise CorpusError(f"{name}: truncated .mo file ({n} entries announced, {len(data)} bytes)")

    def entry(table: int, i: int) -> bytes:
        length, offset = struct.unpack(endian + "2I", data[table + 8 * i: table + 8 * i + 8])
        if offset + length > len(data):
            raise CorpusError(f"{name}: truncated .mo file (entry {i} runs past the end)")
        return data[offset: offset + length]

    raw = [(entry(orig_off, i), entry(trans_off, i)) for i in range(n)]
    charset = "utf-8"
    for msgid, msgstr in raw:
        if msgid == b"":
            m = re.search(rb"charset=([A-Za-z0-9_.:-]+)", msgstr)
            if m and m.group(1).decode("ascii").upper() not in ("CHARSET", ""):
                charset = m.group(1).decode("ascii")
            break
    try:
        "".encode(charset)
    except LookupError:
        charset = "utf-8"
    for msgid, msgstr in raw:
        if not msgid:
            continue  # the header
        msgid = msgid.split(b"\x04", 1)[-1].split(b"\x00", 1)[0]
        msgstr = msgstr.split(b"\x00", 1)[0]
        if not msgid or not msgstr:
            continue
        try:
            yield msgid.decode(charset), msgstr.decode(charset)
        except UnicodeDecodeError:
            continue


def read_mo(path: str | Path) -> Iterator[tuple[str, str]]:
    """(msgid, msgstr) pairs of a .mo file; see :func:`parse_mo`. CorpusError for a missing or bad file."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise CorpusError(f"{path}: no such .mo file") from None
    except OSError as e:
        raise CorpusError(f"{path}: cannot read the .mo file ({e.strerror or e})") from None
    return parse_mo(data, str(path))


# ------------------------------------------------------------------------------------------------ cleaning

# printf (C, with gcc's %q/%< %> quoting), Qt %1, Python %(name)s and {name}, $(ARG), ${var}, %PRODUCTNAME
_PLACEHOLDER = re.compile(
    r"%[A-Z][A-Z_]{2,}\b"
    r"|%\([A-Za-z0-9_]+\)[-+ #0]*\d*(?:\.\d+)?[a-zA-Z]"
    r"|%(?:\d+\$)?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|ll|[hlLqjzZt]|I64|I32)?q?[a-zA-Z%<>]"
    r"|%L?\d+"
    r"|\{[A-Za-z0-9_.:]*\}"
    r"|\$\([A-Za-z0-9_]+\)|\$\{[A-Za-z0-9_]+\}")
_TAG = re.compile(r"</?(?:b|i|u|s|a|p|tt|big|small|span|sub|sup|br|em|strong|markup|qt|html|body|h[1-6]|li|ul|ol)"
                  r"(?:\s[^<>]*)?/?>", re.IGNORECASE)
_ENTITY = re.compile(r"&(?:#\d+|#x[0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);")
_AMP = re.compile(r"&&|&(?!(?:#\d+|#x[0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);)(?=[^\W_])")
_TILDE_MNEMONIC = re.compile(r"~(?=[^\W_])")
_UNDERSCORE = re.compile(r"(?<!_)_(?=[^\W_])")
# a word token: letters, inner apostrophes/hyphens (l'index, ré-échantillonnage), light punctuation around
_WORD_TOKEN = re.compile(r"^[(\"'«„“‘¿¡\[]*[^\W\d_]+(?:['’\-][^\W\d_]+)*[.,:;!?)\]\"'»“”’…]*$")
_SINGLE_TOKEN_ID = re.compile(r"^\S*[:_/=@.][^\W_]\S*$")  # one token with an inner ":_/=@." (ids, URLs)
# GNOME/KDE translator credits and similar fields, not translations of the msgid
_SKIP_MSGIDS = {"translator-credits", "translator_credits", "translators", "your names", "your emails",
                "name of translators", "email of translators", "default:ltr", "default:rtl"}


def _strip_underscores(text: str) -> str:
    """Remove GTK mnemonic underscores ("_File", "Save _As", "E_xit") but keep identifiers (LC_ALL,
    file_name) and escaped "__"."""
    out, last = [], 0
    for m in _UNDERSCORE.finditer(text):
        i = m.start()
        before = re.search(r"[^\W_]*$", text[:i]).group()
        after = re.match(r"[^\W_]*", text[i + 1:]).group()
        identifier = before and ((before.isupper() and after.isupper()) or (before.islower() and after.islower())
                                 or before[-1].isdigit() or after[0].isdigit())
        if not identifier:
            out.append(text[last:i])
            last = i + 1
    out.append(text[last:])
    return "".join(out).replace("__", "_")


def strip_accelerators(text: str) -> str:
    """Keyboard-accelerator markers out: GTK "_" (identifiers such as LC_ALL kept, "__" is a literal "_"),
    Qt/KDE "&" ("&&" is a literal "&"; entities such as &amp; are kept), LibreOffice "~" (not "~/")."""
    text = _strip_underscores(text)
    text = _AMP.sub(lambda m: "&" if m.group() == "&&" else "", text)
    return _TILDE_MNEMONIC.sub("", text)


def clean_text(text: str) -> str:
    r"""One UI string as plain text: markup tags out, accelerators out, entities unescaped; newlines, tabs
    (also written as literal "\n", "\t") and runs of spaces become one space."""
    text = text.replace("\\n", " ").replace("\\t", " ")
    text = _TAG.sub(" ", text) if _TAG.search(text) else text
    text = strip_accelerators(text)
    text = _ENTITY.sub(lambda m: html.unescape(m.group()), text)
    return " ".join(text.split())


def placeholders(text: str) -> int:
    """Number of format placeholders (printf, Qt %1, Python %(x)s and {x}, $(X), ${x}) in ``text``."""
    return len(_PLACEHOLDER.findall(text))


def clean_message(text: str) -> str | None:
    """One message as a single line of plain text (:func:`clean_text`), or None when it is not prose:
    fewer than 3 letters outside placeholders; more placeholders than words ("%s: %s: line %d"); a
    single identifier-like token (LC_ALL, org.gnome.desktop, /usr/share, calendar:week_start:0); or
    code-like text where word tokens are under half of the tokens (--verbose, -h)."""
    if not isinstance(text, str):
        return None
    text = clean_text(text)
    if not text or _SINGLE_TOKEN_ID.match(text):
        return None
    bare = _PLACEHOLDER.sub(" ", text)
    if sum(c.isalpha() for c in bare) < 3:
        return None
    tokens = [t for t in bare.split() if any(c.isalnum() for c in t)]
    words = [t for t in tokens if _WORD_TOKEN.match(t)]
    if not words or len(words) < 0.5 * len(tokens):
        return None
    if len(words) < 3 and sum(map(len, words)) < 0.5 * sum(map(len, tokens)):
        return None
    if placeholders(text) > len(words):
        return None
    return text


def clean_entry(msgid: str, msgstr: str) -> tuple[str, str] | None:
    """The cleaned (English, translation) pair, or None: translator credits and similar fields, either
    side failing :func:`clean_message`, or an untranslated copy (both sides equal once normalised, e.g.
    the language name "Gaam" -> "gaam")."""
    if msgid.strip().lower() in _SKIP_MSGIDS:
        return None
    en, xx = clean_message(msgid), clean_message(msgstr)
    if en is None or xx is None or normalize(en) == normalize(xx):
        return None
    return en, xx


# --------------------------------------------------------------------------------------------- packages

def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, **kw)
    except FileNotFoundError:
        raise CorpusError(f"{cmd[0]} not found: building the gettext corpus needs Debian's apt and dpkg") from None


def download_debs(packages, deb_dir: str | Path, progress: bool = True) -> tuple[dict[str, Path], list[str]]:
    """``apt-get download`` each package into ``deb_dir`` (kept: a second run reuses the files). Returns
    ({package: .deb path}, [packages apt could not download])."""
    deb_dir = Path(deb_dir)
    deb_dir.mkdir(parents=True, exist_ok=True)

    def found(pkg):
        debs = sorted(deb_dir.glob(f"{pkg}_*.deb"))
        return debs[-1] if debs else None

    todo = [p for p in packages if found(p) is None]
    if todo:
        if progress:
            log.info("gettext: apt-get download %d packages into %s", len(todo), deb_dir)
        r = _run(["apt-get", "download", *todo], cwd=deb_dir)
        if r.returncode != 0:  # one unknown package fails the batch: retry one by one
            for pkg in todo:
                if found(pkg) is None:
                    _run(["apt-get", "download", pkg], cwd=deb_dir)
    debs, missing = {}, []
    for pkg in packages:
        deb = found(pkg)
        if deb is None:
            missing.append(pkg)
            log.warning("apt-get download %s failed; package skipped", pkg)
        else:
            debs[pkg] = deb
    return debs, missing


def deb_source(deb: str | Path) -> tuple[str, str]:
    """(Package, source package) from a .deb's control file; the source's "(version)" is dropped."""
    r = _run(["dpkg-deb", "-f", str(deb), "Package", "Source"])
    if r.returncode != 0:
        raise CorpusError(f"{deb}: not a readable .deb ({r.stderr.decode(errors='replace').strip()})")
    fields = {}
    for line in r.stdout.decode("utf-8", errors="replace").splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    pkg = fields.get("Package") or Path(deb).name.split("_")[0]
    return pkg, (fields.get("Source") or pkg).split()[0]


def deb_files(deb: str | Path, wanted) -> Iterator[tuple[str, bytes]]:
    """(member name, bytes) of every regular file of a .deb whose name ``wanted(name)`` accepts, streamed
    through ``dpkg-deb --fsys-tarfile`` (nothing is unpacked to disk)."""
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tf:
            for member in tf:
                if member.isfile() and wanted(member.name):
                    yield member.name, tf.extractfile(member).read()
    except tarfile.TarError as e:
        raise CorpusError(f"{deb}: cannot read the package's data archive ({e})") from None
    finally:
        proc.stdout.close()
        err = proc.stderr.read()
        proc.stderr.close()
        if proc.wait() != 0:
            raise CorpusError(f"{deb}: dpkg-deb failed ({err.decode(errors='replace').strip()})")


def deb_catalogs(deb: str | Path, langs) -> Iterator[tuple[str, str, bytes]]:
    """(lang, catalog key, .mo bytes) for each catalog of ``langs`` in a .deb (:func:`deb_files`). A catalog
    in the bare language directory (fr/) wins over its main-country variant (fr_FR/); other regional
    variants (fr_CA, es_MX) are skipped."""
    def wanted(name: str) -> bool:
        m = _MO_PATH.search(name)
        return bool(m) and m.group("lang") in langs and (not m.group("region") or m.group("region")[1:] == m.group("lang").upper())

    best: dict[tuple[str, str], tuple[bool, bytes]] = {}
    for name, data in deb_files(deb, wanted):
        m = _MO_PATH.search(name)
        lang, region = m.group("lang"), m.group("region")
        key = (lang, name[: m.start()] + "/" + m.group("domain"))
        if key in best and not best[key][0]:
            continue  # the bare-language catalog is already there
        best[key] = (bool(region), data)
    for (lang, key), (_, data) in best.items():
        yield lang, key, data


def build_gettext(out_dir: str | Path = "data/corpus/gettext", langs: tuple[str, ...] = ("fr", "de", "es", "it"),
                  packages=DEFAULT_PACKAGES, work_dir: str | Path | None = None, progress: bool = True,
                  split_by: str = "source", held_out=()) -> dict:
    """Download ``packages``, read their catalogs and write ``out_dir/{split}.en-{xx}.tsv`` (en<TAB>xx,
    cleaned, each distinct pair once per split) and ``summary.json``, each atomically. ``work_dir`` keeps
    the downloaded .deb files (a temporary directory, removed afterwards, when None). ``split_by`` hashes
    each package's source name ("source") or each catalog's gettext domain ("domain", for packages of one
    source such as the Wesnoth campaigns); every catalog of a package in ``held_out`` goes to the test split
    whole (an unseen source for evaluation). Returns the summary."""
    t0 = time.time()
    if split_by not in ("source", "domain"):
        raise CorpusError(f"split_by must be 'source' or 'domain'; got {split_by!r}")
    packages = _check_packages(packages)
    out_dir = Path(out_dir)
    tmp = None
    if work_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="lwx-gettext-")
        work_dir = tmp.name
    try:
        debs, missing = download_debs(packages, Path(work_dir), progress=progress)
        if not debs:
            raise CorpusError(f"apt-get download got none of the {len(packages)} packages "
                              f"({', '.join(packages[:5])}, ...): is the apt cache up to date (apt-get update)?")
        rows: dict[tuple[str, str], dict[str, None]] = defaultdict(dict)
        per_package: dict[str, dict] = {}
        dropped: Counter = Counter()
        download_bytes = 0
        items = list(debs.items())
        if progress:
            from tqdm.auto import tqdm

            items = tqdm(items, desc="gettext catalogs", unit=" pkg", file=sys.stderr)
        for pkg, deb in items:
            download_bytes += deb.stat().st_size
            entry = _read_package(pkg, deb, langs, split_by, held_out, rows, dropped)
            if entry is None:
                missing.append(pkg)
            else:
                per_package[pkg] = entry
        summary = _write_splits(out_dir, langs, rows, dropped)
        summary.update({"packages": per_package, "missing": missing, "dropped": dict(dropped),
                        "download_mb": round(download_bytes / 1e6, 1), "seconds": round(time.time() - t0, 1)})
        write_json_atomic(out_dir / "summary.json", summary)
    finally:
        if tmp is not None:
            tmp.cleanup()
    if progress:
        line = ", ".join(f"en-{lang} {summary['train'][f'en-{lang}']['pairs']:,}" for lang in langs)
        log.info("gettext: train pairs %s; written to %s in %ss", line, out_dir, summary["seconds"])
    return summary



def _read_package(pkg: str, deb: Path, langs: tuple[str, ...], split_by: str, held_out,
                  rows: dict[tuple[str, str], dict[str, None]], dropped: Counter) -> dict | None:
    """Add a downloaded package's cleaned pairs to ``rows`` ((split, lang) -> ordered set of en<TAB>xx rows);
    its summary entry, or None when it cannot be read (a warning). A man-page translation source is an error."""
    try:
        _, source = deb_source(deb)
        if "manpages" in source:
            raise CorpusError(f"{deb}: built from {source}, a man-page translation source "
                              "(reserved for evaluation)")
        catalogs = list(deb_catalogs(deb, langs))
    except CorpusError as e:
        if "manpages" in str(e):
            raise
        log.warning("%s skipped: %s", pkg, e)
        return None
    split = "test" if pkg in held_out else split_of(source)
    counts: Counter = Counter()
    domains: dict[str, str] = {}
    for lang, key, data in catalogs:
        if split_by == "domain":
            domain = key.rsplit("/", 1)[-1]
            split = domains[domain] = "test" if pkg in held_out else split_of(domain)
        for row in _catalog_rows(data, f"{deb.name}:{key}", dropped):
            rows[(split, lang)].setdefault(row, None)
            counts[lang] += 1
    return {"source": source, "split": split if split_by == "source" else domains,
            "strings": dict(sorted(counts.items()))}


def _catalog_rows(data: bytes, name: str, dropped: Counter) -> list[str]:
    """The cleaned en<TAB>xx rows of one .mo catalog, in its order (none from an unreadable catalog: a warning);
    what is dropped is counted in ``dropped``."""
    try:
        entries = list(parse_mo(data, name))
    except CorpusError as e:
        log.warning("%s; catalog skipped", e)
        dropped["bad_catalog"] += 1
        return []
    out = []
    for msgid, msgstr in entries:
        pair = clean_entry(msgid, msgstr)
        if pair is None:
            dropped["cleaning"] += 1
            continue
        out.append(f"{pair[0]}\t{pair[1]}")
    return out


def _write_splits(out_dir: Path, langs: tuple[str, ...], rows: dict[tuple[str, str], dict[str, None]],
                  dropped: Counter) -> dict:
    """Write ``{split}.en-{xx}.tsv``; the summary's pair counts per split. UI strings recur across programs
    ("Cancel"): an English message stays only in the earliest split (train < dev < test) where it occurs, for
    every language, so dev/test English is unseen in training."""
    earlier: set[str] = set()
    summary: dict = {s: {} for s in SPLITS}
    for split in SPLITS:
        here: set[str] = set()
        for lang in langs:
            kept = []
            for r in rows[(split, lang)]:
                key = normalize(r.split("\t", 1)[0])
                if key in earlier:
                    dropped["seen_in_earlier_split"] += 1
                else:
                    kept.append(r)
                    here.add(key)
            write_text_atomic(out_dir / f"{split}.en-{lang}.tsv", "".join(r + "\n" for r in kept))
            summary[split][f"en-{lang}"] = {"pairs": len(kept)}
        earlier |= here
    return summary


__all__ = ["DEFAULT_PACKAGES", "DIALOGUE_PACKAGES", "build_gettext", "clean_entry", "clean_message", "clean_text", "deb_catalogs",
           "deb_source", "download_debs", "parse_mo", "placeholders", "read_mo", "strip_accelerators"]
