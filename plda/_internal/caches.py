"""One registry of plda's process-wide caches, so :func:`plda.clear_caches` forgets all of them.

Every cache in plda is either an ``functools.lru_cache`` (its bookkeeping is thread-safe and the
values it holds are never mutated) or a structure with its own lock or per-thread storage; each
registers a function that clears it here. Results never depend on the caches: clearing them only
costs time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import lru_cache

_LOCK = threading.Lock()
_CLEARERS: list[tuple[str, Callable[[], None]]] = []


def register(name: str, clear: Callable[[], None]) -> None:
    """Register ``clear`` (a function emptying one cache) under a descriptive ``name``."""
    with _LOCK:
        _CLEARERS.append((name, clear))


def cached(maxsize: int):
    """``functools.lru_cache(maxsize)`` registered for :func:`clear_all`."""

    def decorate(function):
        wrapped = lru_cache(maxsize=maxsize)(function)
        register(f"{function.__module__}.{function.__qualname__}", wrapped.cache_clear)
        return wrapped

    return decorate


def registered() -> tuple[str, ...]:
    """Names of the registered caches (of the modules imported so far)."""
    with _LOCK:
        return tuple(name for name, _ in _CLEARERS)


def clear_all() -> None:
    """Clear every registered cache."""
    with _LOCK:
        clearers = [clear for _, clear in _CLEARERS]
    for clear in clearers:
        clear()
