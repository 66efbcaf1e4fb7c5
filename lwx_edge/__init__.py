"""lwx-edge: on-device multilingual sentence embeddings.

Light imports only: ``import lwx_edge`` never imports torch.
"""
from ._version import __version__

__all__ = ["Encoder", "Index", "__version__"]


def __getattr__(name):
    if name == "Encoder":
        from .encoder import Encoder

        return Encoder
    if name == "Index":
        from .index import Index

        return Index
    raise AttributeError(f"module 'lwx_edge' has no attribute {name!r}")
