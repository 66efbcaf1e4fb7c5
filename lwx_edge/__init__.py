"""lwx-edge: on-device multilingual sentence embeddings.

Light imports only: ``import lwx_edge`` never imports torch.
"""
import logging
from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:  # type checkers see the real classes; at run time they are imported on first use
    from .encoder import EmptyTextWarning, Encoder, TruncationWarning
    from .index import Index

# Library code logs through the standard logging module; nothing is shown unless the application configures
# logging (the command line does: lwx_edge._logging.configure_cli_logging).
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["EmptyTextWarning", "Encoder", "Index", "TruncationWarning", "__version__"]


def __getattr__(name):
    if name in ("Encoder", "EmptyTextWarning", "TruncationWarning"):
        from . import encoder

        return getattr(encoder, name)
    if name == "Index":
        from .index import Index

        return Index
    raise AttributeError(f"module 'lwx_edge' has no attribute {name!r}")
