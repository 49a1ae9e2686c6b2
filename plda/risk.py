"""Deprecated (removed in plda 0.2.0): the membership-inference risk of a composition is asked
of the composition, ``pld.true_positive_rate_bounds(false_positive_rate)`` and
``pld.advantage_bounds()`` (and of a :class:`~plda.PLDAccountant` under the same names). Each
name read here warns and names its new home."""

from __future__ import annotations

from plda._internal.deprecation import composition_door, moved_names

__all__: list[str] = []  # nothing here is public any more

__getattr__, __dir__ = moved_names(
    __name__,
    {
        "true_positive_rate_bounds": (
            "pld.true_positive_rate_bounds(false_positive_rate)",
            lambda: composition_door("true_positive_rate_bounds"),
        ),
        "advantage_bounds": (
            "pld.advantage_bounds()",
            lambda: composition_door("advantage_bounds"),
        ),
    },
)
