"""Random allocation with ``num_selected = k > 1``: the laws of :class:`~plda.RandomAllocation`.

The upper law composes ``k`` one-step allocations of ``floor(t/k)`` and ``ceil(t/k)`` steps
(Feldman & Shenfeld 2025); the lower one is, per direction, the best of a few post-processings
of the epoch with exact laws. Proofs: ``docs/howto/random-allocation.md`` ("Several steps per
record").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from plda._internal.caches import cached
from plda.discretization.discretize import discretize
from plda.engine.composer import compose
from plda.epochs.cells import cell_sum_laws
from plda.epochs.max_shift import LaplaceMaxShiftManyLaw, MaxShiftManyLaw
from plda.mechanisms.base import Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.laplace import Laplace
from plda.mechanisms.law import AtomLaw
from plda.mechanisms.subsampled import PoissonSampled

#: loss-grid step of the composed upper law; the engine discretizes it again on its own grid,
#: so this adds at most about ``k`` steps of loss per epoch, far below the engine's accuracy
INNER_STEP = 2e-5
#: composed mass allowed outside the composition's window (sent to ``+inf`` on the upper side)
INNER_TAIL = 1e-20


def decomposition(num_steps: int, num_selected: int) -> tuple[tuple[int, int], ...]:
    """The one-step allocations whose composition dominates a ``k``-out-of-``t`` epoch.

    With ``t = k m + r``, ``0 <= r < k``: ``k - r`` epochs of 1 out of ``m`` steps and ``r`` of 1
    out of ``m + 1`` (Feldman & Shenfeld 2025, arXiv 2502.08202; the split as in arXiv
    2602.17284).

    Parameters
    ----------
    num_steps : int
        Steps per epoch ``t``.
    num_selected : int
        Steps each record takes part in ``k``.

    Returns
    -------
    tuple of (int, int)
        ``((m, k - r), (m + 1, r))`` as (steps per epoch, number of epochs); entries with no
        epochs are left out.
    """
    m, r = divmod(num_steps, num_selected)
    return tuple((size, n) for size, n in ((m, num_selected - r), (m + 1, r)) if n > 0)


def composed_upper(block_laws) -> AtomLaw:
    """A dominating atom law of the composition of ``block_laws`` (one direction).

    Each law is discretized pessimistically on the grid of step :data:`INNER_STEP` and the
    powers are multiplied by one FFT (:func:`plda.engine.composer.compose`). Read back as
    atoms, each mass is raised by the composition's certified ``entry_error`` and each loss by
    its ``loss_error``: more ``P``-mass at a loss, or a larger loss, only increases ``delta`` of
    this law and of any composition with it, so the atoms dominate.

    Parameters
    ----------
    block_laws : iterable of (PrivacyLossLaw, int)
        ``[(law, count), ...]``: the laws composed and how many times each.

    Returns
    -------
    AtomLaw
        A law whose ``delta`` is at least the composition's at every ``epsilon``.
    """
    factors = [(discretize(law, INNER_STEP, lower=False)[0], count) for law, count in block_laws]
    grid = compose(factors, tail=INNER_TAIL)
    losses = grid.losses + grid.loss_error
    probs = grid.probs + grid.entry_error
    return AtomLaw(atom_losses=np.asarray(losses, dtype=float),
                   atom_probs=np.asarray(probs, dtype=float),
                   infinity_mass=float(grid.infinity_mass))


def _laws_of(candidate, direction: str):
    if isinstance(candidate, (MaxShiftManyLaw, LaplaceMaxShiftManyLaw)):
        return candidate if direction == "remove" else candidate.reversed()
    return candidate.privacy_loss(direction)


@cached(maxsize=16)
def lower_laws(kind: str, parameter: float, num_steps: int, num_selected: int):
    """Laws of post-processed pairs: the certified lower side of a ``k``-out-of-``t`` epoch.

    The candidates are the cell sum (:func:`~plda.epochs.cells.cell_sum_laws`), the largest
    coordinate (:class:`~plda.epochs.max_shift.MaxShiftManyLaw` or its Laplace analogue), for
    a Gaussian the sum of the coordinates (a Gaussian of ``mu_eff = k mu / sqrt(t)``) and one
    coordinate (a Poisson-sampled step at rate ``k / t``). Each direction takes the candidate
    with the largest total variation ``delta(0)``: any choice is certified, this one is a
    heuristic for the tightest (in practice the cell sum).

    Parameters
    ----------
    kind : str
        ``"gaussian"`` or ``"laplace"``: the base mechanism.
    parameter : float
        ``mu = sensitivity / sigma`` of a Gaussian, or ``epsilon0`` of a Laplace base.
    num_steps : int
        Steps per epoch ``t``.
    num_selected : int
        Steps each record takes part in ``k``.

    Returns
    -------
    tuple of PrivacyLossLaw
        ``(remove, add)``: laws dominated by the epoch's in each direction.
    """
    t, k = num_steps, num_selected
    candidates = [cell_sum_laws(kind, parameter, t, k)]
    if kind == "laplace":
        singles = [LaplaceMaxShiftManyLaw(m=parameter, num_steps=t, num_selected=k),
                   PoissonSampled(Laplace(1.0 / parameter), k / t)]
    else:
        mu = parameter
        singles = [MaxShiftManyLaw(mu=mu, num_steps=t, num_selected=k),
                   Gaussian(sigma=math.sqrt(t) / (k * mu)),
                   PoissonSampled(Gaussian(sigma=1.0 / mu), k / t)]
    candidates += [(_laws_of(c, "remove"), _laws_of(c, "add")) for c in singles]
    return tuple(max((c[i] for c in candidates), key=lambda law: float(law.delta(0.0)))
                 for i in (0, 1))

@dataclass(frozen=True)
class AllocationLowerBound(Mechanism):
    """The post-processed pair of a ``k``-out-of-``t`` random allocation epoch, ``k > 1``.

    Its laws are those of :func:`lower_laws`, dominated by the epoch's pair in both directions,
    so the lower bound of its PLD is certified for the epoch
    (:meth:`plda.RandomAllocation.lower_bound_mechanism` returns it).

    Attributes
    ----------
    mechanism : Mechanism
        The Gaussian or Laplace base of the epoch.
    num_steps : int
        Steps per epoch ``t``.
    num_selected : int
        Steps each record takes part in ``k``.
    """

    mechanism: Mechanism
    num_steps: int
    num_selected: int

    symmetric = False

    def _laws(self):
        base = self.mechanism
        if type(base) is Laplace:
            return lower_laws("laplace", base.epsilon, self.num_steps, self.num_selected)
        return lower_laws("gaussian", base.mu, self.num_steps, self.num_selected)

    def _remove_law(self):
        return self._laws()[0]

    def _add_law(self):
        return self._laws()[1]
