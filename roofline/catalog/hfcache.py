"""Find a model's config.json in the local Hugging Face hub cache, by repo id (no network).

The cache directory is the one huggingface_hub uses (huggingface_hub.constants): HF_HUB_CACHE,
else the legacy HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub. A repo
`org/name` lives in `models--org--name/`: `refs/main` holds the commit of the main branch and
`snapshots/<commit>/config.json` the file (a symlink into `blobs/`). Without refs/main (a cache
filled by revision), the most recently written snapshot that holds a config.json is used.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from roofline.domain.errors import InputError

# org/name as the Hub allows them: letters, digits, '-', '_', '.'; no '..' and no leading '.'
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")


def is_repo_id(name: str) -> bool:
    """True for `org/name` that is not an existing path and not a .json/.yaml file name."""
    if not _REPO_ID.match(name) or ".." in name or name.lower().endswith((".json", ".yaml")):
        return False
    return not Path(name).exists()


def hub_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The Hugging Face hub cache directory, resolved the way huggingface_hub resolves it."""
    env = os.environ if env is None else env
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(key):
            return Path(env[key]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def cached_config(repo_id: str, env: Mapping[str, str] | None = None) -> Path:
    """The cached config.json of `org/name` (refs/main's snapshot, else the newest one)."""
    repo_dir = hub_cache_dir(env) / ("models--" + repo_id.replace("/", "--"))
    snapshots = repo_dir / "snapshots"
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        candidate = snapshots / ref.read_text(encoding="utf-8").strip() / "config.json"
        if candidate.is_file():
            return candidate
    found = (
        [p for p in snapshots.glob("*/config.json") if p.is_file()] if snapshots.is_dir() else []
    )
    if found:
        return max(found, key=lambda p: (p.parent.stat().st_mtime, p.parent.name))
    raise InputError(
        f"{repo_id}: config.json is not in the local Hugging Face cache (looked in {repo_dir})",
        hint=f"fetch it with `huggingface-cli download {repo_id} config.json` or pass a "
        "config.json path; roofline never uses the network",
    )
