"""plda's caches, and the one registry that :func:`plda.clear_caches` empties.

Three kinds: :func:`cached` (an ``functools.lru_cache``, process-wide), :class:`ByteBoundedCache`
(least-recently-used, bounded by bytes, for discretizations) and :func:`remembered` (a value kept
on the frozen object it belongs to, living and dying with it). Each process-wide cache is
thread-safe (its own lock, or lru_cache's) and registers a function that clears it here. Results
never depend on the caches: clearing them only costs time.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache
from typing import Any

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


def remembered(owner: Any, key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()``, remembered in ``owner``'s ``_memo`` dict under ``key``.

    For frozen dataclasses whose derived values (a mechanism's laws, a law's tail points) are
    asked for again and again: the memo lives and dies with its owner, is not part of its
    value (dataclass equality and hashing read the fields only), and a race between threads
    only computes the same value twice (it is stored whole, never half-built)."""
    memo = owner.__dict__.get("_memo")
    if memo is None:
        memo = {}
        object.__setattr__(owner, "_memo", memo)
    found = memo.get(key)
    if found is None:
        found = memo[key] = compute()
    return found


class ByteBoundedCache:
    """Least-recently-used cache of ``(upper, lower)`` discretizations bounded by total size.

    A history whose noise changes at every step keeps hundreds of laws in use, so a bound on
    the number of entries either thrashes (every query rediscretizes everything) or, for large
    grids, holds gigabytes; the bound is on bytes instead.

    ``function(law, step, lower, *tails)`` returns ``(upper, lower version or None)``. A caller that
    needs only the upper version asks with ``lower=False`` (an upper-bound query of a long
    noise schedule never needs the optimistic versions of its laws: computing and keeping
    them would cost a third of the time and half of the memory); asked for the lower version
    later, the cache computes it and keeps the upper version it already holds, so that a
    composer recognising factors by identity still sees the same object."""

    def __init__(self, function, max_bytes: int):
        self.function, self.max_bytes = function, max_bytes
        self.entries: OrderedDict = OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()  # filters may run accountants from several threads
        functools.update_wrapper(self, function)

    def __call__(self, law, step, lower: bool = True, *tails: float):
        # (a law kept to tails of its own, for tilted queries, is a separate entry)
        key = (law, step, *tails)
        with self.lock:
            hit = self.entries.get(key)
            if hit is not None:
                self.entries.move_to_end(key)
                if hit[0][1] is not None or not lower:
                    return hit[0]
        value = self.function(law, step, lower, *tails)  # outside the lock: two may compute
        with self.lock:
            held = self.entries.get(key)
            if held is not None:
                old = held[0]
                if old[1] is not None or not lower:
                    return old
                self.bytes -= held[1]
                value = (old[0], value[1])  # keep the upper object already handed out
            size = sum(v.probs.nbytes for v in value if v is not None) + 1024
            self.entries[key] = (value, size)
            self.entries.move_to_end(key)
            self.bytes += size
            while self.bytes > self.max_bytes and len(self.entries) > 1:
                _, (_, old_size) = self.entries.popitem(last=False)
                self.bytes -= old_size
            return value

    def cache_clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.bytes = 0
