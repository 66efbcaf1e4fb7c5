"""Deprecated path: moved to lwx_edge.training.guard (this module goes in the next release)."""
from ._moved import forward

__getattr__ = forward(__name__)
