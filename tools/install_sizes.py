"""How much each install of lwx-edge puts on disk: the base install and each extra, with everything they pull in.

    python tools/install_sizes.py -o benchmarks/install_sizes.json

Reads the installed distributions of this environment (``importlib.metadata``; run it where
``pip install -e ".[dev]"`` was done): for the base install and for base + each extra, the closure of the
requirements (markers evaluated here, other extras' requirements followed as pip does) and the bytes of every
file each distribution's RECORD lists. lwx-edge itself counts as its package directory (the default model
included). pip, setuptools and wheel are left out (every environment has them).
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
SKIP = {"pip", "setuptools", "wheel"}


def dist_bytes(dist: metadata.Distribution) -> int:
    if canonicalize_name(dist.metadata["Name"]) == "lwx-edge":
        return sum(p.stat().st_size for p in (ROOT / "lwx_edge").rglob("*") if p.is_file()
                   and "__pycache__" not in p.parts)
    total = 0
    for f in dist.files or ():
        try:
            total += Path(dist.locate_file(f)).stat().st_size
        except OSError:
            pass
    return total


def closure(name: str, extras: tuple[str, ...] = ()) -> dict[str, int]:
    """{distribution: bytes} of ``name[extras]`` and everything it requires, as installed here."""
    seen: dict[str, int] = {}
    todo = [(name, extras)]
    while todo:
        n, ex = todo.pop()
        key = canonicalize_name(n)
        try:
            dist = metadata.distribution(n)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"error: {n} is not installed here; run pip install -e '.[dev]' first") from None
        if key not in seen:
            seen[key] = dist_bytes(dist)
        for raw in dist.requires or ():
            req = Requirement(raw)
            if canonicalize_name(req.name) in SKIP:
                continue
            env = [{"extra": e} for e in ex] or [{"extra": ""}]
            if req.marker is not None and not any(req.marker.evaluate(e) for e in env):
                continue
            if canonicalize_name(req.name) not in seen or req.extras:
                todo.append((req.name, tuple(req.extras)))
    return seen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", type=Path)
    a = ap.parse_args()
    extras = [e for e in metadata.metadata("lwx-edge").get_all("Provides-Extra") or [] if e != "dev"]
    base = closure("lwx-edge")
    rows = {"base": {"mb": round(sum(base.values()) / 1e6, 1), "distributions": len(base)}}
    for extra in extras:
        dists = closure("lwx-edge", (extra,))
        added = {k: v for k, v in dists.items() if k not in base}
        biggest = sorted(added.items(), key=lambda kv: -kv[1])[:5]
        rows[f"base+{extra}"] = {"mb": round(sum(dists.values()) / 1e6, 1), "added_mb": round(sum(added.values()) / 1e6, 1),
                                 "biggest": {k: round(v / 1e6, 1) for k, v in biggest}}
    report = {"command": "python tools/install_sizes.py" + (f" -o {a.out}" if a.out else ""),
              "python": sys.version.split()[0], "platform": platform.platform(),
              "torch": metadata.version("torch") if "torch" in {canonicalize_name(d.metadata["Name"])
                                                                 for d in metadata.distributions()} else None,
              "sizes": rows}
    text = json.dumps(report, indent=2)
    if a.out:
        a.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
