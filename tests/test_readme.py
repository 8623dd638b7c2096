"""Every `roofline …` command in the sh blocks of README.md and docs/*.md runs and exits 0 (or
the 1 the document says), so the examples work when pasted. A command inside a cog block's output
was run by its generation (docgen.block checks the exit code) and is run again by
tests/test_docs.py; only the others (e.g. a fragment merged without a cog block) run here."""

import re
import shlex
from pathlib import Path

import pytest

from docs import docgen

ROOT = Path(__file__).resolve().parent.parent


def _commands() -> tuple[list[str], list[str]]:
    generated, plain = [], []
    for doc in docgen.DOCS:
        inside_output = in_sh = False
        for line in (ROOT / doc).read_text().splitlines():
            if line.startswith("]]] -->"):
                inside_output = True
            elif line.startswith("<!-- [[[end]]] -->"):
                inside_output = False
            elif line.startswith("```"):
                in_sh = line == "```sh" and not in_sh
            elif in_sh and re.match(r"^(NO_COLOR=1 |cat \S+ \| )?roofline ", line.strip()):
                (generated if inside_output else plain).append(line.strip())
    return generated, plain


GENERATED, PLAIN = _commands()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory):
    return tmp_path_factory.mktemp("readme")


def test_plain_commands_run(run, workdir, monkeypatch):
    """Commands outside a cog block (none today: every example is generated) run as pasted."""
    monkeypatch.chdir(workdir)
    for command in PLAIN:
        line = command.split("#")[0].split("|")[0].split(">")[0].strip()
        args = shlex.split(line.replace("NO_COLOR=1 ", ""))[1:]
        args = [str(ROOT / a) if a.startswith(("examples/", "validation/")) else a for a in args]
        if "--install-completion" in args:
            continue  # would edit the shell's rc file
        r = run(*args)
        assert r.code in ((0, 1) if args[0] == "check" else (0,)), f"{command}\n{r.stderr}"


def test_documents_have_commands():
    assert len(GENERATED) + len(PLAIN) > 90


def test_every_command_has_an_example():
    """Each top-level command of the app appears in a documented example."""
    from roofline.cli.app import COMMANDS

    text = "\n".join(GENERATED + PLAIN)
    missing = [name for name in COMMANDS if f"roofline {name} " not in text]
    assert not missing, missing


def test_readme_python_blocks_run():
    """The README's Python API example runs as pasted (a renamed argument breaks it here)."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "the README shows the Python API"
    for code in blocks:
        scope: dict = {}
        exec(compile(code, "README.md", "exec"), scope)  # our own document
        if "r" in scope:  # the request example: one TPOT per batch size, slower at larger batch
            tpot = scope["r"].ideal.tpot_s
            assert tpot.shape == (3,) and tpot[0] <= tpot[1] <= tpot[2]
