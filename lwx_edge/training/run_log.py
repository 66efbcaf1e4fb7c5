"""A run's log: rank-0 progress messages and the JSONL metrics file of its run directory."""
from __future__ import annotations

import json
import logging
from pathlib import Path

from ..atomic import write_text_atomic

log = logging.getLogger("lwx_edge.train")  # the name users and tests filter on


class RunLog:
    """Rank-0 progress messages (the module's logger, INFO) and the JSONL metrics file."""

    def __init__(self, out_dir: Path, enabled: bool):
        self.enabled = enabled
        self.path = out_dir / "metrics.jsonl"

    def __call__(self, msg: str) -> None:
        if self.enabled:
            log.info(msg)

    def metrics(self, record: dict) -> None:
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")

    def drop_after(self, step: int) -> None:
        """Forget the records of steps after ``step``: a resumed run repeats them from its checkpoint."""
        if not (self.enabled and self.path.exists()):
            return
        kept = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                if json.loads(line).get("step", 0) > step:
                    continue
            except (ValueError, AttributeError):
                continue  # a line cut by the kill
            kept.append(line + "\n")
        write_text_atomic(self.path, "".join(kept))
