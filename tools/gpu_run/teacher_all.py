"""Teacher vectors of every text the GPU recipes distil (the pairs' English side and all monolingual text),
computed once with WORKERS processes before the runs start, so that every run finds them cached.

    python tools/gpu_run/teacher_all.py [WORKERS [RECIPE ...]]   # from the folder that holds data/ and recipes/
    # WORKERS: default every core; RECIPE: names in recipes/ laid over recipes/default.json (default history/gpu-24k-lex);
    # "a+b" lays recipes/a.json, then recipes/b.json
"""
import os
import sys
import time

from lwx_edge.data.teacher import TeacherCache, USETeacher
from lwx_edge.training.config import TrainConfig
from lwx_edge.training.inputs import read_mono, read_pairs


def main() -> None:
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else os.cpu_count() or 1
    t, texts = time.time(), {}
    for name in sys.argv[2:] or ["history/gpu-24k-lex"]:
        cfg = TrainConfig.from_files(["recipes/default.json", *(f"recipes/{part}.json" for part in name.split("+"))])
        texts.update(dict.fromkeys([p.src for p in read_pairs(cfg.corpus, print)]
                                   + read_mono(cfg.mono, cfg.mono_max_per_lang, cfg.seed)))
    texts = list(texts)
    cache = TeacherCache(cfg.teacher_cache, USETeacher(1))
    cache.vectors(texts, progress=True, workers=workers)
    print(f"teacher vectors of {len(texts):,} texts ready in {time.time() - t:.0f} s", flush=True)


if __name__ == "__main__":  # the workers are spawned: they import this file
    main()
