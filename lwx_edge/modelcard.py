"""The model card of a bundle: what the model is, what it was trained on, and what it was measured to do.

Written from the bundle alone (``config.json``, ``manifest.json`` and the evaluation shipped with it,
``eval_test.json``), so it cannot disagree with them. ``tools/make_default_model.py`` writes it into the default
model as ``README.md``; ``lwx-edge info MODEL`` prints it. Torch-free.
"""
from __future__ import annotations

import json
from pathlib import Path

from .bundle import Bundle

EVAL_FILE = "eval_test.json"
CARD_FILE = "README.md"

# What each corpus directory of `lwx-edge data` (or the repository, by path) holds, and under which terms its
# text is distributed.
SOURCES = {
    "ddtp": ("Debian package descriptions and their DDTP translations (short and long descriptions)",
             "DDTP translations: free, under the terms of the Debian Description Translation Project"),
    "gettext": ("UI strings of free software (gettext catalogues of Debian packages)",
                "each package's own free licence (see its debian/copyright)"),
    "dialogue": ("the Battle for Wesnoth campaigns' dialogue and story text", "GPL-2.0-or-later"),
    "everyday": ("game dialogue, story and help text (Wesnoth, Widelands, Freeciv) and the Ding dictionary's "
                 "German-English example phrases", "GPL-2.0-or-later"),
    "mono": ("every distinct train-split sentence of the parallel corpora, per language",
             "as the parallel corpora"),
    "lexicon": ("words and short names with their translations: Unicode CLDR names (emoji, languages, territories, "
                "currencies, weekdays, months, units), FreeDict French/Spanish/Italian-English and Ding "
                "German-English headwords",
                "CLDR: Unicode License; FreeDict and Ding: GPL-2.0-or-later"),
    "games": ("Cataclysm: Dark Days Ahead's translated game text (items, creatures, missions, NPC dialogue)",
              "CC-BY-SA-3.0"),
    "games-extra": ("dialogue, quests and story of Hedgewars, FLARE, FreeOrion, Warzone 2100 and Pingus",
                    "FLARE: CC-BY-SA-3.0-or-later; Hedgewars, FreeOrion: GPL-2; Warzone 2100, Pingus: "
                    "GPL-2.0-or-later"),
    "games-more": ("children's, everyday and game text of GCompris, Tux Paint's stamps, SuperTux, Unknown Horizons, "
                   "SuperTuxKart, MegaGlest, LordsAWar and Endgame: Singularity (instructions, captions, messages, "
                   "stories)", "each game's free licence (GPL-2.0/3.0-or-later translations; CC-BY-SA data in "
                                "GCompris, SuperTuxKart and MegaGlest; see each package's debian/copyright)"),
    "phrasebook": ("everyday conversational sentences written for this project in English, French, German, Spanish "
                   "and Italian (greetings, feelings, food, family, home, travel, shopping, health, work, plans)",
                   "Apache-2.0, as the project"),
    "ding-sentences": ("the Ding dictionary's English example sentences of 3-12 words, translated into French, Spanish "
                       "and Italian for this project", "GPL-2.0-or-later, as Ding"),
    "examples/corpus": ("the smoke run's sample: 2,000 pairs a language of the Wesnoth dialogue corpus",
                        "GPL-2.0-or-later"),
    "words": ("each language's most frequent words (wordfreq's frequency lists), cased as in Debian's word lists",
              "wordfreq data: CC-BY-SA-4.0"),
}
EVERYDAY_MONO = ("fortune cookies (fortunes, fortunes-de/-es/-it), WordNet usage examples and word lists "
                 "(wamerican, wfrench, wngerman, wspanish, witalian)",
                 "fortunes: BSD-style and public domain; WordNet 3.0 licence; word lists: free (see each "
                 "package's debian/copyright)")
TASK_NAMES = {"xsr_short": "short package descriptions", "xsr_doc": "whole package descriptions",
              "xsr_dialogue": "game dialogue (Wesnoth)", "xsr_everyday": "everyday text (held-out games)",
              "xsr_conversation": "short conversational lines (games never trained on)"}
