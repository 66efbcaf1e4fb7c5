"""tools/apertium_pairs.py: each language through its Apertium route, rows in order, and clear errors (a fake
``apertium`` on PATH tags each line with the mode it went through)."""
import os
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "apertium_pairs.py"
FAKE = "#!/bin/sh\n# apertium -u MODE: each line tagged with MODE\nsed \"s/\\$/ <$2>/\"\n"


def _run(tmp_path, *args, fake=FAKE):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if fake is not None:
        (bin_dir / "apertium").write_text(fake)
        (bin_dir / "apertium").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    if fake is None:
        env["PATH"] = str(bin_dir)
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, env=env)


def test_each_language_goes_through_its_route_and_rows_keep_their_order(tmp_path):
    (tmp_path / "rows.tsv").write_text("id\ten\tde\n0\tNever say die!\tNur nicht verzweifeln!\n"
                                       "1\tWhat a pity.\tWie schade.\n", encoding="utf-8")
    result = _run(tmp_path, str(tmp_path / "rows.tsv"), str(tmp_path / "out.tsv"))
    assert result.returncode == 0, result.stderr
    rows = [line.split("\t") for line in (tmp_path / "out.tsv").read_text(encoding="utf-8").splitlines()]
    assert rows == [["Never say die!", "Never say die! <eng-spa> <es-fr>", "Nur nicht verzweifeln!",
                     "Never say die! <eng-spa>", "Never say die! <eng-cat> <cat-ita>"],
                    ["What a pity.", "What a pity. <eng-spa> <es-fr>", "Wie schade.", "What a pity. <eng-spa>",
                     "What a pity. <eng-cat> <cat-ita>"]]


def test_a_missing_apertium_or_a_lost_line_is_one_clear_error(tmp_path):
    (tmp_path / "rows.tsv").write_text("en\tde\nYes.\tJa.\nNo.\tNein.\n", encoding="utf-8")
    missing = _run(tmp_path, str(tmp_path / "rows.tsv"), str(tmp_path / "out.tsv"), fake=None)
    assert missing.returncode != 0 and "apertium is not installed: apt-get install apertium" in missing.stderr
    lossy = _run(tmp_path, str(tmp_path / "rows.tsv"), str(tmp_path / "out.tsv"), fake="#!/bin/sh\nhead -n 1\n")
    assert lossy.returncode != 0 and "1 lines out for 2 in" in lossy.stderr and "Traceback" not in lossy.stderr
    assert not (tmp_path / "out.tsv").exists()
