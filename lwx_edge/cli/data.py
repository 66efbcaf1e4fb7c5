"""``lwx-edge data``: build the offline corpora from Debian's apt lists and gettext catalogs."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List

import typer

from ._extras import require

app = typer.Typer(help="Build training corpora (DDTP descriptions, gettext catalogs, monolingual text).",
                  no_args_is_help=True)

OUT_HELP = "Directory to write the corpus to."
WORK_HELP = "Where downloaded .deb files are kept and unpacked."


@app.command("ddtp")
def ddtp(out: Path = typer.Option(Path("data/corpus/ddtp"), "--out", "-o", metavar="DIR", help=OUT_HELP),
         lists_dir: Path = typer.Option(Path("/var/lib/apt/lists"), "--lists-dir", metavar="DIR",
                                        help="apt's package lists, with their translations (run first: apt-get "
                                             "update -o Acquire::Languages=en,fr,de,es,it).")) -> None:
    """Debian package descriptions and their fr/de/es/it translations, split by source package."""
    from ..data.ddtp import build_ddtp

    typer.echo(json.dumps(build_ddtp(lists_dir, out), indent=2))


@app.command("gettext")
def gettext(out: Path = typer.Option(Path("data/corpus/gettext"), "--out", "-o", metavar="DIR", help=OUT_HELP),
            work_dir: Path = typer.Option(Path("data/debs"), "--work-dir", metavar="DIR", help=WORK_HELP)) -> None:
    """msgid -> msgstr pairs from the gettext catalogs of common Debian packages (apt-get download)."""
    from ..data.gettext import build_gettext

    typer.echo(json.dumps(build_gettext(out, work_dir=work_dir), indent=2))


@app.command("dialogue")
def dialogue(out: Path = typer.Option(Path("data/corpus/dialogue"), "--out", "-o", metavar="DIR", help=OUT_HELP),
             work_dir: Path = typer.Option(Path("data/debs"), "--work-dir", metavar="DIR", help=WORK_HELP)) -> None:
    """Everyday-style dialogue: the Wesnoth campaigns' gettext catalogs, split by campaign (gettext domain)."""
    from ..data.gettext import DIALOGUE_PACKAGES, build_gettext

    typer.echo(json.dumps(build_gettext(out, packages=DIALOGUE_PACKAGES, work_dir=work_dir, split_by="domain"),
                          indent=2))


@app.command("everyday")
def everyday(out: Path = typer.Option(Path("data/corpus/everyday"), "--out", "-o", metavar="DIR", help=OUT_HELP),
             work_dir: Path = typer.Option(Path("data/debs"), "--work-dir", metavar="DIR", help=WORK_HELP),
             words_per_lang: int = typer.Option(20000, "--words-per-lang", min=0, metavar="N",
                                                help="Words sampled from each language's word list.")) -> None:
    """Everyday text: game dialogue and story catalogs (FreeDroid RPG held out for test), Ding phrases,
    fortunes, WordNet examples and word lists; parallel splits by gettext domain, plus OUT/mono."""
    from ..data.everyday import build_everyday

    typer.echo(json.dumps(build_everyday(out, work_dir=work_dir, words_per_lang=words_per_lang), indent=2))


@app.command("games")
def games(out: Path = typer.Option(Path("data/corpus/games"), "--out", "-o", metavar="DIR", help=OUT_HELP),
          work_dir: Path = typer.Option(Path("data/debs"), "--work-dir", metavar="DIR", help=WORK_HELP),
          extra_out: Path = typer.Option(Path("data/corpus/games-extra"), "--extra-out", metavar="DIR",
                                         help="Where the other games' train pairs go."),
          more_out: Path = typer.Option(Path("data/corpus/games-more"), "--more-out", metavar="DIR",
                                        help="Where the everyday and children's games' train pairs go.")) -> None:
    """Game text for training: Cataclysm: DDA into OUT, other games into EXTRA_OUT and MORE_OUT.

    OUT: the item, place and character descriptions and NPC dialogue of Cataclysm: DDA (one catalogue, split
    by source package like gettext: it all lands in train). EXTRA_OUT (train only): the dialogue, quests and
    story of Hedgewars, FLARE, FreeOrion, Warzone 2100 and Pingus. MORE_OUT (train only): GCompris, Tux Paint's
    stamps, SuperTux, Unknown Horizons, SuperTuxKart, MegaGlest, LordsAWar and Singularity. Any English
    sentence of the everyday, dialogue and gettext dev/test splits next to them is left out.
    """
    require("data games", "data", ("babel",))  # before any download
    from ..data.everyday import GAME_PACKAGES
    from ..data.games import MORE_SOURCES, build_games_extra
    from ..data.gettext import build_gettext

    summary = build_gettext(out, packages=GAME_PACKAGES, work_dir=work_dir)
    held = [extra_out.parent / name for name in ("everyday", "dialogue", "gettext")]
    extra = build_games_extra(extra_out, work_dir=work_dir, exclude_dirs=held)
    more = build_games_extra(more_out, work_dir=work_dir, sources=MORE_SOURCES, exclude_dirs=held)
    typer.echo(json.dumps({"games": summary, "games-extra": extra, "games-more": more}, indent=2))


