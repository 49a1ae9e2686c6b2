"""Plots of privacy guarantees (matplotlib is an optional extra: ``pip install plda[plot]``).

Each function imports matplotlib when called, takes an optional ``ax`` and returns the Axes it
drew on; those that plot a composition accept a :class:`~plda.pld.PrivacyLossDistribution`, a
:class:`~plda.PLDAccountant` or an adapter holding one. Every function takes ``color``,
``linestyle`` and ``label`` and draws a compact legend, so that several calls overlay on one
axes (a paper figure); ``dir(plda.plot)`` lists them. What is drawn as data is certified: the
rules are in ``docs/tradeoff.md`` ("Plots").
"""

from importlib import import_module as _import_module

_FUNCTIONS = {
    "composition_comparison": "plda.plot.composition",
    "filter_comparison": "plda.plot.filters",
    "tradeoff": "plda.plot.profiles",
    "privacy_profile": "plda.plot.profiles",
    "epsilon_vs_steps": "plda.plot.steps",
    "accounting_comparison": "plda.plot.steps",
}

__all__ = sorted(_FUNCTIONS)


def __getattr__(name: str):
    module = _FUNCTIONS.get(name)
    if module is None:
        raise AttributeError(f"module 'plda.plot' has no attribute {name!r}")
    return getattr(_import_module(module), name)


def __dir__() -> list[str]:
    # the plot functions load on first use; dir() and tab completion list them all the same
    return sorted(set(globals()) | set(__all__))
