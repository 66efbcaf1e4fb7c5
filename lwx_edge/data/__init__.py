"""Corpus readers and builders, training batches, teacher-vector cache (torch-free).

Modules (import them directly; this package imports nothing heavy):
``corpus`` (parallel readers, filters, stats), ``ddtp`` (Debian package descriptions),
``gettext`` (Debian UI message catalogs), ``mono`` (monolingual text), ``batches``, ``teacher``.
"""
