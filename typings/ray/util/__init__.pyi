# ray.util.ActorPool as Ray 2.60's ray/util/actor_pool.py declares it (typings/ray/__init__.pyi).
from collections.abc import Callable
from typing import Any

class ActorPool:
    def __init__(self, actors: list[Any]) -> None: ...
    def map(self, fn: Callable[[Any, Any], Any], values: list[Any]) -> Any: ...
