# The part of Ray's API that roofline calls (roofline/fleet/runners.py), its signatures copied from
# Ray 2.60's ray/_private/worker.py (init, is_initialized, put, remote, shutdown). mypy reads this
# stub instead of Ray's 818 modules (3.5 of its 12.5 CPU-s from a fresh clone): the calls are still
# checked against these signatures (pyproject.toml: mypy_path).
from typing import Any, TypeVar

_T = TypeVar("_T")

def init(
    address: str | None = None,
    *,
    num_cpus: int | None = None,
    num_gpus: int | None = None,
    include_dashboard: bool | None = None,
    logging_level: int = ...,
    log_to_driver: bool | None = None,
    **kwargs: Any,
) -> Any: ...
def is_initialized() -> bool: ...
def put(value: Any, *, _owner: Any = None, _tensor_transport: str | None = None) -> Any: ...
def remote(*args: Any, **kwargs: Any) -> Any: ...  # (its typed overloads left out)
def shutdown(*, wait_for_processes: bool = False, _exiting_interpreter: bool = False) -> None: ...
