"""Errors users see. Each names the problem; none is a stack trace from deep inside."""


class LwxError(Exception):
    """Base class of every lwx-edge error."""


class InputError(LwxError, ValueError):
    """Bad user input: an empty text, a non-string, wrong shapes."""


class CorpusError(LwxError):
    """A corpus file that cannot be read or has the wrong layout."""


class BundleError(LwxError):
    """A model bundle that is missing, corrupt, truncated or mismatched."""
