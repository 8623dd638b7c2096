"""Every `roofline …` command in README code blocks runs and exits 0 (or 1 for a failing
`check`), so the README's examples work when pasted."""

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```sh\n(.*?)```", README, flags=re.S)
COMMANDS = [
    line.split("#")[0].split("|")[0].split(">")[0].strip()
    for block in BLOCKS
    for line in block.splitlines()
    if re.match(r"^(NO_COLOR=1 )?roofline ", line.strip())
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory):
    """One directory for the README's commands, run in order: a file one writes (a catalog
    entry from `models import -o`) is there for the next, as in a user's shell."""
    return tmp_path_factory.mktemp("readme")


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(run, command, workdir, monkeypatch):
    monkeypatch.chdir(workdir)
    args = shlex.split(command.replace("NO_COLOR=1 ", ""))[1:]
    args = [str(ROOT / a) if a.startswith(("examples/", "validation/")) else a for a in args]
    if "--install-completion" in args:
        pytest.skip("would edit the shell's rc file")
    r = run(*args)
    allowed = (0, 1) if args[0] == "check" else (0,)
    assert r.code in allowed, f"{command}\n{r.stderr}"


def test_readme_has_commands():
    assert len(COMMANDS) > 40
