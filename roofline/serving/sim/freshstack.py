"""The simulator's event loop on a fresh frame stack (a thread of its own): its cost does not
depend on how deep the caller's stack is.

CPython 3.11 keeps the interpreter's frames in 16 KiB chunks that it maps and unmaps one at a
time (Python/pystate.c: push_chunk allocates a chunk with _PyObject_VirtualAlloc, an mmap, when
a call's frame does not fit in the current one; _PyThreadState_PopFrame unmaps it as soon as the
first frame in it returns). A loop whose frame lies near a chunk's end maps and unmaps a chunk on
every call it makes: about 3 µs of system time per call. Called 100 frames deep (a test runner, a
notebook kernel, a web server), the replay of the 8,819-request Azure code trace spent as much
time in the kernel as in Python (18 s system beside 19 s user, measured under pytest-xdist; 0.2 s
from the shell). A new thread starts with an empty chunk, and the loop with its callees fits in
it. Under a profiler or a tracer (cProfile, pdb, coverage: per thread) the loop runs where it was
called, so they see it as before.
"""

from __future__ import annotations

import contextvars
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def on_fresh_stack(fn: Callable[[], T]) -> T:
    """fn() in a new thread (its context variables copied: numpy's errstate), its result or its
    exception handed back; inline under a profiler or a tracer."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return fn()
    context = contextvars.copy_context()
    box: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            box.append(context.run(fn))
        except BaseException as e:  # re-raised in the caller, with the thread's traceback
            error.append(e)

    thread = threading.Thread(target=target, name="roofline-sim", daemon=True)
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return box[0]
