"""A matrix mechanism with Poisson sampling: a certified upper bound by conditional composition.

Choquette-Choo, Ganesh, Steinke & Thakurta 2024 (MMCC): given the outputs before step ``i``,
step ``i`` is a mixture of Gaussians whose weights are the posterior participation
probabilities of the record; bounding them on an event of probability at least
``1 - tail_probability`` makes each step dominated by a fixed :class:`~plda.GaussianMixture`.
Our own statement, bounds and proof: ``docs/howto/dp-ftrl.md`` ("Amplification for any
strategy").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import svdvals
from scipy.special import ndtri

from plda._internal.caches import remembered
from plda._internal.errors import check_bracket, quiet_accuracy, warn_if_inaccurate
from plda._internal.floats import dot
from plda._internal.validation import nonnegative_float, positive_float, probability
from plda.bounds import Bounds, check_relation
from plda.matrix.row_mixtures import (
    merge_dominated,
    realized_row_mixture,
    row_blocks,
    row_key,
    row_mixture,
)
from plda.matrix.strategies import Checked, check_strategy, dense_of, norms_of
from plda.mechanisms import Gaussian, GaussianMixture, PoissonSampled
from plda.pld import DEFAULT_ACCURACY, PrivacyLossDistribution

__all__ = ["PoissonMatrixMechanism"]

#: most distinct rows the thinned lower bound composes (a dense strategy's rows all differ)
LOWER_LAWS = 16

_ADVICE = ("the gap is mostly the conditional-composition bound's (docs/howto/dp-ftrl.md, "
           "'What it costs'): a larger noise multiplier or fewer bands narrow it.")

@dataclass(frozen=True, eq=False)
class PoissonMatrixMechanism:
    r"""Any causal strategy with Poisson sampling: certified bounds by conditional composition.

    Step ``i`` releases row ``i`` of ``C x + sigma z``, each record taking part in each step
    independently with probability ``q`` (Poisson sampling, add/remove). Given the earlier
    outputs, step ``i`` is a mixture of Gaussians weighted by the posterior participation
    probabilities (Choquette-Choo, Ganesh, Steinke & Thakurta 2024, MMCC). Off an event of
    probability at most :attr:`tail_probability` the posterior probability of a participation
    at step ``j`` is at most

    ``p_j = q e^{e_j} / (q e^{e_j} + 1 - q)``, ``e_j = (sigma t ||C e_j|| + a_j) / sigma^2``,

    ``a_j = sum_{k != j} (|C|^T |C|)_{kj} + ||C e_j||^2 / 2`` and ``t`` with
    ``2 J Phi(-t) = tail_probability`` (``J`` the columns with an entry below the diagonal), so
    step ``i`` is dominated by ``GaussianMixture`` of ``sum_j |C_ij| X_j``, ``X_j ~
    Bernoulli(p_j)`` (``q`` on the diagonal), and

    ``delta(eps) <= delta_mixtures(eps) + tail_probability``.

    The upper bound is the smaller of that and the Gaussian of a record taking part in every
    step (no amplification); the lower bound is the larger over two post-processings of a
    realized run (:meth:`lower_plds`): DP-SGD at :attr:`lower_noise_multiplier` (the output
    times ``C^{-1}``, whitened), and for a banded strategy every ``b``-th row alone. With
    ``C = I`` both bounds are DP-SGD (no tail is charged).
    The proof, and what is assumed of the training loop: ``docs/howto/dp-ftrl.md``.

    Parameters
    ----------
    strategy : array_like or ToeplitzStrategy
        ``C``: a square lower-triangular array, Toeplitz coefficients or a
        :class:`~plda.matrix.ToeplitzStrategy`.
    noise_multiplier : float
        ``sigma``, the noise's standard deviation over the clipping norm, positive.
    sample_rate : float
        ``q``, the Poisson rate of every step, in ``(0, 1]``.
    tail_probability : float, optional
        The probability charged to ``delta`` for the posterior bound, in ``(0, 1)``
        (default ``1e-10``); an ``epsilon`` at ``delta <= tail_probability`` comes from the
        unamplified Gaussian alone.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``strategy`` is not square lower-triangular (or holds NaN or infinities, or has no
        non-zero entry), ``noise_multiplier`` is not positive and finite, ``sample_rate`` is
        outside ``(0, 1]`` or ``tail_probability`` outside ``(0, 1)``.

    Examples
    --------
    >>> import plda.matrix as pm
    >>> run = pm.PoissonMatrixMechanism(pm.toeplitz_strategy([0.9, 0.4], 100), 4.0, 0.01)
    >>> lower, upper = run.epsilon_bounds(1e-6)
    >>> 0 < lower < upper < 1
    True
    """

    strategy: object
    noise_multiplier: float
    sample_rate: float
    tail_probability: float = 1e-10
    _checked: Checked | None = field(default=None, repr=False)
    _rates: np.ndarray | None = field(default=None, repr=False)
    _memory: bool = field(default=False, repr=False)

    def __post_init__(self):
        checked = check_strategy(self.strategy, causal=True)
        sigma = positive_float("noise_multiplier", self.noise_multiplier)
        rate = probability("sample_rate", self.sample_rate, open_low=True)
        tail = probability("tail_probability", self.tail_probability, open_low=True)
        if tail >= 1:
            raise ValueError(f"tail_probability must be in (0, 1), got {self.tail_probability!r}")
        if not np.max(norms_of(checked)) > 0:
            raise ValueError("strategy must have a non-zero entry")
        object.__setattr__(self, "noise_multiplier", sigma)
        object.__setattr__(self, "sample_rate", rate)
        object.__setattr__(self, "tail_probability", tail)
        object.__setattr__(self, "_checked", checked)
        rates, memory = self._posterior_rates(checked, sigma, rate, tail)
        object.__setattr__(self, "_rates", rates)
        object.__setattr__(self, "_memory", memory)

    # ------------------------------------------------------------ the posterior bound
    @staticmethod
    def _posterior_rates(checked: Checked, sigma: float, q: float, tail: float):
        """``p_j`` per column (``q`` where the column has no entry below the diagonal), and
        whether any column has one."""
        dense = np.abs(dense_of(checked))
        below = np.tril(dense, -1).any(axis=0)
        columns = int(np.count_nonzero(below))
        if columns == 0:
            return np.full(checked.steps, q), False
        gram_sums = dot(dense.sum(axis=1), dense)  # (|C|^T |C| 1)_j
        squares = np.einsum("ij,ij->j", dense, dense)
        cross = np.maximum(gram_sums - squares, 0.0)
        t = -float(ndtri(tail / (2 * columns)))
        exponent = (sigma * t * np.sqrt(squares) + cross + squares / 2) / sigma**2
        # rounding: the sums of n non-negative terms are within n ulps (relative); the exponent
        # and the quotient are lifted past that, so p_j only grows
        exponent = exponent * (1 + 4 * (checked.steps + 4) * np.finfo(float).eps)
        with np.errstate(over="ignore"):
            rates = 1.0 / (1.0 + (1 - q) / q * np.exp(-exponent))
        rates = np.minimum(1.0, rates * (1 + 8 * np.finfo(float).eps))
        return np.where(below, rates, q), True

    @property
    def steps(self) -> int:
        """``n``, the steps of the strategy."""
        return self._checked.steps

    @property
    def charged_tail(self) -> float:
        """The probability added to ``delta`` for the posterior bound.

        :attr:`tail_probability`, or 0 when no column has an entry below the diagonal (no
        posterior is needed: DP-SGD).
        """
        return self.tail_probability if self._memory else 0.0

    @property
    def posterior_rates(self) -> np.ndarray:
        """``p_j``, the bound on the posterior participation probability of each step."""
        return self._rates.copy()

    # ------------------------------------------------------------ the dominating laws
    def laws(self) -> tuple[tuple[GaussianMixture, int], ...]:
        """The dominating pair of each step, equal pairs merged: ``((mixture, count), ...)``.

        Returns
        -------
        tuple of (GaussianMixture, int)
            Step ``i``'s mixture of ``sum_j |C_ij| X_j``, the rows taken in blocks (four per
            doubling of the step index) whose envelope by offset ``i - j`` (the largest entry
            and rate over the block's rows) dominates each row, entries and rates rounded up
            (:mod:`plda.matrix.row_mixtures`).
        """
        return remembered(self, ("laws",), self._build_laws)

    def _build_laws(self):
        sigma, q = self.noise_multiplier, self.sample_rate
        dense, rates = np.abs(dense_of(self._checked)), self._rates
        rows: dict[tuple, int] = {}
        for start, end in row_blocks(self.steps):
            # the block's envelope by offset k = i - j: the largest |C[i, i - k]| and rate over
            # its rows dominates each of them (a larger sum of larger entries, stochastically)
            entries = np.zeros(end)
            envelope = np.zeros(end)
            for i in range(start, end):
                row = dense[i, i::-1]  # offsets 0, 1, ..., i
                entries[: i + 1] = np.maximum(entries[: i + 1], row)
                if i > 0:  # columns i - 1, ..., 0 at offsets 1, ..., i
                    envelope[1 : i + 1] = np.maximum(envelope[1 : i + 1], rates[i - 1 :: -1])
            envelope[0] = q  # the step's own participation: prior q
            key = row_key(entries, envelope)
            rows[key] = rows.get(key, 0) + (end - start)
        rows = merge_dominated(rows)
        laws = []
        for (entries, weights_of), count in rows.items():
            shifts, weights = row_mixture(np.array(entries), np.array(weights_of))
            laws.append((GaussianMixture(sigma=sigma, sensitivities=shifts,
                                         probabilities=weights), count))
        return tuple(laws)

    def pld(self, *, accuracy: float = DEFAULT_ACCURACY) -> PrivacyLossDistribution:
        """The composition of the dominating pairs (:meth:`laws`), under add/remove.

        Its ``delta(eps)`` plus :attr:`charged_tail` is a certified upper bound on the
        mechanism's ``delta``; the PLD alone is not.

        Parameters
        ----------
        accuracy : float, optional
            Target relative gap of ``epsilon(delta)``, in (0, 1).

        Returns
        -------
        PrivacyLossDistribution
            Not yet discretized; remembered per accuracy.

        Raises
        ------
        ValueError
            If ``accuracy`` is out of range.
        """
        return remembered(self, ("pld", accuracy), lambda: PrivacyLossDistribution(
            self.laws(), "add_remove", accuracy))

    @property
    def unamplified(self) -> Gaussian:
        """``Gaussian(sigma, || |C| 1 ||)``: a record in every step, no amplification."""
        def compute():
            value = float(np.linalg.norm(np.abs(dense_of(self._checked)).sum(axis=1)))
            return Gaussian(sigma=self.noise_multiplier,
                            sensitivity=value * (1 + 4 * self.steps * np.finfo(float).eps))
        return remembered(self, ("unamplified",), compute)

    def _unamplified_pld(self, accuracy: float) -> PrivacyLossDistribution:
        return remembered(self, ("unamplified pld", accuracy),
                          lambda: PrivacyLossDistribution.from_mechanism(self.unamplified,
                                                                         accuracy=accuracy))

    # ------------------------------------------------------------ the realized lower bound
    @property
    def lower_noise_multiplier(self) -> float:
        """``sigma / s`` with ``s <= sigma_min(C)`` certified (inf when ``C`` is singular)."""
        def compute():
            dense = dense_of(self._checked)
            values = svdvals(dense)
            # a backward-stable SVD is accurate to a few n eps ||C||: step below by 10 n eps
            s = float(values[-1]) - 10 * self.steps * np.finfo(float).eps * float(values[0])
            return self.noise_multiplier / s if s > 0 else math.inf
        return remembered(self, ("lower sigma",), compute)

    def lower_plds(self, *, accuracy: float = DEFAULT_ACCURACY) -> tuple:
        """PLDs of post-processings of the realized run: their lower bounds hold.

        The realized run has the record's gradient one unit vector at every step and every
        other gradient 0. Two post-processings of it:

        - ``C^{-1} y`` whitened: DP-SGD at :attr:`lower_noise_multiplier` for ``n`` steps
          (when ``C`` is invertible);
        - for a ``b``-banded strategy, every ``b``-th row from the last: their entries touch
          disjoint steps and their noises are independent, so they compose as
          ``GaussianMixture`` pairs of ``sum_j C_ij X_j`` (rows of one sign, at most 12
          entries, at most :data:`LOWER_LAWS` distinct ones, the most frequent first; the
          others dropped).

        Parameters
        ----------
        accuracy : float, optional
            Target relative gap of ``epsilon(delta)``, in (0, 1).

        Returns
        -------
        tuple of PrivacyLossDistribution
            Possibly empty (a singular strategy with no usable row): the lower bound is then 0.

        Raises
        ------
        ValueError
            If ``accuracy`` is out of range.
        """
        return remembered(self, ("lower plds", accuracy), lambda: self._lower_plds(accuracy))

    def _lower_plds(self, accuracy):
        found = []
        sigma = self.lower_noise_multiplier
        if math.isfinite(sigma):
            step = PoissonSampled(Gaussian(sigma=sigma), sample_rate=self.sample_rate)
            found.append(PrivacyLossDistribution.from_mechanism(step, self.steps,
                                                                accuracy=accuracy))
        bands = self._checked.bands or self.steps
        if bands < self.steps:
            dense = dense_of(self._checked)
            rows: dict[tuple, int] = {}
            for i in range(self.steps - 1, -1, -bands):  # disjoint windows [i - b + 1, i]
                mixture = realized_row_mixture(dense[i, max(0, i - bands + 1) : i + 1],
                                               self.sample_rate)
                if mixture is not None:
                    rows[mixture] = rows.get(mixture, 0) + 1
            # at most LOWER_LAWS distinct rows (each costs a discretization): the most frequent,
            # then the largest; dropping the others is a post-processing too
            kept = sorted(rows.items(), key=lambda item: (-item[1], -item[0][0][-1]))
            if kept:
                laws = tuple((GaussianMixture(sigma=self.noise_multiplier, sensitivities=shifts,
                                              probabilities=weights), count)
                             for (shifts, weights), count in kept[:LOWER_LAWS])
                found.append(PrivacyLossDistribution(laws, "add_remove", accuracy))
        return tuple(found)

    # ------------------------------------------------------------ queries
    def epsilon_bounds(self, delta: float, *, relation: str = "add_remove",
                       accuracy: float = DEFAULT_ACCURACY) -> Bounds:
        """Certified ``(lower, upper)`` bounds on epsilon at ``delta``.

        Parameters
        ----------
        delta : float
            In ``(0, 1)``.
        relation : str, optional
            ``"add_remove"`` only (there is no replace-one analysis of Poisson sampling here).
        accuracy : float, optional
            Target relative gap of each PLD's bounds, in (0, 1).

        Returns
        -------
        Bounds
            ``upper = min(eps_mixtures(delta - tail), eps_unamplified(delta))``, ``lower``
            the largest over :meth:`lower_plds`.

        Raises
        ------
        ValueError
            If ``delta``, ``relation`` or ``accuracy`` is out of range.
        InvertedBracketError
            If the lower bound exceeds the upper one (a defect, never clamped).

        Warns
        -----
        AccuracyWarning
            Where the interval is wider than ``accuracy`` (relative): the bound's own gap.
        """
        delta = self._checked_query("delta", delta, relation)
        with quiet_accuracy():  # the gap of the whole is judged below, once
            upper = self._epsilon_upper(delta, accuracy)
            lower = self._realized_lower("epsilon", delta, accuracy)
        check_bracket(lower, upper, query="PoissonMatrixMechanism.epsilon_bounds")
        warn_if_inaccurate(lower, upper, accuracy, query="PoissonMatrixMechanism.epsilon_bounds",
                           advice=_ADVICE)
        return Bounds(lower=lower, upper=float(upper))

    def delta_bounds(self, epsilon: float, *, relation: str = "add_remove",
                     accuracy: float = DEFAULT_ACCURACY) -> Bounds:
        """Certified ``(lower, upper)`` bounds on delta at ``epsilon``.

        Parameters
        ----------
        epsilon : float
            At least 0.
        relation : str, optional
            ``"add_remove"`` only.
        accuracy : float, optional
            Target relative gap of each PLD's bounds, in (0, 1).

        Returns
        -------
        Bounds
            ``upper = min(1, delta_mixtures(eps) + tail, delta_unamplified(eps))``, ``lower``
            the largest over :meth:`lower_plds`.

        Raises
        ------
        ValueError
            If ``epsilon``, ``relation`` or ``accuracy`` is out of range.
        InvertedBracketError
            If the lower bound exceeds the upper one (a defect, never clamped).

        Warns
        -----
        AccuracyWarning
            Where the interval is wider than ``accuracy`` (relative): the bound's own gap.
        """
        epsilon = self._checked_query("epsilon", epsilon, relation)
        with quiet_accuracy():  # the gap of the whole is judged below, once
            upper = self._delta_upper(epsilon, accuracy)
            lower = self._realized_lower("delta", epsilon, accuracy)
        check_bracket(lower, upper, query="PoissonMatrixMechanism.delta_bounds")
        warn_if_inaccurate(lower, upper, accuracy, query="PoissonMatrixMechanism.delta_bounds",
                           advice=_ADVICE)
        return Bounds(lower=lower, upper=upper)

    def epsilon(self, delta: float, *, relation: str = "add_remove",
                accuracy: float = DEFAULT_ACCURACY) -> float:
        """Certified upper bound on epsilon at ``delta`` (:meth:`epsilon_bounds`' upper).

        The lower bound is not computed (no SVD, no realized rows).

        Parameters
        ----------
        delta : float
            In ``(0, 1)``.
        relation : str, optional
            ``"add_remove"`` only.
        accuracy : float, optional
            Target relative gap of each PLD's bounds, in (0, 1).

        Returns
        -------
        float

        Raises
        ------
        ValueError
            If ``delta``, ``relation`` or ``accuracy`` is out of range.
        """
        delta = self._checked_query("delta", delta, relation)
        with quiet_accuracy():  # an upper bound alone: no interval to judge
            return self._epsilon_upper(delta, accuracy)

    def delta(self, epsilon: float, *, relation: str = "add_remove",
              accuracy: float = DEFAULT_ACCURACY) -> float:
        """Certified upper bound on delta at ``epsilon`` (:meth:`delta_bounds`' upper).

        The lower bound is not computed (no SVD, no realized rows).

        Parameters
        ----------
        epsilon : float
            At least 0.
        relation : str, optional
            ``"add_remove"`` only.
        accuracy : float, optional
            Target relative gap of each PLD's bounds, in (0, 1).

        Returns
        -------
        float

        Raises
        ------
        ValueError
            If ``epsilon``, ``relation`` or ``accuracy`` is out of range.
        """
        epsilon = self._checked_query("epsilon", epsilon, relation)
        with quiet_accuracy():
            return self._delta_upper(epsilon, accuracy)

    def _epsilon_upper(self, delta: float, accuracy: float) -> float:
        upper = float(self._unamplified_pld(accuracy).epsilon(delta))
        tail = self.charged_tail
        if delta > tail:
            # delta - tail rounded down, so that the epsilon read at it only grows
            budget = float(np.nextafter(delta - tail, 0.0)) if tail else delta
            upper = min(upper, float(self.pld(accuracy=accuracy).epsilon(budget)))
        return upper

    def _delta_upper(self, epsilon: float, accuracy: float) -> float:
        mixtures = float(self.pld(accuracy=accuracy).delta(epsilon))
        charged = float(np.nextafter(mixtures + self.charged_tail, np.inf))
        return min(1.0, charged, float(self._unamplified_pld(accuracy).delta(epsilon)))

    def _realized_lower(self, query: str, value: float, accuracy: float) -> float:
        """The largest lower bound of ``query`` (``"epsilon"`` or ``"delta"``) over
        :meth:`lower_plds`, 0 without one."""
        return max((float(getattr(p, f"{query}_bounds")(value).lower)
                    for p in self.lower_plds(accuracy=accuracy)), default=0.0)

    @staticmethod
    def _checked_query(name: str, value, relation: str) -> float:
        if check_relation(relation) != "add_remove":
            raise ValueError(
                "relation: PoissonMatrixMechanism has an add/remove analysis only (Poisson "
                "sampling adds or removes a record); use relation='add_remove' (a substitution "
                "is two such links: plda.theorems.group_privacy(epsilon, delta, 2) on it)"
            )
        if name == "delta":
            v = probability("delta", value, open_low=True)
            if v >= 1:
                raise ValueError(f"delta must be in (0, 1), got {value!r}")
            return v
        return nonnegative_float("epsilon", value)

    def __repr__(self) -> str:
        return (f"PoissonMatrixMechanism(steps={self.steps}, "
                f"noise_multiplier={self.noise_multiplier!r}, "
                f"sample_rate={self.sample_rate!r}, tail_probability={self.tail_probability!r})")
