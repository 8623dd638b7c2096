"""The documents are current: every cog block of README.md and docs/*.md regenerated in-process
(`make docs` does the same) reproduces the text that is there, else the test names each stale
line (file:line, the expected and the found text). The commands run once per session (docgen's
cache), so the cost is about one run of each documented command."""

import shutil
from pathlib import Path

import pytest

from docs import docgen

ROOT = Path(__file__).resolve().parent.parent


SECTIONS = [
    pytest.param(doc, a, b, id=f"{doc}:{a + 1}")
    for doc in docgen.DOCS
    for a, b, _ in docgen.parts(ROOT / doc)
]


@pytest.mark.parametrize(("doc", "start", "end"), SECTIONS)
def test_document_is_current(doc, start, end):
    """Each part of a section apart (docgen.parts: none reads what another made), so the workers
    share the documents' commands."""
    problems = docgen.stale(ROOT / doc, docgen.section_text(ROOT / doc, start, end))
    assert not problems, "stale (run `make docs`):\n" + "\n".join(problems[:30])


def test_sections_cover_every_block():
    """No cog block falls outside the sections the test checks, nor outside their parts."""
    for doc in docgen.DOCS:
        lines = (ROOT / doc).read_text().splitlines()
        blocks = [i for i, x in enumerate(lines) if x.startswith("<!-- [[[cog")]
        for spans in (docgen.sections(ROOT / doc), docgen.parts(ROOT / doc)):
            assert all(any(a <= i < b for a, b, _ in spans) for i in blocks), doc


def test_a_section_is_cut_only_between_blocks_that_share_no_name(tmp_path):
    """Blocks 1 and 3 of a section share `x` (cog runs a document's blocks in one namespace), so
    they and block 2 between them are one part; block 4 reads no earlier name and is a part of
    its own; the parts cover the section and each part alone regenerates its text."""
    cog = ["<!-- [[[cog", "]]] -->", "<!-- [[[end]]] -->"]
    lines = ["## One", *[cog[0], "x = 2", cog[1], cog[2]]]  # block 1 at line 1
    lines += [*[cog[0], "print(3)", cog[1], "3", cog[2]]]  # block 2 at line 5
    lines += [*[cog[0], "print(x + 1)", cog[1], "3", cog[2]]]  # block 3 at line 10, reads x
    lines += ["prose", *[cog[0], "x = 5", "print(x)", cog[1], "5", cog[2]]]  # block 4 at line 16
    doc = tmp_path / "x.md"
    doc.write_text("\n".join(lines) + "\n")
    assert docgen.sections(doc) == [(0, 22, "One")]
    assert docgen.parts(doc) == [(0, 16, "One"), (16, 22, "One")]
    for a, b, _ in docgen.parts(doc):
        assert docgen.stale(doc, docgen.section_text(doc, a, b)) == []


def test_a_changed_catalog_figure_names_the_stale_line(tmp_path, monkeypatch):
    """A scratch catalog whose H100 has 4.00 TB/s instead of 3.35 moves the bf16 ridge the
    catalog section quotes (989.5 TFLOP/s / 3.35 TB/s = 295.37 FLOP/B; / 4.00 = 247.38): the
    check names that line of docs/COMMANDS.md with both figures."""
    doc = ROOT / "docs/COMMANDS.md"
    lines = doc.read_text().splitlines()
    # the catalog section's cog block alone, the other lines blanked (line numbers kept)
    start = next(i for i, x in enumerate(lines) if "hardware show h100 --format json | jq" in x)
    start = max(i for i in range(start) if lines[i].startswith("<!-- [[[cog"))
    end = next(i for i in range(start, len(lines)) if lines[i] == "<!-- [[[end]]] -->")
    text = "\n".join(x if start <= i <= end else "" for i, x in enumerate(lines)) + "\n"
    assert docgen.stale(doc, text) == []  # current as shipped

    scratch = tmp_path / "catalog"
    scratch.mkdir()
    src = (ROOT / "hardware/nvidia-h100-sxm.yaml").read_text()
    assert "bandwidth_tb_s: 3.35," in src
    (scratch / "h100.yaml").write_text(
        src.replace("bandwidth_tb_s: 3.35,", "bandwidth_tb_s: 4.00,")
    )
    monkeypatch.setenv("ROOFLINE_CATALOG", str(scratch))
    problems = docgen.stale(doc, text)
    ridge_line = max(  # the generated line (the last mention: the first is the block's code)
        i for i, x in enumerate(lines) if "jq '.hardware.ridge_flops_per_byte.bf16'" in x
    )
    named = [p for p in problems if p.startswith(f"docs/COMMANDS.md:{ridge_line + 1}:")]
    assert named, problems
    assert "295.37" in named[0] and "247.38" in named[0], named[0]


