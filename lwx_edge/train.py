"""Deprecated path: moved to lwx_edge.training (config, trainer, inputs, objective); goes in the next release."""
from ._moved import forward

__getattr__ = forward(__name__)
