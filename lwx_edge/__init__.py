"""lwx-edge: on-device multilingual sentence embeddings.

Light imports only: ``import lwx_edge`` never imports torch.
"""
import logging

from ._version import __version__

# Library code logs through the standard logging module; nothing is shown unless the application configures
# logging (the command line does: lwx_edge._logging.configure_cli_logging).
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["Encoder", "Index", "__version__"]


def __getattr__(name):
    if name == "Encoder":
        from .encoder import Encoder

        return Encoder
    if name == "Index":
        from .index import Index

        return Index
    raise AttributeError(f"module 'lwx_edge' has no attribute {name!r}")
