"""tools/run_curves.py: runs' dev curves and guard events from metrics.jsonl into one benchmark record."""
import json
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "run_curves.py"


def _write_run(path: Path, records: list) -> Path:
    path.mkdir()
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_resumed_run_counts_its_repeated_evaluation_once_and_guard_events_are_kept(tmp_path):
    run = _write_run(tmp_path / "a", [
        {"dev/xsr@1/avg": 0.2, "dev/unrelated_cos": 0.4, "step": 0},
        {"align": 6.0, "gen": 1.0, "step": 2, "elapsed_s": 10.0},
        {"dev/xsr@1/avg": 0.31, "dev/unrelated_cos": 0.8, "step": 2},
        {"dev/xsr@1/avg": 0.3, "dev/unrelated_cos": 0.8, "step": 2},  # resumed: the checkpoint's step evaluated again
        {"event": "rollback", "step": 4, "to_step": 2, "reason": "representation collapse", "lr_scale": 0.5},
        {"align": 3.0, "gen": 1.0, "step": 4, "elapsed_s": 21.5},
        {"dev/xsr@1/avg": 0.45, "dev/unrelated_cos": 0.7, "step": 4},
    ])
    out = tmp_path / "rec.json"
    r = subprocess.run([sys.executable, str(TOOL), "--out", str(out), "--what", "test", f"run a={run}",
                        "--command", "run a=lwx-edge train ..."], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rec = json.loads(out.read_text())
    a = rec["runs"]["run a"]
    assert a["dev_p1_by_step"] == {"0": 0.2, "2": 0.3, "4": 0.45} and a["align_by_step"] == {"2": 6.0, "4": 3.0}
    assert a["last_step"] == 4 and a["elapsed_s"] == 21.5 and a["command"] == "lwx-edge train ..."
    assert [e["reason"] for e in a["guard_events"]] == ["representation collapse"]
    assert rec["what"] == "test" and rec["machine"]["cores"] >= 1
    assert "run a: 0: 0.200, 2: 0.300, 4: 0.450; guard events 1" in r.stdout


def test_a_run_without_metrics_is_one_clear_line_and_writes_nothing(tmp_path):
    out = tmp_path / "rec.json"
    r = subprocess.run([sys.executable, str(TOOL), "--out", str(out), "--what", "x", f"a={tmp_path / 'none'}"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "cannot read the run's metrics" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()
    r = subprocess.run([sys.executable, str(TOOL), "--out", str(out), "--what", "x", "a=.", "--command", "no label"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "each --command is label=" in r.stderr and not out.exists()
