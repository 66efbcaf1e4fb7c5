"""One logging channel: library modules log through ``logging``; nothing shows unless the application configures
it; the command line writes INFO and above to stderr through tqdm (progress bars stay intact)."""
from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

from lwx_edge._logging import TqdmHandler, configure_cli_logging, reporter

PKG = Path(__file__).resolve().parents[2] / "lwx_edge"


def test_a_library_user_sees_nothing_unless_logging_is_configured():
    code = ("import logging, lwx_edge; log = logging.getLogger('lwx_edge.data.gettext'); "
            "log.info('an info line'); log.warning('a warning line'); print('done')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == "done\n" and r.stderr == "", r.stderr


def test_the_cli_handler_writes_info_and_warnings_to_stderr_once(capsys):
    logger = logging.getLogger("lwx_edge")
    before = list(logger.handlers), logger.level
    try:
        configure_cli_logging()
        configure_cli_logging()  # idempotent: one handler
        assert sum(isinstance(h, TqdmHandler) for h in logger.handlers) == 1
        logging.getLogger("lwx_edge.data.ddtp").info("ddtp: train pairs %s", "en-fr 3")
        logging.getLogger("lwx_edge.data.gettext").warning("%s skipped: %s", "pkg", "broken")
        logging.getLogger("lwx_edge.train").debug("not shown at INFO")
        out, err = capsys.readouterr()
        assert out == "" and err == "ddtp: train pairs en-fr 3\nwarning: pkg skipped: broken\n"
    finally:
        logger.handlers[:], logger.level = before


def test_the_cli_handler_does_not_also_print_through_a_root_handler_a_library_installed(capsys):
    """ExecuTorch's export stack configures root logging at import; the CLI's lines must still show once."""
    logger, root = logging.getLogger("lwx_edge"), logging.getLogger()
    before = list(logger.handlers), logger.level
    stray = logging.StreamHandler(sys.stderr)
    root.addHandler(stray)
    try:
        configure_cli_logging()
        logging.getLogger("lwx_edge.export").info("exporting model.int8.onnx")
        assert capsys.readouterr().err == "exporting model.int8.onnx\n"
    finally:
        root.removeHandler(stray)
        logger.handlers[:], logger.level = before


def test_a_log_callback_still_receives_the_messages_and_logging_gets_them_too(caplog):
    got = []
    with caplog.at_level(logging.INFO, logger="lwx_edge.export"):
        reporter("lwx_edge.export", got.append)("exporting onnx")
        reporter("lwx_edge.export")("no callback")
    assert got == ["exporting onnx"]
    assert [r.getMessage() for r in caplog.records] == ["exporting onnx", "no callback"]


def test_the_package_uses_no_other_channel():
    """No print(..., file=sys.stderr) and no tqdm.write outside the handler."""
    bad = []
    for path in PKG.rglob("*.py"):
        if path.name == "_logging.py" or "default_model" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"print\([^\n]*file=sys\.stderr", text) or "tqdm.write(" in text:
            bad.append(str(path.relative_to(PKG.parent)))
    assert not bad, bad
