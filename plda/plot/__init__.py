"""Plots of privacy guarantees (matplotlib is an optional extra: ``pip install plda[plot]``).

Importing :mod:`plda` or this package never imports matplotlib; each function imports it when
called, takes an optional ``ax`` and returns the Axes it drew on. The functions that plot a
composition accept a :class:`~plda.pld.PrivacyLossDistribution`, a
:class:`~plda.PLDAccountant` or an adapter holding one (Opacus's
``PLDOpacusAccountant``, dp_accounting's ``PLDPrivacyAccountant``). Every function takes
``color``, ``linestyle`` and ``label`` and draws a compact legend, so that several calls
overlay on one axes (a paper figure); ``dir(plda.plot)`` lists them.

What is drawn as data is certified: the band between the bounds has both edges drawn and the
legend entry "certified bounds [lower, upper]" (with its width where it is thinner than the
line); on log axes, stretches the bounds do not resolve are marked as numerical floors instead
of being drawn as curves (see :mod:`plda.plot.common`).
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
