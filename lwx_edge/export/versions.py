"""Installed package versions, recorded in the artefacts' metadata."""
from __future__ import annotations


def package_version(pkg: str) -> str:
    """The installed version of ``pkg``, or "unknown"."""
    try:
        from importlib.metadata import version

        return version(pkg)
    except Exception:
        return "unknown"
