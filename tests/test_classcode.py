"""The CLI's cache of compiled dataclass methods: the classes it makes behave as plain
dataclasses, a second run compiles nothing, and a broken or unwritable cache is never an error."""

from __future__ import annotations

import dataclasses

import pytest

from roofline.cli import classcode


def _define() -> type:
    @dataclasses.dataclass(frozen=True)
    class Point:
        x_m: float
        y_m: float = 2.0
        tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)

    return Point


def _check(point_cls: type) -> None:
    p = point_cls(1.0)
    assert (p.x_m, p.y_m, p.tags) == (1.0, 2.0, ())
    assert p == point_cls(1.0, 2.0) and p != point_cls(3.0)
    assert hash(p) == hash(point_cls(1.0))
    assert repr(p).endswith("Point(x_m=1.0, y_m=2.0, tags=())")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x_m = 5.0  # type: ignore[misc]
    assert dataclasses.replace(p, y_m=4.0).y_m == 4.0


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ROOFLINE_NO_CACHE", raising=False)
    return tmp_path / "cache"


def test_first_run_compiles_and_saves_second_run_only_executes(cache_dir):
    with classcode.cached_dataclass_code() as first:
        _check(_define())
    assert first is not None and first.compiled > 0
    assert list(cache_dir.glob("dataclass-code-*.marshal"))
    with classcode.cached_dataclass_code() as second:
        _check(_define())
    assert second is not None and second.compiled == 0 and second.used
    assert "exec" not in vars(dataclasses)  # the stand-in is gone after the block


def test_broken_cache_file_is_ignored(cache_dir):
    with classcode.cached_dataclass_code():
        _define()
    for f in cache_dir.glob("dataclass-code-*.marshal"):
        f.write_bytes(b"not marshal data")
    with classcode.cached_dataclass_code() as cc:
        _check(_define())
    assert cc is not None and cc.compiled > 0


def test_unwritable_cache_location_is_not_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory would go")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(blocker / "cache"))
    with classcode.cached_dataclass_code():
        _check(_define())


def test_no_cache_leaves_dataclasses_alone(monkeypatch):
    monkeypatch.setenv("ROOFLINE_NO_CACHE", "1")
    with classcode.cached_dataclass_code() as cc:
        assert cc is None and "exec" not in vars(dataclasses)
        _check(_define())
