"""Random allocation (balls-in-bins): each record takes part in ``num_selected`` steps of an epoch.

:class:`RandomAllocation` is one epoch; its laws come from the lattice laws of
:mod:`plda.epochs.sums` (``num_selected = 1``) or the decomposition of :mod:`plda.epochs.many`.
How the bounds are certified: ``docs/howto/random-allocation.md``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from plda._internal.caches import cached
from plda._internal.errors import UncoveredParametersError
from plda.epochs.many import AllocationLowerBound, composed_upper, decomposition
from plda.epochs.sums import laplace_cells, lognormal_cells, sum_cells
from plda.mechanisms.base import BracketedMechanism, Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.laplace import Laplace
from plda.mechanisms.law import AtomLaw, PrivacyLossLaw

#: largest supported number of steps per epoch
MAX_STEPS = 10**5
#: largest lattice of the sum ``S`` (points); sets the smallest supported ``sigma`` for a given
#: ``num_steps`` (the lognormal tail of ``W`` must fit below the cap)
MAX_POINTS = 1 << 22
#: mean of ``W`` above the cap ``B``, charged to loss ``+inf``: ``E[(W - B)_+] <= TAIL``
#: (P-mass ``TAIL / t`` at loss ``+inf`` per epoch, below the cells' rounding charges)
TAIL = 1e-10
_Z_TAIL = 6.362  # Phi(-6.362) ~ 1e-10
#: finest lattice step of ``W`` where its spread ``~ mu`` is wide (``mu >= 1``: the engine's own
#: error then dominates); below, the step follows the spread, ``mu / 64`` (the lower bounds move
#: conditional means by a shared offset up to a step: at ``mu = 0.02``, ``t = 20``, a step of
#: 0.02 left the certified lower bound of 100 epochs at 0 under an upper one of 0.154), within
#: :data:`FINE_POINTS` points
MIN_STEP = 0.02
#: most lattice points spent on a step finer than :data:`MIN_STEP` (a fraction of a second)
FINE_POINTS = 1 << 18
#: coarsest lattice step of ``W`` allowed (with ``MAX_POINTS``, caps ``num_steps`` at large
#: ``mu``)
MAX_STEP = 0.05
#: largest supported ``mu = sensitivity / sigma`` (``sigma >= 0.69`` at sensitivity 1): beyond
#: it the lognormal tail of the likelihood ratio needs lattices of millions of points and the
#: composed bounds lose their accuracy
MAX_MU = 1.45
#: smallest ``mu^2`` of a Gaussian base, per step of the epoch (``mu >= sqrt(1e-13 t)``): ``W``
#: spreads by ``~ mu`` around 1 on a lattice of step at least MIN_STEP, and the cells' certified
#: rounding, charged as mass at ``S = 0`` (about ``u t / mu^2``), stays below 1e-3 of it; past it
#: the law's mass grows beyond 1 (and to inf, then NaN, near ``mu = 1e-9``)
MIN_MU_SQUARED_PER_STEP = 1e-13
#: smallest ``sensitivity / scale`` of a Laplace base, per step of the epoch (``eps0 >= 1e-9 t``):
#: the ratio ``W`` lies within ``e^(+-eps0)`` of 1, its cells are ``~ eps0 / 32`` wide, and each
#: cell's certified rounding (a few ulps of 1) is charged relative to that width, ``t`` times
#: over; below it the bracket widens past its purpose (and at ``eps0 ~ 1e-16`` the cells vanish)
LAPLACE_MIN_RATIO = 1e-9


def _integer(name: str, value, low: int, high: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if not float(value).is_integer() or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}] ({what}), got {value!r}")
    return int(value)


@dataclass(frozen=True, eq=False)
class BracketLaw(AtomLaw):
    """A law known through a dominating law and a dominated one, read by the discretizer.

    Its own atoms are the dominating law, used for every upper bound; ``lower`` is a dominated
    (possibly sub-normalized) law for the optimistic side. The discretizer reads
    :attr:`bracket`.

    Attributes
    ----------
    atom_losses, atom_probs, infinity_mass, neg_infinity_mass
        The dominating law, as in :class:`~plda.mechanisms.law.AtomLaw`.
    lower : PrivacyLossLaw or None
        The dominated law (None: the dominating law serves both sides).
    """

    lower: PrivacyLossLaw | None = None

    @property
    def bracket(self) -> tuple[PrivacyLossLaw, PrivacyLossLaw]:
        """``(dominating, dominated)``: the atoms as a plain :class:`AtomLaw`, and ``lower``."""
        return AtomLaw(atom_losses=self.atom_losses, atom_probs=self.atom_probs,
                       infinity_mass=self.infinity_mass,
                       neg_infinity_mass=self.neg_infinity_mass), self.lower


def _lattice_law(q: np.ndarray, w: float, t: int, reverse: bool, infinity: float = 0.0,
                 offset: float = 0.0):
    """Law of the pair with Q-masses ``q`` at ``S = k w + offset`` and likelihood ratio
    ``S / t``: remove direction (loss ``log(S/t)``, P-mass ``q S/t``) or its reverse (loss
    ``-log(S/t)``, mass ``q``). Positions ``S <= 0`` are ratio ``0`` (only a negative offset of
    a lower side reaches them: clamping ``S`` up to ``0`` keeps it below the true ``S >= 0``)."""
    s = np.arange(len(q)) * w + offset
    k = np.nonzero((q > 0) & (s > 0))[0]
    zero = float(q[(s <= 0)].sum())
    ratio = s[k] / t
    loss = np.log(ratio)
    if not reverse:
        return AtomLaw(atom_losses=loss, atom_probs=q[k] * ratio, infinity_mass=infinity,
                       neg_infinity_mass=zero)
    return AtomLaw(atom_losses=-loss[::-1], atom_probs=q[k][::-1], infinity_mass=zero,
                   neg_infinity_mass=infinity)


def _plan(mu: float, t: int) -> tuple[float, float]:
    """Lattice step ``w`` and cap ``B`` of ``W``: ``B`` with ``E[(W-B)_+] <= TAIL``; ``w`` is
    ``MIN_STEP``, for ``mu < 1`` finer down to ``mu / 64`` within :data:`FINE_POINTS` points,
    coarser where :data:`MAX_POINTS` requires."""
    cap = math.exp(_Z_TAIL * mu + mu * mu / 2)
    sd = math.sqrt(math.expm1(mu * mu))
    span = t + 12 * math.sqrt(t) * sd + cap
    fine = MIN_STEP if mu >= 1 else min(MIN_STEP, max(mu / 64, span / FINE_POINTS))
    w = max(span / MAX_POINTS, fine)
    return w, cap


#: P-mass the add direction may charge to loss ``+inf`` (ratio 0) before its upper law is
#: recomputed on a finer lattice (:func:`_add_upper`)
ADD_ZERO_MASS = 1e-12
#: points of that finer lattice of ``S`` (finer still, the cells' certified rounding errors,
#: divided by the step and charged at ``S = 0``, outgrow the spread's mass there)
ADD_POINTS = 1 << 18


def _add_upper(mu: float, t: int) -> AtomLaw:
    """The add direction's upper law of a Gaussian epoch, on a lattice fine near ratio 0.

    On the lattice of both directions (step ``w >= MIN_STEP``) a term ``W_i < w`` is spread
    onto ``0`` with probability ``1 - W_i / w``, and ``S = 0`` (all ``t`` terms there) is loss
    ``+inf`` in the add direction: ``(Q(0.76%))^2 = 5.8e-5`` at ``mu = 1.43, t = 2``, which no
    epsilon at ``delta = 1e-5`` survives. The add direction's loss ``-log(S / t)`` only grows
    when ``S`` shrinks, so each term may first be clipped at ``c = 1 + 40 sd`` (a monotone
    coupling: every loss moves up, which keeps the law dominating under composition; the
    other side becomes a sub-probability) and the short range spread on a step ``c`` times
    finer: the mass at ``S = 0`` (spread and charged rounding) falls to 7e-12 there."""
    sd = math.sqrt(math.expm1(mu * mu))
    clip = 1.0 + 40.0 * sd
    w = (t + 12.0 * math.sqrt(t) * sd + clip) / ADD_POINTS
    cells = int(math.ceil(clip / w))
    mass, moment, mass_above, _, mass_err, moment_err = lognormal_cells(mu, w, cells)
    # the terms above the clip put at it: their mean no longer counts (a sub-probability)
    clipped = (mass, moment, mass_above, cells * w * mass_above, mass_err, moment_err)
    upper, offset, _, _, _ = sum_cells(clipped, t, w, sd)
    return _lattice_law(upper, w, t, reverse=True, offset=offset)


def _min_mu(num_steps: int) -> float:
    """The smallest Gaussian ``mu`` over ``num_steps`` steps, ``sqrt(1e-13 num_steps)``.

    Compared as ``mu`` itself, not as ``mu * mu`` against ``1e-13 num_steps``: the square of
    the documented edge, ``math.sqrt(1e-13 * 2)``, rounds below ``2e-13`` and was refused.

    Parameters
    ----------
    num_steps : int
        Steps per epoch.

    Returns
    -------
    float
        ``sqrt(MIN_MU_SQUARED_PER_STEP * num_steps)``.
    """
    return math.sqrt(MIN_MU_SQUARED_PER_STEP * num_steps)


def allocation_supported(mu: float, num_steps: int) -> bool:
    """Whether :class:`RandomAllocation` supports a Gaussian base over ``num_steps`` steps.

    Supported: ``num_steps <= MAX_STEPS``, and one step or ``sqrt(1e-13 num_steps) <= mu <=
    MAX_MU`` (:data:`MIN_MU_SQUARED_PER_STEP`) with a lattice of step at most :data:`MAX_STEP`
    within :data:`MAX_POINTS` points.

    Parameters
    ----------
    mu : float
        ``sensitivity / sigma`` of the Gaussian.
    num_steps : int
        Steps per epoch.

    Returns
    -------
    bool
        True if the epoch's laws can be computed.
    """
    return num_steps <= MAX_STEPS and (num_steps == 1 or (
        mu >= _min_mu(num_steps) and mu <= MAX_MU
        and _plan(mu, num_steps)[0] <= MAX_STEP))


@dataclass(frozen=True)
class RandomAllocation(BracketedMechanism):
    """One epoch in which each record takes part in ``num_selected`` of ``num_steps`` steps.

    The steps a record joins are chosen uniformly at random (balls-in-bins for
    ``num_selected = 1``; Feldman & Shenfeld 2025). Compose epochs with
    ``PrivacyLossDistribution.from_mechanism(epoch, count)``. For ``num_selected = 1`` the
    laws are a certified bracket of the epoch's own pair: the likelihood ratio is ``S / t`` with
    ``S`` a sum of ``t`` i.i.d. per-step ratios, put on a lattice by a mean-preserving spread
    (upper) and by conditional means moved onto an offset lattice (lower), both second order in
    the lattice step. For ``k = num_selected > 1`` the upper bound is the composition of
    one-step allocations of ``floor(t/k)`` and ``ceil(t/k)`` steps (Feldman & Shenfeld 2025,
    arXiv 2502.08202 and 2602.17284) and the lower bound a post-processing of the epoch
    (:meth:`lower_bound_mechanism`); such an epoch is not :attr:`tight`. The derivations:
    ``docs/howto/random-allocation.md``.

    Parameters
    ----------
    mechanism : Mechanism
        The base mechanism: a :class:`~plda.Gaussian` with ``sensitivity / sigma`` from
        ``sqrt(1e-13 num_steps)`` to 1.45,
        or a :class:`~plda.Laplace` with ``sensitivity / scale`` from ``1e-9 * num_steps`` up
        to about 12 (below, one use of the base per epoch is a certified upper bound without
        amplification; :class:`~plda.Shuffled` takes no lower limit).
    num_steps : int
        Steps per epoch ``t``, an integer in ``[1, 1e5]``.
    num_selected : int, optional
        Steps each record takes part in, an integer in ``[1, num_steps]``; for ``k > 1`` the
        Gaussian and Laplace ranges above apply to ``ceil(num_steps / k)`` steps.

    Raises
    ------
    TypeError
        If ``mechanism`` is not a plda mechanism, or a size is not a number.
    ValueError
        If a size is out of range or not an integer, or if the base is neither a Gaussian nor a
        Laplace mechanism.
    UncoveredParametersError
        (a ``ValueError``) If its noise is too small for the lattice, or too large: a
        Gaussian base's ``sensitivity / sigma`` below ``sqrt(1e-13 num_steps)``, a Laplace
        base's ``sensitivity / scale`` below ``1e-9 * num_steps`` (see above).
    """

    mechanism: Mechanism
    num_steps: int
    num_selected: int = 1

    def __post_init__(self):
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(
                f"mechanism must be a plda mechanism, got {type(self.mechanism).__name__}"
            )
        t = _integer("num_steps", self.num_steps, 1, MAX_STEPS, "steps per epoch")
        k = _integer("num_selected", self.num_selected, 1, t,
                     "steps per record, at most num_steps")
        # k > 1 is analysed through one-step allocations of m and m + 1 steps (t = k m + r):
        # the largest of them sets the range (see plda.epochs.many)
        blocks = t if k == 1 else -(-t // k)
        steps = "num_steps" if k == 1 else "ceil(num_steps / num_selected)"  # for the messages
        if type(self.mechanism) is Laplace:
            # (a relative slack: 1e-9 * 100 rounds above 1e-7)
            if blocks > 1 and self.mechanism.epsilon < LAPLACE_MIN_RATIO * blocks * (1 - 1e-12):
                raise UncoveredParametersError(
                    f"sensitivity / scale of a Laplace base must be at least "
                    f"{LAPLACE_MIN_RATIO:g} * {steps} = {LAPLACE_MIN_RATIO * blocks:g} for "
                    f"RandomAllocation with num_steps = {t}, num_selected = {k} (the likelihood "
                    f"ratio's lattice needs it above float resolution), got "
                    f"{self.mechanism.epsilon!r}; a certified upper bound without amplification "
                    "is num_selected uses of the base mechanism per epoch"
                )
            if blocks > 1 and _laplace_plan(self.mechanism.epsilon, blocks)[0] > MAX_STEP:
                raise UncoveredParametersError(
                    "sensitivity / scale of a Laplace base must be at most about 12 for "
                    f"RandomAllocation with num_steps = {t} (the likelihood ratio's range "
                    f"must fit a lattice of {MAX_POINTS} points), got {self.mechanism.epsilon!r}"
                )
            object.__setattr__(self, "num_steps", t)
            object.__setattr__(self, "num_selected", k)
            return
        if type(self.mechanism) is not Gaussian:
            raise ValueError(
                "RandomAllocation supports Gaussian and Laplace base mechanisms only, got "
                f"{type(self.mechanism).__name__}; a certified upper bound without "
                "amplification is one use of the base mechanism per epoch"
            )
        mu = self.mechanism.mu
        # the values in full (repr): an input an ulp past the edge printed as the edge itself,
        # 'must be at least 1e-06 ..., got 1e-06'; DP-SGD callers wrote noise_multiplier, the
        # reciprocal of this mu, so its bound is given too
        if blocks > 1 and mu < _min_mu(blocks):
            raise UncoveredParametersError(
                f"sensitivity / sigma of a Gaussian base must be at least sqrt("
                f"{MIN_MU_SQUARED_PER_STEP:g} * {steps}) = "
                f"{_min_mu(blocks)!r} for RandomAllocation with "
                f"num_steps = {t}, num_selected = {k} (the lattice's certified rounding grows "
                f"as num_steps / mu^2; in DP-SGD, sensitivity / sigma is 1 / noise_multiplier: "
                f"noise_multiplier at most {1 / _min_mu(blocks)!r}), got {mu!r}; a certified "
                "upper bound without amplification is num_selected uses of the base mechanism "
                "per epoch"
            )
        if blocks > 1 and not allocation_supported(mu, blocks):
            raise UncoveredParametersError(
                f"sensitivity / sigma must be at most {MAX_MU} for RandomAllocation (sigma >= "
                f"{1 / MAX_MU:.2f} at sensitivity 1, in DP-SGD noise_multiplier; with "
                f"num_steps = {t}: the lognormal tail of the likelihood ratio must fit a "
                f"lattice of {MAX_POINTS} points), got {mu!r}; a certified upper bound without "
                "amplification is one use of the base mechanism per epoch"
            )
        object.__setattr__(self, "num_steps", t)
        object.__setattr__(self, "num_selected", k)

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        """Whether both directions have one law: only for one step of a symmetric base."""
        return self.num_steps == 1 and self.mechanism.symmetric

    @property
    def tight(self) -> bool:  # type: ignore[override]
        """Whether the laws bracket the epoch's own pair: True for ``num_selected = 1``.

        For ``k > 1`` they are the decomposition's dominating law (an upper bound only).
        """
        return self.num_selected == 1

    def lower_bound_mechanism(self) -> Mechanism:
        """A mechanism whose PLD lower bound is certified for this epoch.

        Returns
        -------
        Mechanism
            This epoch for ``num_selected = 1``; for ``k > 1`` a post-processing of it
            (:class:`~plda.epochs.many.AllocationLowerBound`).
        """
        if self.tight:
            return self
        return AllocationLowerBound(self.mechanism, self.num_steps, self.num_selected)

    def _laws(self):
        if type(self.mechanism) is Laplace:
            kind, parameter = "laplace", self.mechanism.epsilon
        else:
            kind, parameter = "gaussian", self.mechanism.mu
        if self.num_selected > 1:
            return _many_laws(kind, parameter, self.num_steps, self.num_selected)
        return _allocation_laws(kind, parameter, self.num_steps)

    def _remove_law(self):
        if self.num_steps == 1:
            return self.mechanism.privacy_loss("remove")
        return self._laws()[0]

    def _add_law(self):
        if self.num_steps == 1:
            return self.mechanism.privacy_loss("add")
        return self._laws()[1]


def _laplace_plan(epsilon0: float, t: int) -> tuple[float, float, int]:
    """Lattice step ``w``, origin and cell count for a Laplace base: ``W`` lies in
    ``[a, b] = [e^-eps0, e^eps0]`` with atoms at both ends; ``w = (b - a) / N`` and the origin
    ``a - w/2`` put both atoms at cell centres (the lower bounds' shared offset, about ``w/2``,
    then lands on them: no first-order loss), with at least 64 cells across ``[a, b]``."""
    lo, hi = math.exp(-epsilon0), math.exp(epsilon0)
    sd = math.sqrt(max(hi - 1.0, 0.0))  # E_Q[W^2] = E_P[W] <= b
    span = hi + t + 12 * math.sqrt(t) * sd
    cells = max(64, math.ceil((hi - lo) / max(MIN_STEP, span / MAX_POINTS)))
    w = (hi - lo) / cells
    return w, lo - w / 2, cells + 1


@cached(maxsize=16)
def _allocation_laws(kind: str, parameter: float, t: int) -> tuple[BracketLaw, BracketLaw]:
    """``(remove, add)`` bracket laws of one epoch (both directions from one computation);
    ``parameter`` is ``mu`` of a Gaussian or ``epsilon0`` of a Laplace base."""
    if kind == "laplace":
        w, origin, cells = _laplace_plan(parameter, t)
        # upper side: atoms on lattice points (cells from e^-eps0); lower: at cell centres.
        # origin + w/2 may round above e^-eps0, which would leave the atom there (Q-mass 1/2)
        # outside every cell: start at most at the atom (a few ulps below it is still certified,
        # the spread then splits the atom between the first two lattice points)
        low = min(origin + w / 2, math.exp(-parameter))
        laws = sum_cells(laplace_cells(parameter, w, low, cells), t, w,
                         math.sqrt(max(math.expm1(parameter), 0.0)), low,
                         lower_cells=laplace_cells(parameter, w, origin, cells),
                         lower_origin=origin)
    else:
        w, cap = _plan(parameter, t)
        laws = sum_cells(lognormal_cells(parameter, w, int(math.ceil(cap / w))), t, w,
                         math.sqrt(math.expm1(parameter * parameter)))
    upper, off_u, inf_mean, (low_remove, off_r), (low_add, off_a) = laws
    infinity = inf_mean / t
    up_remove = _lattice_law(upper, w, t, reverse=False, infinity=infinity, offset=off_u)
    up_add = _lattice_law(upper, w, t, reverse=True, infinity=infinity, offset=off_u)
    if kind == "gaussian" and up_add.infinity_mass > ADD_ZERO_MASS:
        finer = _add_upper(parameter, t)  # both dominate: the one with less mass at +inf
        if finer.infinity_mass < up_add.infinity_mass:
            up_add = finer
    return (
        BracketLaw(atom_losses=up_remove.atom_losses, atom_probs=up_remove.atom_probs,
                   infinity_mass=up_remove.infinity_mass,
                   neg_infinity_mass=up_remove.neg_infinity_mass,
                   lower=_lattice_law(low_remove, w, t, reverse=False, offset=off_r)),
        BracketLaw(atom_losses=up_add.atom_losses, atom_probs=up_add.atom_probs,
                   infinity_mass=up_add.infinity_mass,
                   neg_infinity_mass=up_add.neg_infinity_mass,
                   lower=_lattice_law(low_add, w, t, reverse=True, offset=off_a)),
    )


@cached(maxsize=16)
def _many_laws(kind: str, parameter: float, t: int, k: int) -> tuple[AtomLaw, AtomLaw]:
    """``(remove, add)`` dominating laws of a ``k``-out-of-``t`` epoch, ``k > 1``: the one-step
    allocations of :func:`~plda.epochs.many.decomposition`, composed."""
    base = Laplace(1.0 / parameter) if kind == "laplace" else Gaussian(sigma=1.0 / parameter)
    blocks = [(RandomAllocation(base, size), n) for size, n in decomposition(t, k)]
    return tuple(composed_upper([(m.privacy_loss(direction), n) for m, n in blocks])
                 for direction in ("remove", "add"))
