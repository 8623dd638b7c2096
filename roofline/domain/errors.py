"""The error hierarchy. Every user mistake raises a RooflineError; the CLI prints one line and
exits 2."""

from __future__ import annotations


class RooflineError(Exception):
    """Base class for every error the tool reports to a user."""

    hint: str | None = None

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class CatalogError(RooflineError, ValueError):
    """A catalog file is malformed or incomplete (names file, entry and key)."""


class UnknownEntryError(RooflineError, KeyError):
    """An id that is in no catalog; carries a 'did you mean' hint."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the plain sentence
        return str(self.args[0])


class InputError(RooflineError, ValueError):
    """A value given on the command line or through the API is out of range or unparsable."""


class DoesNotFitError(RooflineError):
    """The model's weights (plus runtime overhead) do not fit in the memory given."""


def did_you_mean(name: str, names: list[str], otherwise: str) -> str:
    """The hint for an unknown `name`: up to three `names` (any case) that begin with it (an id
    given without its form factor: nvidia-h100 for nvidia-h100-sxm), else the closest ones,
    else `otherwise`."""
    from difflib import get_close_matches  # only on an error

    low = name.lower()
    close = sorted(n for n in names if n.startswith(low))[:3]
    close = close or get_close_matches(low, names, n=3, cutoff=0.5)
    return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else otherwise
