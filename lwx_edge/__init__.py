"""lwx-edge: on-device multilingual sentence embeddings.

Light imports only: ``import lwx_edge`` never imports torch.
"""
__version__ = "0.1.0"

__all__ = ["Encoder", "Index", "__version__"]


def __getattr__(name):
    if name == "Encoder":
        from .encoder import Encoder

        return Encoder
    if name == "Index":
        from .index import Index

        return Index
    raise AttributeError(f"module 'lwx_edge' has no attribute {name!r}")
