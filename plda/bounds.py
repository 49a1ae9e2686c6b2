"""The shared vocabulary of certified answers: the pair every answer comes as (a lower and an
upper bound), and the names of the neighbouring relations they are certified under."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Bounds:
    """Certified ``(lower, upper)`` pair; unpacks like a tuple.

    The true value lies in ``[lower, upper]`` (elementwise for arrays).

    Attributes
    ----------
    lower : float or numpy.ndarray
        Certified lower bound (a float for a scalar query, an array for an array query).
    upper : float or numpy.ndarray
        Certified upper bound, of the same shape.

    Examples
    --------
    >>> from plda.bounds import Bounds
    >>> lower, upper = Bounds(lower=1.0, upper=1.5)
    >>> upper - lower
    0.5
    """

    lower: float | np.ndarray
    upper: float | np.ndarray

    def __iter__(self):
        return iter((self.lower, self.upper))

    def __getitem__(self, i):
        return (self.lower, self.upper)[i]

    def __len__(self):
        return 2


#: the neighbouring relations plda accounts under: add or remove one record (``"add_remove"``,
#: both directions, the worse reported), or replace one record by another (``"replace_one"``)
RELATIONS = ("add_remove", "replace_one")


def check_relation(relation: str, name: str = "relation") -> str:
    """``relation`` when it is one of :data:`RELATIONS`.

    Parameters
    ----------
    relation
        The relation name to check.
    name
        What the message calls it (``"relation"``, ``"state relation"``, ...).

    Returns
    -------
    str
        ``relation``, unchanged.

    Raises
    ------
    ValueError
        ``relation`` is not one of :data:`RELATIONS` (the message names ``name``).
    """
    if not isinstance(relation, str) or relation not in RELATIONS:
        raise ValueError(f"{name} must be one of {RELATIONS}, got {relation!r}")
    return relation
