"""The ``lwx-edge`` command line (typer). One module per subcommand; heavy imports happen inside them."""
from __future__ import annotations

import errno
import os
import sys
import warnings
from pathlib import Path
from typing import TextIO

import typer

from .._logging import configure_cli_logging
from ..errors import LwxError
from . import data, embed, eval, export, fit, index, info, predict, search, train, transfer

PACKAGE_DIR = Path(__file__).resolve().parents[1]
_show_warning = warnings.showwarning

app = typer.Typer(name="lwx-edge", help="On-device multilingual sentence embeddings: train, transfer, export, embed, fit heads, predict, search, index, info.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None)  # plain help: no type labels (<bool>) on flags, and [ann], [teacher]
                                          # stay text (rich markup would drop them)
app.command("train")(train.train)
app.command("transfer")(transfer.transfer)
app.command("embed")(embed.embed)
app.command("export")(export.export)
app.command("fit")(fit.fit)
app.command("predict")(predict.predict)
app.command("search")(search.search)
app.command("eval")(eval.eval_)
app.command("info")(info.info)
app.add_typer(data.app, name="data")
app.add_typer(index.app, name="index")


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"lwx-edge {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """On-device multilingual sentence embeddings: train, transfer, export, embed, fit heads, predict, search, index, info."""
    configure_cli_logging()  # progress and notes of the library: INFO to stderr, through tqdm
    warnings.showwarning = _one_line_warning


def main() -> None:
    """Entry point of the ``lwx-edge`` console script: run the app, errors as one line and exit status 2."""
    if sys.stdout is None:  # started with standard output closed (>&-): every command writes to it
        sys.stderr.write("error: standard output is closed\n")
        sys.exit(2)
    try:
        app()
    except LwxError as e:
        typer.secho(f"error: {e}", err=True, fg=typer.colors.RED)
        sys.exit(2)
    except BrokenPipeError:  # the reader went away (| head): stop quietly, as other command-line tools do
        _drop_stdout()
        sys.exit(141)
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EIO, errno.EDQUOT):
            raise
        _drop_stdout()
        typer.secho(f"error: cannot write {e.filename or 'the output'}: {e.strerror}", err=True, fg=typer.colors.RED)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                      file: TextIO | None = None, line: str | None = None) -> None:
    """The package's own warnings as ``warning: MESSAGE`` (not Python's file, line and source); others as Python
    shows them."""
    if Path(filename).resolve().is_relative_to(PACKAGE_DIR):
        typer.secho(f"warning: {message}", err=True, fg=typer.colors.YELLOW)
    else:
        _show_warning(message, category, filename, lineno, file, line)


def _drop_stdout() -> None:
    """Point standard output at /dev/null, so that the exit's flush of what could not be written fails no more."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
