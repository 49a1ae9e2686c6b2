"""Names kept for one release after they moved: each use warns with a ``DeprecationWarning``
that names the new home and the version that removes the old name (:data:`REMOVAL`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import MappingProxyType

#: the release that removes every deprecated name
REMOVAL = "0.2.0"

#: the functions of :func:`composition_door`, one per method name (so that the same old name
#: reached through two modules is the same object)
_DOORS: dict[tuple, Callable] = {}


def warn_moved(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` and goes in :data:`REMOVAL`.

    Parameters
    ----------
    old
        The deprecated spelling, e.g. ``"plda.tradeoff.gdp_mu(pld)"``.
    new
        Its replacement, e.g. ``"pld.gdp_mu()"``.
    stacklevel
        As for :func:`warnings.warn`; the default points at the caller of the function that
        calls this one (the user's line).
    """
    warnings.warn(
        f"{old} is deprecated and will be removed in plda {REMOVAL}; use {new} instead",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def composition_door(method: str, *, transform: Callable | None = None) -> Callable:
    """The function ``f(pld, *args, **kwargs) = pld.<method>(*args, **kwargs)`` that a
    deprecated module function taking a composition first becomes.

    Parameters
    ----------
    method
        The name of the method of :class:`~plda.PrivacyLossDistribution` that answers.
    transform
        Applied to the method's answer (e.g. to take ``.upper`` of a bracket).

    Returns
    -------
    Callable
        One object per ``(method, transform)``; it raises ``TypeError`` when its first
        argument has no such method.
    """
    key = (method, transform)
    if key not in _DOORS:

        def door(pld, *args, **kwargs):
            answer = getattr(pld, method, None)
            if not callable(answer):
                raise TypeError(
                    f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}"
                )
            value = answer(*args, **kwargs)
            return value if transform is None else transform(value)

        door.__name__ = door.__qualname__ = method
        door.__doc__ = f"Deprecated: ``pld.{method}(...)``."
        _DOORS[key] = door
    return _DOORS[key]


def moved_names(module: str, names: dict[str, tuple[str, Callable[[], object]]]):
    """``(__getattr__, __dir__)`` for a module whose names moved: reading ``module.<name>``
    warns (:func:`warn_moved`) and returns what ``names[name][1]()`` returns.

    Parameters
    ----------
    module
        The deprecated module's dotted name (for the messages).
    names
        ``{old name: (its replacement as the message names it, a function returning the
        object to hand out)}``.

    Returns
    -------
    tuple
        The module-level ``__getattr__`` and ``__dir__`` to assign in the deprecated module.
    """
    table = MappingProxyType(dict(names))

    def __getattr__(name: str):
        if name not in table:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new, load = table[name]
        warn_moved(f"{module}.{name}", new)
        return load()

    def __dir__() -> list[str]:
        return sorted(table)

    return __getattr__, __dir__


def upper(bounds):
    """``bounds.upper``: the transform of an old spelling that returned the certified side."""
    return bounds.upper
