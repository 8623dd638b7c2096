"""The suite's own order (tests/conftest.py): the longest tests start first, dealt across the
pytest-xdist workers, and the tests sharing a module fixture stay together."""

from __future__ import annotations

from types import SimpleNamespace

from conftest import DURATIONS, deal, units_of


def test_the_longest_tests_start_first_one_share_each():
    # 10, 8, 3 and 2 s on 2 workers, by hand: 10 -> A, 8 -> B, 3 -> B (8 < 10: 11), 2 -> A
    # (10 < 11: 12); the four 0 s tests to the share with fewer tests (ties to the first)
    seconds = {"a": 10.0, "b": 8.0, "c": 3.0, "d": 2.0}
    units = [[t] for t in "efgh"] + [["d"], ["c"], ["b"], ["a"]]
    assert deal(units, seconds, 2) == [["a", "d", "e", "g"], ["b", "c", "f", "h"]]
    assert deal(units, seconds, 1) == [["a", "b", "c", "d", "e", "f", "g", "h"]]


def test_a_module_sharing_a_fixture_travels_whole():
    # m::x (1 s) and m::y (6 s) share a module fixture: one 7 s unit, before the 5 s test
    units = [["m::x", "m::y"], ["n::z"], ["n::w"]]
    seconds = {"m::y": 6.0, "m::x": 1.0, "n::z": 5.0}
    assert deal(units, seconds, 2) == [["m::x", "m::y"], ["n::z", "n::w"]]


def test_each_share_is_the_size_of_the_slice_xdist_hands_its_worker():
    # 7 tests on 2 workers: worksteal hands the first 7 // 2 = 3 of the order to one worker and
    # the other 4 to the second, so the shares hold 3 and 4 tests, else b (8 s) would sit at the
    # tail of the first worker's slice. a -> A, b -> B; the 4-test unit fits neither share's
    # room (2 and 3): its tests fill A to 3, then B; x to the room B has left
    units = [["a"], ["b"], ["m1", "m2", "m3", "m4"], ["x"]]
    shares = deal(units, {"a": 10.0, "b": 8.0}, 2)
    assert shares == [["a", "m1", "m2"], ["b", "m3", "m4", "x"]]
    assert [len(s) for s in shares] == [7 // 2, 7 - 7 // 2]


def _item(nodeid: str, scope: str | None, travels_with: str | None = None) -> SimpleNamespace:
    """What units_of reads of a collected test: its id, its module and its fixtures' scopes."""
    defs = {"f": [SimpleNamespace(scope=scope)]} if scope else {}
    module = SimpleNamespace(**({"TRAVELS_WITH": travels_with} if travels_with else {}))
    return SimpleNamespace(
        nodeid=nodeid, module=module, _fixtureinfo=SimpleNamespace(name2fixturedefs=defs)
    )


def test_a_module_naming_another_travels_with_it():
    # a.py's x and z share a module fixture, y does not; b.py's test has a module fixture of
    # its own and names a.py (TRAVELS_WITH): one unit a.py::x, a.py::z, b.py::w; y alone; c.py's
    # function-scoped test alone
    items = [
        _item("a.py::x", "module"), _item("a.py::y", "function"), _item("a.py::z", "module"),
        _item("b.py::w", "module", "a.py"), _item("c.py::v", "function"),
    ]  # fmt: skip
    assert units_of(items) == [["a.py::x", "a.py::z", "b.py::w"], ["a.py::y"], ["c.py::v"]]
    items[3] = _item("b.py::w", "module")  # without TRAVELS_WITH: a unit of its own
    assert units_of(items) == [["a.py::x", "a.py::z"], ["a.py::y"], ["b.py::w"], ["c.py::v"]]


def test_the_recorded_durations_name_collected_tests(request):
    """The ids in tests/durations.json are tests this session collected: a renamed or removed
    test weighs nothing, and once such stale ids hold more than a quarter of the recorded CPU
    seconds the longest-first order is mostly guesswork, so `make durations` is due. (A doc
    part's id carries its line, so an edit above it renames it: a few stale ids are tolerated
    rather than failing every docs change.)"""
    import json

    ids = {item.nodeid for item in request.session.items}
    recorded = json.loads(DURATIONS.read_text())
    if len(ids) > 1000:  # the whole suite collected (not a -k or one-file run)
        stale = {k: s for k, s in recorded.items() if k not in ids}
        share = sum(stale.values()) / sum(recorded.values())
        assert share <= 0.25, f"run `make durations`: {share:.0%} stale, e.g. {sorted(stale)[:3]}"