def test_images_are_regenerated_not_compared(tmp_path, monkeypatch):
    """`make docs` (DOCGEN_IMAGES=1) copies a chart into place; the test compares only text."""
    monkeypatch.setattr(docgen, "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    cmd = "roofline plot llama-3.1-8b h100 --batch 8 --prompt 4k -o chart.svg"
    monkeypatch.delenv("DOCGEN_IMAGES", raising=False)
    docgen.image(cmd, "docs/chart.svg")
    assert not (tmp_path / "docs/chart.svg").exists()
    monkeypatch.setenv("DOCGEN_IMAGES", "1")
    docgen.image(cmd, "docs/chart.svg")
    assert (tmp_path / "docs/chart.svg").read_text().startswith("<?xml")


def test_a_reversed_relation_stops_generation(tmp_path):
    """A block whose prose states a relation asserts it: generation fails, it does not print."""
    doc = tmp_path / "x.md"
    doc.write_text(
        "<!-- [[[cog\n"
        'ideal = data("roofline analyze llama-3.1-8b h100")["ideal"]["tpot_s"]\n'
        'expected = data("roofline analyze llama-3.1-8b h100")["expected"]["tpot_s"]\n'
        "assert expected < ideal  # the false claim: expected faster than the speed of light\n"
        'print("expected beats ideal")\n'
        "]]] -->\n<!-- [[[end]]] -->\n"
    )
    with pytest.raises(Exception, match="assert expected < ideal"):
        docgen.stale(doc)
    shutil.rmtree(tmp_path)


def test_a_command_runs_once_per_session_across_workers(tmp_path, monkeypatch):
    """docgen._shared: a second process (its own _CACHE and scratch directory) of the same session
    takes the first one's result and the files its command wrote, without running it again."""
    monkeypatch.setenv("DOCGEN_SHARED_CACHE", str(tmp_path / "shared"))
    monkeypatch.setattr(docgen, "_WORKDIR", [tmp_path / "first"])
    (tmp_path / "first").mkdir()
    calls = []

    def invoke():
        calls.append(1)
        (docgen.workdir() / "out").mkdir(exist_ok=True)
        (docgen.workdir() / "out/plan.html").write_text("<html>")
        return docgen.Result(0, "stdout", "stderr")

    key = ("roofline size x -o out/plan.html", "80", "")
    assert docgen._shared(key, invoke) == docgen.Result(0, "stdout", "stderr")
    monkeypatch.setattr(docgen, "_WORKDIR", [tmp_path / "second"])  # another worker
    (tmp_path / "second").mkdir()
    assert docgen._shared(key, invoke) == docgen.Result(0, "stdout", "stderr")
    assert len(calls) == 1
    assert (tmp_path / "second/out/plan.html").read_text() == "<html>"


def test_a_stale_line_is_named_by_its_line_in_the_whole_document(tmp_path):
    """stale() diffs only what lies between the lines both texts share at the start and the end
    (blanked lines included): the line numbers are still the document's."""
    doc = tmp_path / "x.md"
    text = "\n" * 50 + '<!-- [[[cog\nprint("new")\n]]] -->\nold\n<!-- [[[end]]] -->\n' + "\n" * 50
    assert docgen.stale(doc, text) == [f"{doc}:54: expected 'new', found 'old'"]  # 50 + 4


def test_a_computation_runs_once_for_the_same_inputs(run, monkeypatch):
    """docgen.computed_once (tests' compute_once): serve at 60 then 120 columns simulates once
    (the second renders a copy of the first's result) and prints what a run of its own prints;
    another rate is other inputs and simulates again."""
    import roofline.cli.traffic as traffic

    args = ("serve", "llama-3.1-8b", "h100", "--rate", "4", "--requests", "20")
    alone = run(*args, env={"COLUMNS": "120"}).stdout  # no sharing: its own simulation
    calls = []
    real = traffic.serve_rates
    monkeypatch.setattr(traffic, "serve_rates", lambda *a, **k: calls.append(1) or real(*a, **k))
    counted = traffic.serve_rates
    store: dict[bytes, bytes] = {}
    with docgen.computed_once(store):
        narrow = run(*args, env={"COLUMNS": "60"}).stdout
        wide = run(*args, env={"COLUMNS": "120"}).stdout
        assert len(calls) == 1 and len(store) == 1
        run(*args[:-3], "5", *args[-2:], env={"COLUMNS": "120"})  # --rate 5
        assert len(calls) == 2 and len(store) == 2
    assert wide == alone and narrow != wide  # the copy rendered as its own run; widths differ
    assert traffic.serve_rates is counted  # put back on leaving
