"""Values remembered on the frozen object they belong to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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