CLOSE, FAR = 0.03, 0.10  # within 3 points of the teacher: a strength; more than 10 below: a weakness


def model_card(path: str | Path, name: str | None = None) -> str:
    """The card of the bundle at ``path`` as markdown (see the module docstring)."""
    bundle = Bundle.load(path)
    name = name or bundle.path.name
    results = _results(bundle.path)
    model, cfg = bundle.config.get("model", {}), bundle.manifest.get("training", {}).get("config", {})
    langs = _languages(results)
    parts = [f"# Model card: {name}", "",
             f"A {model.get('n_layers', '?')}-layer transformer sentence encoder ({model.get('d_model', '?')}-d, "
             f"{model.get('n_heads', '?')} heads, FFN {model.get('d_ff', '?')}, mean pooling, "
             f"SentencePiece vocabulary of {_n(model.get('vocab_size'))} pieces, lowercased NFKC text, "
             f"at most {model.get('max_len', '?')} tokens per text), trained with the dual-transformer objective of "
             "Mao et al. (2021) and distilled from Universal Sentence Encoder multilingual v3 (the teacher). "
             f"Languages: {', '.join(langs) if langs else 'see the training data below'}. "
             "It returns one L2-normalised vector per text; cosine similarity compares texts across languages.", ""]
    parts += _files(bundle)
    parts += _training(bundle.manifest.get("training", {}), cfg)
    if results:
        parts += _measured(results)
    else:
        parts += ["## Measured", "", f"No evaluation is shipped with this bundle ({EVAL_FILE}); run "
                  "`lwx-edge eval BUNDLE --split test -o eval_test.json` and attach it.", ""]
    parts += ["## Intended use and limits", "",
              "- Semantic search, deduplication and few-shot classification of short texts on a device, in and "
              "across the languages above (a classifier head fitted in one language transfers to the others).",
              "- Other languages share the vocabulary's pieces but were never trained or measured.",
              "- Texts longer than the token limit keep their first tokens; casing is ignored.",
              "- Debian man-page translations and public evaluation sets were never trained, tuned or selected on.",
              ""]
    return "\n".join(parts)


def _n(x) -> str:
    """An integer with thousands separators; '?' for anything else."""
    return f"{x:,}" if isinstance(x, int) and not isinstance(x, bool) else "?"


