r"""Random allocation with ``num_selected = k > 1``: a certified upper law by decomposition and a
certified lower law by post-processing (used by :class:`~plda.RandomAllocation`).

**Upper bound: decomposition into ``k`` one-step allocations.** Write ``t = k m + r`` with
``0 <= r < k``. The ``k``-out-of-``t`` epoch is at least as private as the composition of
``k - r`` epochs allocating 1 of ``m`` steps and ``r`` epochs allocating 1 of ``m + 1`` steps
(Feldman & Shenfeld, "Privacy amplification by random allocation", 2025, arXiv 2502.08202,
reduction of ``k``-out-of-``t`` to ``k = 1``; the floor/ceil split for ``k`` not dividing ``t``
is the one of their ICML 2026 paper, arXiv 2602.17284, and of their ``PLD_accounting``
package). For the pair plda analyses the proof is short. Draw a uniformly random permutation
of the steps, cut it into ``k`` blocks of sizes ``m`` or ``m + 1`` and pick one step uniformly
in each block: the law of the chosen set is invariant under every permutation of the steps, so
it is the uniform law on ``k``-subsets. Hence the remove pair is a mixture over the partition
``pi``, ``P = E_pi P_pi`` against the same ``Q``, where given ``pi`` the output is a product over
blocks of one-step allocation pairs. The hockey-stick divergence is jointly convex (an
``f``-divergence), so ``H(P || Q) <= E_pi H(P_pi || Q)``, and ``H(Q || P) <= E_pi H(Q || P_pi)``
for the add direction; each term is the composition above, whatever ``pi``.

plda composes the block laws (each a certified dominating law of
:mod:`plda.epochs.allocation`) on a fine loss grid with the FFT engine
(:func:`plda.engine.composer.compose`) and reads the pessimistic grid law back as atoms, every
entry raised by the composition's certified entry error and every loss by its certified loss
error: a dominating law of the epoch in both directions.

**Lower bound: a post-processing of the epoch.** Any function of the epoch's output gives a pair
whose hockey-stick divergence is at most the epoch's, in both directions (data processing), and
post-processings of independent epochs compose. The main one is the sum of the cell indices of
the per-step likelihood ratios, whose laws are exact convolutions of cell masses
(:mod:`plda.epochs.cells`): nearly sufficient, it brackets ten epochs at
``sigma = 1`` to 0.15-0.3% of epsilon for ``t = 1000`` and 1-4% for ``t = 100`` (``k = 2, 4``),
the decomposition's own slack included. Per direction, plda keeps the candidate of largest
total variation among it and three one-dimensional statistics with closed-form laws:

- the maximum coordinate, ``P(Y <= y) = Phi(y-mu)^k Phi(y)^(t-k)`` against ``Phi(y)^t``
  (:class:`~plda.epochs.max_shift.MaxShiftManyLaw`);
- the sum of the coordinates, ``N(k mu, t)`` against ``N(0, t)``: a Gaussian with
  ``mu_eff = k mu / sqrt(t)``; exact for ``k = t``;
- one coordinate, ``(1 - k/t) N(0, 1) + (k/t) N(mu, 1)`` against ``N(0, 1)``: one
  Poisson-sampled step at rate ``k/t``.

For a Laplace base (``epsilon0 = C / b``) the candidates are the cell sum, the largest
coordinate (:class:`~plda.epochs.max_shift.LaplaceMaxShiftManyLaw`) and one
coordinate. The gap that remains is mostly the decomposition's: it is exact for ``k = t`` and
loosest for small ``t / k``.
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
    """``((m, k - r), (m + 1, r))`` with ``t = k m + r``: the one-step allocations (steps per
    epoch, number of epochs) whose composition dominates a ``k``-out-of-``t`` epoch; entries
    with no epochs are left out."""
    m, r = divmod(num_steps, num_selected)
    return tuple((size, n) for size, n in ((m, num_selected - r), (m + 1, r)) if n > 0)


def composed_upper(block_laws) -> AtomLaw:
    """A dominating atom law of the composition ``[(law, count), ...]`` (one direction).

    Each law is discretized pessimistically on the grid of step :data:`INNER_STEP` and the
    powers are multiplied by one FFT (:func:`plda.engine.composer.compose`). The composed
    pessimistic grid law bounds every ``delta`` from above up to its certified floating-point
    errors; reading it back as atoms, each mass is raised by ``entry_error`` (a bound on every
    entry's error, the wrapped tail mass kept) and each loss by ``loss_error``. More ``P``-mass
    at a loss, or a larger loss, only increases ``delta`` of this law and of any composition
    with it (the composed ``delta`` is linear in the masses with non-negative, non-decreasing
    integrands), so the atoms are a dominating law.
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
    """``(remove, add)`` laws of post-processed pairs used as the certified lower side of a
    ``k``-out-of-``t`` epoch (see the module docstring); ``parameter`` is ``mu`` of a Gaussian
    or ``epsilon0`` of a Laplace base. Each direction is a separate hockey-stick curve, so each
    takes its own candidate: the one with the largest total variation (``delta(0)``). Any
    choice is certified; this one is a heuristic for the tightest (in practice the cell sum)."""
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
    """The post-processed pair of a ``k``-out-of-``t`` random allocation epoch (``k > 1``) of a
    Gaussian or Laplace base (:func:`lower_laws`): dominated by the epoch's pair in both
    directions, so the lower bound of its PLD is certified for the epoch
    (:meth:`plda.RandomAllocation.lower_bound_mechanism`)."""

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
