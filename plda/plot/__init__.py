"""Plots of privacy guarantees (matplotlib is an optional extra: ``pip install plda[plot]``).

Importing :mod:`plda` or this package never imports matplotlib; each function imports it when
called, takes an optional ``ax`` and returns the Axes it drew on.
"""

from __future__ import annotations

from importlib import import_module

_FUNCTIONS = {
    "composition_comparison": "plda.plot.composition",
    "filter_comparison": "plda.plot.filters",
    "tradeoff": "plda.plot.profiles",
    "privacy_profile": "plda.plot.profiles",
    "epsilon_vs_steps": "plda.plot.profiles",
    "accounting_comparison": "plda.plot.profiles",
}

__all__ = sorted(_FUNCTIONS)


def __getattr__(name: str):
    module = _FUNCTIONS.get(name)
    if module is None:
        raise AttributeError(f"module 'plda.plot' has no attribute {name!r}")
    return getattr(import_module(module), name)
