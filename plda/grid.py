"""The discrete privacy-loss distribution on a grid, its composition and its privacy profile.

The code lives in :mod:`plda.engine` (:mod:`~plda.engine.discrete`, :mod:`~plda.engine.epsilon`,
:mod:`~plda.engine.moments`, :mod:`~plda.engine.composer`, :mod:`~plda.engine.tilt`); this
module keeps the public names importable from ``plda.grid``.
"""

from __future__ import annotations

from plda.engine.composer import Composer, compose, from_spectrum
from plda.engine.discrete import DiscreteLoss
from plda.engine.moments import ladder_chernoff, power_support, window_losses
from plda.engine.tilt import compose_tilted

__all__ = [
    "Composer",
    "DiscreteLoss",
    "compose",
    "compose_tilted",
    "from_spectrum",
    "ladder_chernoff",
    "power_support",
    "window_losses",
]
