"""docs/API.md runs: every example in it is a doctest whose figures are derived by hand in the
text beside it, and `help(roofline)` lists the API by command."""

import doctest
import pydoc
from pathlib import Path

import roofline

ROOT = Path(__file__).resolve().parent.parent


def test_api_doc_examples_run():
    result = doctest.testfile(
        str(ROOT / "docs" / "API.md"),
        module_relative=False,
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
    )
    assert result.attempted > 15 and result.failed == 0


def test_help_shows_the_api():
    text = pydoc.render_doc(roofline, renderer=pydoc.plaintext)
    for name in ("kv_footprint", "byte_traffic", "speculate", "plan_memory", "request"):
        assert name in text
        assert hasattr(roofline, name)


def test_package_docstring_example_runs():
    assert doctest.testmod(roofline).failed == 0
