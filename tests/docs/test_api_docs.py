"""docs/API.md is generated from the docstrings and kept up to date."""
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "api_docs.py"


def test_api_reference_is_up_to_date_and_covers_the_familiar_api():
    r = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    text = (TOOL.parents[1] / "docs" / "API.md").read_text(encoding="utf-8")
    for name in ("Encoder.embed(", "Encoder.encode(", "Encoder.get_sentence_embedding_dimension(",
                 "Encoder.load(", "LogisticHead", "load_head(", "model_card("):
        assert name in text, name
