"""Deprecated (removed in plda 0.2.0): the Rényi-DP and zCDP queries are methods of the
composition (``pld.renyi(order)``, ``pld.renyi_bounds(order)``, ``pld.renyi_epsilon(delta)``,
``pld.renyi_delta(epsilon)``, ``pld.zcdp()``, ``pld.zcdp_bounds()``); the conversion of any Rényi
curve to ``(epsilon, delta)`` lives in :mod:`plda.conversions.renyi`. Each name read here warns
and names its new home."""

from __future__ import annotations

from plda._internal.deprecation import composition_door, moved_names
from plda.conversions import renyi as renyi_conversion

__all__: list[str] = []  # nothing here is public any more

__getattr__, __dir__ = moved_names(
    __name__,
    {
        "renyi": ("pld.renyi(order)", lambda: composition_door("renyi")),
        "renyi_bounds": ("pld.renyi_bounds(order)", lambda: composition_door("renyi_bounds")),
        "renyi_epsilon": ("pld.renyi_epsilon(delta)", lambda: composition_door("renyi_epsilon")),
        "renyi_delta": ("pld.renyi_delta(epsilon)", lambda: composition_door("renyi_delta")),
        "zcdp": ("pld.zcdp()", lambda: composition_door("zcdp")),
        "zcdp_bounds": ("pld.zcdp_bounds()", lambda: composition_door("zcdp_bounds")),
        "DEFAULT_ORDERS": (
            "plda.conversions.renyi.DEFAULT_ORDERS",
            lambda: renyi_conversion.DEFAULT_ORDERS,
        ),
        "epsilon_from_renyi": (
            "plda.conversions.renyi.epsilon_from_renyi",
            lambda: renyi_conversion.epsilon_from_renyi,
        ),
        "delta_from_renyi": (
            "plda.conversions.renyi.delta_from_renyi",
            lambda: renyi_conversion.delta_from_renyi,
        ),
    },
)
