"""Bad input by class, not by case (issue 36): each class of bad input has one rule, applied where
every command meets it, and here a planted case per class. Bad input is one stderr line and exit 2,
nothing on stdout; never a traceback, never a silent answer."""

from __future__ import annotations

import pathlib

import pytest
from typer.testing import CliRunner

from roofline.cli import app


def _refused(r, needle: str) -> None:
    assert r.code == 2, r.stdout + r.stderr
    assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert needle in r.stderr, r.stderr


# --- files: permissions, directories, encodings, binary content, standard input ---------------


def test_a_file_behind_a_locked_directory_is_one_line_naming_it(run, tmp_path, monkeypatch):
    """Probing a path in a directory one may not enter raises PermissionError from stat (so from
    is_file and exists): any OSError that names a file is that file's one line."""
    locked = tmp_path / "locked" / "config.json"
    real_stat = pathlib.Path.stat

    def stat(self, *a, **k):
        if str(self).startswith(str(locked.parent)):
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, *a, **k)

    monkeypatch.setattr(pathlib.Path, "stat", stat)
    _refused(run("analyze", str(locked), "h100"), f"{locked}: Permission denied")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"\xff\xfe\x00 not text \xc3\x28", "is not UTF-8 text"),  # Latin-1 / UTF-16 bytes
        (b"deployments:\x00\x01\x02 []\n", "is binary, not text"),  # valid UTF-8, but NULs
    ],
)
@pytest.mark.parametrize("where", ["file", "stdin"])
def test_undecodable_or_binary_input_is_one_line_naming_it(run, tmp_path, content, says, where):
    if where == "file":
        spec = tmp_path / "spec.yaml"
        spec.write_bytes(content)
        _refused(run("check", "--spec", str(spec)), f"{spec}: {says}")
    else:  # '-': read as bytes and decoded strictly, whatever the stream's own error handler
        r = CliRunner().invoke(app, ["check", "--spec", "-"], input=content)
        assert r.exit_code == 2 and r.stdout == "", r.stdout
        assert r.stderr.count("\n") == 1 and f"<stdin>: {says}" in r.stderr


def test_a_directory_where_a_file_belongs_is_one_line(run, tmp_path):
    _refused(run("check", "--spec", str(tmp_path)), "is a directory")