def _results(root: Path) -> dict:
    p = root / EVAL_FILE
    if not p.is_file():
        return {}
    try:
        results = json.loads(p.read_text(encoding="utf-8")).get("results", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return results if isinstance(results, dict) else {}


def _languages(results: dict) -> list[str]:
    found = {"en"}
    for system in results.values():
        for task in (system.values() if isinstance(system, dict) else ()):
            if isinstance(task, dict):
                found |= {k.split("-")[1] for k in task if k.startswith("en-")}
    return sorted(found, key=["en", "fr", "de", "es", "it"].index) if len(found) > 1 else []


def _files(bundle: Bundle) -> list[str]:
    rows = ["## Files", "", "One model file plus `tokenizer.model` is all an app needs. Speed depends on the CPU and "
            "on the batch: `tools/bench_runtime.py` measures it against the teacher in one interleaved run "
            "(docs/BENCHMARKS.md in the repository).", "",
            "| file | size | precision | parity with fp32 (cosine mean / min) |", "|---|---|---|---|"]
    for rel, entry in sorted(bundle.manifest.get("files", {}).items()):
        art = bundle.manifest.get("artifacts", {}).get(rel)
        if not art and not rel.endswith((".safetensors", ".onnx", ".pte")):
            continue
        parity = (art or {}).get("parity") or {}
        rows.append(f"| {rel} | {entry.get('bytes', 0) / 1e6:.1f} MB | {(art or {}).get('precision', 'fp32')} | "
                    + (f"{parity['cos_mean']:.5f} / {parity['cos_min']:.5f} |" if parity else "– |"))
    return rows + [""]


def _stages(training: dict) -> list[dict]:
    """The training records of a chain of runs, earliest first: each run that started from a bundle keeps that
    bundle's own record under ``started_from``."""
    chain = []
    while isinstance(training, dict) and training:
        chain.append(training)
        training = (training.get("started_from") or {}).get("training")
    return chain[::-1]


def _source(corpus_dir: str) -> tuple[str, str]:
    """(what it holds, licence) of a corpus directory: by its path in the repository, else by its name."""
    return SOURCES.get(Path(corpus_dir).as_posix()) or SOURCES.get(Path(corpus_dir).name, ("", ""))


def _training(training: dict, cfg: dict) -> list[str]:
    if not cfg:
        return ["## Training", "", "No training record in the manifest.", ""]
    stages = _stages(training) or [training]
    out = ["## Training", ""]
    configs = [st.get("config") or {} for st in stages]
    for d in dict.fromkeys(d for c in configs for d in c.get("corpus", [])):
        what, licence = _source(d)
        out.append(f"- parallel: `{d}`" + (f": {what} ({licence})" if what else ""))
    for d in dict.fromkeys(d for c in configs for d in c.get("mono", [])):
        p = Path(d)
        what, licence = EVERYDAY_MONO if (p.name == "mono" and p.parent.name == "everyday") else _source(d)
        out.append(f"- monolingual (distillation only): `{d}`" + (f": {what} ({licence})" if what else ""))
    if len(stages) > 1:
        out += ["", f"In {len(stages)} stages, each starting from the model the one before made:"]
    for i, (st, c) in enumerate(zip(stages, configs)):
        out += [""] + _stage(st, c, numbered=i + 1 if len(stages) > 1 else 0, first=i == 0)
    return out + [""]


def _duration(seconds: float) -> str:
    """Training time as people say it: minutes under an hour, hours to one decimal above."""
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{max(1, round(seconds / 60))} min"


def _stage(training: dict, cfg: dict, numbered: int, first: bool) -> list[str]:
    """One run of a chain: steps, batch, device, losses and vocabulary, and a vocabulary move after it."""
    weights = {k: v for k, v in cfg.get("weights", {}).items() if v}
    corpora = ", ".join(f"`{Path(d).name}`" for d in cfg.get("corpus", []))
    line = (f"{numbered}. " if numbered else "") + (
        f"{_n(training.get('step'))} steps at batch {cfg.get('batch_size', '?')} "
        f"({_duration(training.get('elapsed_s', 0))} on {training.get('device', '?')}), "
        + (f"on {corpora}, " if numbered else "")
        + f"loss weights {json.dumps(weights)}, distillation on the "
        f"{'exported vector itself' if cfg.get('kd_space') == 'output' else 'training-only projection'}, "
        f"SentencePiece vocabulary {_n(cfg.get('model', {}).get('vocab_size') or cfg.get('vocab_size'))}.")
    if cfg.get("init_from") and first:
        line += (f" This run continued from `{cfg['init_from']}` (`init_from`): its steps come on top of that "
                 "model's training; the repository's docs/HISTORY.md lists every stage.")
    out = [line]
    moved = training.get("vocabulary_transfer")
    if isinstance(moved, dict):
        out += ["", ("   " if numbered else "") + f"Then moved to a vocabulary of {_n(moved.get('vocab_size'))} pieces without training "
                f"(`lwx-edge transfer`): {_n(moved.get('rows_kept'))} pieces kept their row, "
                f"{_n(moved.get('new_rows'))} new ones start from "
                + ("the teacher's vectors of them, mapped into the table" if moved.get("new_rows_from") == "teacher"
                   else str(moved.get("new_rows_from", "?")))
                + (f"; the token table is stored in {moved['table_bits']} bits" if moved.get("table_bits") == 4 else "")
                + (f", as rows of {moved['table_rank']} values and one map to the model's width (its best rank-"
                   f"{moved['table_rank']} form)" if moved.get("table_rank") else "")
                + "."]
    cut = training.get("ffn_pruned")
    if isinstance(cut, dict):
        out += ["", ("   " if numbered else "") + f"Then its feed-forward layers were cut from {_n(cut.get('of'))} to "
                f"{_n(cut.get('d_ff'))} neurons without training (`tools/prune_ffn.py`: the most used ones on "
                f"{_n(cut.get('scored_on_texts'))} training texts kept)."]
    blend = training.get("interpolated")
    if isinstance(blend, dict):
        out += ["", ("   " if numbered else "") + f"Then its weights were blended with those it started from, "
                f"{blend.get('alpha')} of the run's and the rest of the start's (`tools/interpolate.py`, WiSE-FT)."]
    return out


def _pick(results: dict, prefix: str) -> tuple[str, dict] | tuple[None, None]:
    for name, r in results.items():
        if name.startswith(prefix) and isinstance(r, dict):
            return name, r
    return None, None


def _measured(results: dict) -> list[str]:
    name, mine = _pick(results, "lwx-edge default")
    if mine is None:
        name, mine = _pick(results, "lwx-edge")
    _, teacher = _pick(results, "teacher")
    _, tfidf = _pick(results, "TF-IDF")
    if mine is None:
        return []
    tasks = [t for t in TASK_NAMES if t in mine]
    rows = ["## Measured (test split, one run)", "",
            "Cross-lingual retrieval P@1 (en↔X, both directions, averaged), zero-shot classification "
            "(a head fitted on English, scored on each language).", "",
            "| task | this model | teacher | TF-IDF |", "|---|---|---|---|"]
    cell = lambda r, t: f"{r[t]['avg']:.3f}" if r and t in r else "–"  # noqa: E731
    for t in tasks:
        rows.append(f"| {TASK_NAMES[t]} | {cell(mine, t)} | {cell(teacher, t)} | {cell(tfidf, t)} |")
    if "cls" in mine:
        c = lambda r: f"{r['cls']['avg_en_x']:.3f}" if r and "cls" in r else "–"  # noqa: E731
        rows.append(f"| classification en→X (balanced accuracy) | {c(mine)} | {c(teacher)} | {c(tfidf)} |")
    strong = [TASK_NAMES[t] for t in tasks if teacher and t in teacher and mine[t]["avg"] >= teacher[t]["avg"] - CLOSE]
    weak = [f"{TASK_NAMES[t]} ({mine[t]['avg']:.3f} vs {teacher[t]['avg']:.3f})" for t in tasks
            if teacher and t in teacher and mine[t]["avg"] < teacher[t]["avg"] - FAR]
    rows += ["", "**Strengths** (within 3 points of the teacher, or above it): " + (", ".join(strong) or "none") + ".",
             "**Weaknesses** (more than 10 points below the teacher): " + (", ".join(weak) or "none") + "."]
    worst = [(mine[t][k], k, t) for t in tasks for k in mine[t] if "-" in k]
    if worst:
        v, k, t = min(worst)
        rows.append(f"Weakest direction: {k} on {TASK_NAMES[t]} ({v:.3f}).")
    diag = [(t, mine[t]["diag"], (teacher or {}).get(t, {}).get("diag")) for t in tasks if "diag" in mine[t]]
    if diag and all("related_cos" in d for _, d, _ in diag):
        rows += ["", "Typical cosines (mean over the task's pairs; compare scores within one model, not across "
                 "models):", "", "| task | translations (this model) | unrelated texts (this model) | "
                 "translations (teacher) | unrelated (teacher) |", "|---|---|---|---|---|"]
        for t, d, td in diag:
            tcells = (f"{td['related_cos']:.2f} | {td['unrelated_cos']:.2f}" if td and "related_cos" in td
                      else "– | –")
            rows.append(f"| {TASK_NAMES[t]} | {d['related_cos']:.2f} | {d['unrelated_cos']:.2f} | {tcells} |")
    return rows + [""]
