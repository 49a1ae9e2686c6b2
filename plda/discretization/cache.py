"""A least-recently-used cache bounded by bytes, for discretizations."""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict


def _nbytes(pair) -> int:
    return sum(version.probs.nbytes for version in pair if version is not None) + 1024


class ByteBoundedCache:
    """Least-recently-used cache of ``(upper, lower)`` discretizations bounded by total size.

    A history whose noise changes at every step keeps hundreds of laws in use, so a bound on
    the number of entries either thrashes (every query rediscretizes everything) or, for large
    grids, holds gigabytes; the bound is on bytes instead.

    ``function(law, step, lower)`` returns ``(upper, lower version or None)``. A caller that
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

    def __call__(self, law, step, lower: bool = True):
        key = (law, step)
        with self.lock:
            hit = self.entries.get(key)
            if hit is not None:
                self.entries.move_to_end(key)
                if hit[0][1] is not None or not lower:
                    return hit[0]
        value = self.function(law, step, lower)  # outside the lock: two threads may both compute
        with self.lock:
            held = self.entries.get(key)
            if held is not None:
                old = held[0]
                if old[1] is not None or not lower:
                    return old
                self.bytes -= held[1]
                value = (old[0], value[1])  # keep the upper object already handed out
            size = _nbytes(value)
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
