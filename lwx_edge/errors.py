"""Errors users see. Each names the problem; none is a stack trace from deep inside."""


class LwxError(Exception):
    """Base class of every lwx-edge error."""


class InputError(LwxError, ValueError):
    """Bad user input: an empty text, a non-string, wrong shapes."""


class CorpusError(LwxError):
    """A corpus file that cannot be read or has the wrong layout."""


class BundleError(LwxError):
    """A model bundle that is missing, corrupt, truncated or mismatched."""


class BackendUnavailable(LwxError):
    """The runtime a backend needs is not installed."""


def open_input(path, what: str, error: type[LwxError] = InputError, mode: str = "r", **kwargs):
    """``open(path, mode, **kwargs)``, or ``error`` naming the path and ``what`` the file is for
    ("no such corpus file", "cannot read the corpus file (Permission denied)")."""
    try:
        return open(path, mode, **kwargs)
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except OSError as e:
        raise error(f"{path}: cannot read the {what} ({e.strerror or e})") from None
