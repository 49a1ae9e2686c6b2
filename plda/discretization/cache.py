"""A least-recently-used cache bounded by bytes, for discretizations."""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict


class ByteBoundedCache:
    """Least-recently-used cache of discretizations bounded by their total size.

    A history whose noise changes at every step keeps hundreds of laws in use, so a bound on
    the number of entries either thrashes (every query rediscretizes everything) or, for large
    grids, holds gigabytes; the bound is on bytes instead."""

    def __init__(self, function, max_bytes: int):
        self.function, self.max_bytes = function, max_bytes
        self.entries: OrderedDict = OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()  # filters may run accountants from several threads
        functools.update_wrapper(self, function)

    def __call__(self, law, step):
        key = (law, step)
        with self.lock:
            hit = self.entries.get(key)
            if hit is not None:
                self.entries.move_to_end(key)
                return hit[0]
        value = self.function(law, step)  # outside the lock: two threads may both compute
        size = sum(v.probs.nbytes for v in value) + 1024
        with self.lock:
            if key not in self.entries:
                self.entries[key] = (value, size)
                self.bytes += size
            while self.bytes > self.max_bytes and len(self.entries) > 1:
                _, (_, old) = self.entries.popitem(last=False)
                self.bytes -= old
            return self.entries[key][0] if key in self.entries else value

    def cache_clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.bytes = 0
