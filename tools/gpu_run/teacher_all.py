"""Teacher vectors of every text the GPU recipes distil (the pairs' English side and all monolingual text),
computed once with WORKERS processes before the runs start, so that both runs find them cached.

    python tools/gpu_run/teacher_all.py [WORKERS]    # from the folder that holds data/; default: every core
"""
import os
import sys
import time

from lwx_edge.data.teacher import TeacherCache, USETeacher
from lwx_edge.train import TrainConfig, _read_mono, _read_pairs


def main() -> None:
    cfg = TrainConfig.from_files(["recipes/default.json", "recipes/gpu-16k.json"])
    t = time.time()
    texts = [p.src for p in _read_pairs(cfg.corpus, print)] + _read_mono(cfg.mono, None, cfg.seed)
    cache = TeacherCache(cfg.teacher_cache, USETeacher(1))
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else os.cpu_count() or 1
    cache.vectors(texts, progress=True, workers=workers)
    print(f"teacher vectors of {len(texts):,} texts ready in {time.time() - t:.0f} s", flush=True)


if __name__ == "__main__":  # the workers are spawned: they import this file
    main()