@app.command("mono")
def mono(out: Path = typer.Option(Path("data/corpus/mono"), "--out", "-o", metavar="DIR", help=OUT_HELP),
         ddtp_dir: Path = typer.Option(Path("data/corpus/ddtp"), "--ddtp", metavar="DIR",
                                       help="The corpus of lwx-edge data ddtp (skipped when missing)."),
         gettext_dir: Path = typer.Option(Path("data/corpus/gettext"), "--gettext", metavar="DIR",
                                          help="The corpus of lwx-edge data gettext (skipped when missing)."),
         dialogue_dir: Path = typer.Option(Path("data/corpus/dialogue"), "--dialogue", metavar="DIR",
                                           help="The corpus of lwx-edge data dialogue (skipped when missing).")
         ) -> None:
    """Monolingual sentences per language from the train splits (for distillation)."""
    from ..data.mono import build_mono
    from ..errors import CorpusError

    dirs = [d for d in (ddtp_dir, gettext_dir, dialogue_dir) if d.exists()]
    if not dirs:
        raise CorpusError(f"none of the corpora to read exists ({ddtp_dir}, {gettext_dir}, {dialogue_dir}): build "
                          "them first (lwx-edge data ddtp, gettext, dialogue) or name them (--ddtp, --gettext, "
                          "--dialogue)")
    typer.echo(json.dumps(build_mono(out, dirs), indent=2))


@app.command("words")
def words(out: Path = typer.Option(Path("data/corpus/words"), "--out", "-o", metavar="DIR", help=OUT_HELP),
          work_dir: Path = typer.Option(Path("data/debs"), "--work-dir", metavar="DIR", help=WORK_HELP),
          per_lang: int = typer.Option(50000, "--per-lang", min=1, metavar="N",
                                       help="Most frequent words kept per language.")) -> None:
    """Each language's most frequent words (wordfreq, cased by the Debian word lists), one a line, for
    word-level distillation (lwx-edge train --mono data/corpus/words)."""
    require("data words", "data", ("wordfreq",))  # before the word lists are downloaded
    from ..data.words import build_words

    typer.echo(json.dumps(build_words(out, work_dir, per_lang), indent=2))


@app.command("lexicon")
def lexicon(out: Path = typer.Option(Path("data/corpus/lexicon"), "--out", "-o", metavar="DIR", help=OUT_HELP),
            work_dir: Path = typer.Option(Path("data/debs"), "--work-dir", metavar="DIR", help=WORK_HELP),
            max_per_lang: int = typer.Option(20000, "--max-per-lang", min=1, metavar="N",
                                             help="Ding headwords kept (the most frequent English first).")) -> None:
    """Words and short names with their translations (CLDR names, FreeDict and Ding headwords) as parallel
    train.en-xx.tsv files, for the one- and two-word texts."""
    require("data lexicon", "data")  # wordfreq, babel, emoji: before the dictionaries are downloaded
    from ..data.lexicon import build_lexicon

    typer.echo(json.dumps(build_lexicon(out, work_dir, max_per_lang), indent=2))


@app.command("conversation")
def conversation(out: Path = typer.Option(Path("data/corpus/conversation"), "--out", "-o", metavar="DIR",
                                         help=OUT_HELP),
                 work_dir: Path = typer.Option(Path("data/debs"), "--work-dir", metavar="DIR", help=WORK_HELP),
                 train: List[Path] = typer.Option([Path("data/corpus")], "--train", metavar="DIR",
                                                  help="Training corpora whose sentences the test must not "
                                                       "hold (directories, searched for train* files; "
                                                       "repeatable).")) -> None:
    """An out-of-domain everyday test: short conversational lines of games no corpus trains on, split by game
    (test: Fish Fillets NG; dev: FreeDink, Adonthell, The Question); build it after the training corpora."""
    require("data conversation", "data", ("babel",))  # before any download
    from ..data.conversation import build_conversation

    typer.echo(json.dumps(build_conversation(out, work_dir, train_dirs=train), indent=2))


