"""lwx-edge: on-device multilingual sentence embeddings.

Light imports only: ``import lwx_edge`` never imports torch.
"""
__version__ = "0.1.0"

__all__ = ["Encoder", "__version__"]


def __getattr__(name):
    if name == "Encoder":
        from .encoder import Encoder

        return Encoder
    raise AttributeError(f"module 'lwx_edge' has no attribute {name!r}")
