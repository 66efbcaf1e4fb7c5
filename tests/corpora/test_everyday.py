"""The everyday corpus: parsers of each source, the held-out source, monolingual extras."""
import shutil
import subprocess
from pathlib import Path

import pytest

from lwx_edge.data import everyday as ed
from lwx_edge.data import gettext as gt
from lwx_edge.data.mono import build_mono


def test_fortune_cookies_drop_attributions_art_and_extremes():
    text = ("Friendship is a single soul\ndwelling in two bodies.\n\t\t-- Aristotle\n%\n"
            "Hi.\n%\n"                                   # under 3 words
            "  ___  \n |   | \n |___| #### ////\n%\n"     # ASCII art: few letters
            + "word " * 70 + "\n%\n"                     # over 60 words
            "Das ist ein  schöner   Tag!\n")
    assert list(ed.fortune_cookies(text)) == ["Friendship is a single soul dwelling in two bodies.",
                                             "Das ist ein schöner Tag!"]


def test_ding_pairs_align_senses_and_strip_notes():
    text = ("# Version :: 1.9\n"
            "Aal {m} | Aal blau; blauer Aal | Aal grün :: eel | eel au bleu; eel steamed | boiled eel served\n"
            "Vielen Dank für Ihre Anteilnahme. [geh.] :: Many thanks for your sympathy. [formal]\n"
            "ein | zwei :: one\n")                      # senses not aligned: skipped
    assert list(ed.ding_pairs(text)) == [("eel au bleu", "Aal blau"), ("boiled eel served", "Aal grün"),
                                         ("Many thanks for your sympathy.", "Vielen Dank für Ihre Anteilnahme.")]
    assert list(ed.ding_pairs(text, min_words=3)) == [("Many thanks for your sympathy.",
                                                       "Vielen Dank für Ihre Anteilnahme.")]


def test_wordnet_examples_and_word_sample():
    line = ('00001740 00 a 01 able 0 005 = 05200169 n 0000 | having the means; "able to swim"; '
            '"she was able to program her computer"\n  1 This software is provided "as is" and more\n')
    assert list(ed.wordnet_examples(line)) == ["able to swim", "she was able to program her computer"]
    words = "\n".join(["cat", "dog's", "ox", "Zürich", "house", "a1b", "garden"])
    assert ed.word_sample(words, 10) == ["cat", "Zürich", "house", "garden"]
    sample = ed.word_sample(words, 2, seed=1)
    assert len(sample) == 2 and sample == ed.word_sample(words, 2, seed=1)


def test_build_mono_takes_extra_texts_through_the_same_filters(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "train.en-fr.tsv").write_text("A text editor\tUn éditeur de texte\n")
    counts = build_mono(tmp_path / "m", [tmp_path / "c"], langs=("en", "fr"),
                        extra={"en": ["A text editor", "Good morning, dear!", "x", "1234"], "fr": ["Bonjour !"]})
    assert counts == {"en": 2, "fr": 2}   # the duplicate, the too-short and the letter-less texts are dropped
    assert (tmp_path / "m" / "train.en.txt").read_text() == "A text editor\nGood morning, dear!\n"


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb (a Debian system) needed")
def test_a_held_out_package_goes_to_test_whole(tmp_path, monkeypatch):
    from test_gettext import _make_deb, _source_in

    work = tmp_path / "debs"
    work.mkdir()
    loc = "usr/share/locale/fr/LC_MESSAGES/{}.mo"
    train_dom = _source_in("train", "dom")
    _make_deb(work, "rpg-data", "rpg", {loc.format(train_dom): [("Where is the key?", "Où est la clé ?")]})
    _make_deb(work, "game", "game", {loc.format(train_dom):
                                     [("We must hurry now!", "Dépêchons-nous !")]})
    monkeypatch.setattr(gt, "_run", lambda cmd, **kw: subprocess.run(cmd, capture_output=True, **kw)
                        if cmd[0] != "apt-get" else subprocess.CompletedProcess(cmd, 100, b"", b""))
    out = tmp_path / "out"
    summary = gt.build_gettext(out, langs=("fr",), packages=("rpg-data", "game"), work_dir=work, progress=False,
                               split_by="domain", held_out=("rpg-data",))
    assert (out / "test.en-fr.tsv").read_text() == "Where is the key?\tOù est la clé ?\n"
    assert (out / "train.en-fr.tsv").read_text() == "We must hurry now!\tDépêchons-nous !\n"
    assert summary["packages"]["rpg-data"]["split"] == {train_dom: "test"}


def test_everyday_sources_hold_out_a_whole_package_and_no_manpages():
    assert ed.HELD_OUT == ("freedroidrpg-data",) and set(ed.HELD_OUT) <= set(ed.PARALLEL_PACKAGES)
    assert set(gt.DIALOGUE_PACKAGES) <= set(ed.PARALLEL_PACKAGES)
    names = [*ed.PARALLEL_PACKAGES, *ed.FORTUNES, *ed.WORDLISTS, ed.DING, ed.WORDNET]
    assert not any("manpages" in n for n in names)
    assert sorted(set(ed.WORDLISTS.values())) == ["de", "en", "es", "fr", "it"]


def test_data_games_builds_the_game_catalogues_split_by_source_package(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from lwx_edge.cli import app
    from lwx_edge.data import games as gm

    calls = []
    monkeypatch.setattr(gt, "build_gettext", lambda out, **kw: calls.append((out, kw)) or {"train": {}})
    monkeypatch.setattr(gm, "build_games_extra", lambda out, **kw: calls.append((out, kw)) or {"train": {}})
    result = CliRunner().invoke(app, ["data", "games", "--out", str(tmp_path / "games")])
    assert result.exit_code == 0, result.output
    held = [Path("data/corpus") / d for d in ("everyday", "dialogue", "gettext")]
    assert calls == [(tmp_path / "games", {"packages": ed.GAME_PACKAGES, "work_dir": Path("data/debs")}),
                     (Path("data/corpus/games-extra"), {"work_dir": Path("data/debs"), "exclude_dirs": held}),
                     (Path("data/corpus/games-more"), {"work_dir": Path("data/debs"), "sources": gm.MORE_SOURCES,
                                                       "exclude_dirs": held})]
    assert not set(ed.GAME_PACKAGES) & set(ed.PARALLEL_PACKAGES)       # no everyday eval source is trained on
    assert ed.GAME_PACKAGES == ("cataclysm-dda-data",) and gt.split_of("cataclysm-dda") == "train"  # its source