@app.command("phrasebook")
def phrasebook(out: Path = typer.Option(Path("data/corpus/phrasebook"), "--out", "-o", metavar="DIR", help=OUT_HELP),
               held: List[Path] = typer.Option([Path("data/corpus")], "--held", metavar="DIR",
                                               help="Corpora whose dev/test sentences it must not hold "
                                                    "(searched for dev*/test* pair files; repeatable)."),
               fillers_per_frame: int = typer.Option(5, "--fillers-per-frame", min=1, metavar="N",
                                                     help="Fillers put into each frame (a seeded sample).")) -> None:
    """Everyday conversational sentences written for the project (lwx_edge/data/phrasebook/): whole phrases and
    frames with fillers, in five languages, as train pairs; build it after the corpora whose tests it avoids."""
    from ..data.phrasebook import build_phrasebook

    typer.echo(json.dumps(build_phrasebook(out, held, fillers_per_frame), indent=2))


@app.command("ding-sentences")
def ding_sentences(out: Path = typer.Option(Path("data/corpus/ding-sentences"), "--out", "-o", metavar="DIR",
                                            help=OUT_HELP),
                   held: List[Path] = typer.Option([Path("data/corpus")], "--held", metavar="DIR",
                                                   help="Corpora whose dev/test sentences it must not hold "
                                                        "(searched for dev*/test* pair files; repeatable).")) -> None:
    """Ding's everyday example sentences with French, Spanish and Italian translations (lwx_edge/data/ding/, GPL-2+
    like Ding) as train pairs; build it after the corpora whose tests it avoids."""
    from ..data.ding_sentences import build_ding_sentences

    typer.echo(json.dumps(build_ding_sentences(out, held), indent=2))


@app.command("tokenizer")
def tokenizer(out: Path = typer.Option(Path("data/tokenizer/everyday-24k.model"), "--out", "-o", metavar="FILE",
                                      help="The SentencePiece model to write."),
              vocab_size: int = typer.Option(24000, "--vocab-size", min=8, metavar="N",
                                             help="Pieces of the vocabulary."),
              corpus: Path = typer.Option(Path("data/corpus"), "--corpus", metavar="DIR",
                                          help="Root of the built corpora."),
              seed: int = typer.Option(0, "--seed", metavar="N",
                                       help="Random seed of the sample of texts it learns from.")) -> None:
    """A SentencePiece model learned on a mix where everyday text is half (train splits only)."""
    from ..atomic import check_file_target
    from ..data.vocab import build_tokenizer

    check_file_target(out)  # before the minutes of learning
    typer.echo(json.dumps(build_tokenizer(out, vocab_size, corpus, seed), indent=2))


@app.command("all")
def all_(root: Path = typer.Option(Path("data/corpus"), "--out", "-o", metavar="ROOT",
                                   help="Root directory of the corpora (the tokenizer goes to "
                                        "ROOT/../tokenizer).")) -> None:
    """Every corpus (ddtp, gettext, dialogue, mono, everyday, words, lexicon, games, conversation) into
    ROOT/NAME, then the tokenizer, then the phrasebook and Ding's sentences (last: the tokenizer's sample stays as
    it was)."""
    require("data all", "data")  # before the first download: words, lexicon and games need it
    ddtp(root / "ddtp", Path("/var/lib/apt/lists"))
    gettext(root / "gettext", root.parent / "debs")
    dialogue(root / "dialogue", root.parent / "debs")
    mono(root / "mono", root / "ddtp", root / "gettext", root / "dialogue")
    everyday(root / "everyday", root.parent / "debs", 20000)
    words(root / "words", root.parent / "debs", 50000)
    lexicon(root / "lexicon", root.parent / "debs", 20000)
    games(root / "games", root.parent / "debs", root / "games-extra", root / "games-more")
    conversation(root / "conversation", root.parent / "debs", [root])
    tokenizer(root.parent / "tokenizer" / "everyday-24k.model", 24000, root, 0)
    phrasebook(root / "phrasebook", [root], 5)
    ding_sentences(root / "ding-sentences", [root])
