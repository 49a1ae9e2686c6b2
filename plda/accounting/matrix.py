"""``MatrixAccountant``: a matrix-mechanism run (DP-FTRL, BandMF) accounted step by step.

After ``t`` steps the run has released rows ``0..t-1`` of ``C x + sigma z``; ``C`` being
lower-triangular, those rows are the whole output of the strategy's leading ``t x t`` block, so
the privacy so far is that of the same reduction on the prefix strategy (exact when the
reduction is). See ``docs/howto/dp-ftrl.md``.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from plda._internal.validation import count as check_count
from plda.bounds import Bounds
from plda.matrix import (
    CyclicPoissonBandMF,
    MultiEpochMF,
    PoissonMatrixMechanism,
    ToeplitzStrategy,
    toeplitz_strategy,
)
from plda.matrix.reductions import MatrixReduction
from plda.pld import DEFAULT_ACCURACY

__all__ = ["MatrixAccountant"]


class MatrixAccountant:
    """Certified privacy of a matrix-mechanism run so far, recorded as the steps happen.

    With ``sample_rate`` the run is cyclic Poisson BandMF
    (:class:`~plda.matrix.CyclicPoissonBandMF`), or with ``strategy_sampling="poisson"`` every
    step Poisson-sampled from the whole data (:class:`~plda.matrix.PoissonMatrixMechanism`, a
    certified upper bound by conditional composition); without it, the unsampled mechanism where a
    record takes part in at most ``participations`` steps at least ``min_separation`` apart
    (:class:`~plda.matrix.MultiEpochMF`). After ``t`` steps the queries answer for the prefix
    strategy ``C[:t, :t]``: a record's participations among the first ``t`` steps, at most
    ``ceil(t / min_separation)``, or the first ``ceil(t / bands)`` rounds.

    Parameters
    ----------
    strategy : array_like or ToeplitzStrategy
        ``C``, square lower-triangular (or Toeplitz coefficients): its size is the run's
        length.
    noise_multiplier : float
        ``sigma``, positive.
    sample_rate : float, optional
        Cyclic Poisson sampling at this rate within a part; None: no sampling.
    bands : int, optional
        With ``sample_rate``: the number of parts (default the strategy's bands).
    strategy_sampling : str, optional
        With ``sample_rate``: ``"cyclic"`` (default, cyclic Poisson BandMF) or ``"poisson"``
        (every step samples the whole data).
    participations : int, optional
        Without ``sample_rate``: the most steps a record takes part in (default 1).
    min_separation : int, optional
        Without ``sample_rate``: the least distance between two of them (default 1).
    accuracy : float, optional
        Target relative gap of the epsilon bounds.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If an argument is out of range (as for the reduction of the whole run, which is
        checked here), or sampling and participation flags are mixed.

    Examples
    --------
    >>> import plda.matrix as pm
    >>> from plda.accounting.matrix import MatrixAccountant
    >>> run = MatrixAccountant(pm.toeplitz_strategy([1.0, 0.5], 100), 1.0, sample_rate=0.1)
    >>> run.step(10)
    >>> run.steps, run.reduction().rounds
    (10, 5)
    """

    def __init__(self, strategy, noise_multiplier: float, *, sample_rate: float | None = None,
                 bands: int | None = None, participations: int | None = None,
                 min_separation: int | None = None, accuracy: float = DEFAULT_ACCURACY,
                 strategy_sampling: str = "cyclic"):
        if sample_rate is not None and (participations is not None
                                        or min_separation is not None):
            raise ValueError("participations and min_separation describe an unsampled run; "
                             "with sample_rate (cyclic Poisson BandMF) leave them out")
        if sample_rate is None and bands is not None:
            raise ValueError("bands is for cyclic Poisson BandMF: give sample_rate too")
        if strategy_sampling not in ("cyclic", "poisson"):
            raise ValueError("strategy_sampling must be 'cyclic' or 'poisson', got "
                             f"{strategy_sampling!r}")
        if strategy_sampling == "poisson" and (sample_rate is None or bands is not None):
            raise ValueError("strategy_sampling='poisson' needs sample_rate and takes no "
                             "bands (every step samples the whole data)")
        self.strategy_sampling = strategy_sampling
        self.options = dict(noise_multiplier=noise_multiplier, sample_rate=sample_rate,
                            participations=participations or 1,
                            min_separation=min_separation or 1)
        self.accuracy = accuracy
        if not isinstance(strategy, ToeplitzStrategy) and np.ndim(strategy) == 1:
            strategy = toeplitz_strategy(strategy)  # coefficients: n = their number
        #: the strategy, as a square array or a ToeplitzStrategy
        self.strategy = strategy
        self.size = strategy.steps if isinstance(strategy, ToeplitzStrategy) else len(strategy)
        # the whole run's reduction validates every argument now, before any step; its parts
        # are the run's parts at every prefix
        self.whole = self._reduction(strategy, self.size, bands)
        self.bands = self.whole.bands if sample_rate is not None and (
            strategy_sampling == "cyclic") else None
        self.steps = 0
        # the reduction of the latest prefix asked, with its PLDs: an epsilon and a delta query
        # between two steps (or a query repeated) build and discretize it once
        self._last: tuple[int, MatrixReduction] | None = None

    def _reduction(self, strategy, t: int, bands: int | None):
        o = self.options
        if self.strategy_sampling == "poisson":  # the prefix run: the same bound on C[:t, :t]
            return PoissonMatrixMechanism(strategy, o["noise_multiplier"], o["sample_rate"])
        if o["sample_rate"] is not None:
            # the first t steps of a run in b parts are in min(b, t) parts, one round each
            return CyclicPoissonBandMF(strategy, o["noise_multiplier"], o["sample_rate"],
                                       bands=None if bands is None else min(bands, t))
        separation, participations = o["min_separation"], o["participations"]
        if t < self.size:  # a prefix: the participations that fit in its t steps
            participations = max(1, min(participations, -(-t // separation)))
            separation = min(separation, t)
        return MultiEpochMF(strategy, o["noise_multiplier"], participations=participations,
                            min_separation=separation)

    def step(self, count: int = 1) -> None:
        """Record ``count`` more steps of the run.

        Parameters
        ----------
        count : int, optional
            At least 1; the run cannot go past the strategy's size.

        Raises
        ------
        ValueError
            If ``count`` is not an integer >= 1 or the run would pass its last step (nothing
            is recorded).
        """
        count = check_count("count", count, minimum=1)
        n = self.size
        if self.steps + count > n:
            raise ValueError(f"count={count} after {self.steps} steps passes the strategy's "
                             f"{n} steps: a matrix mechanism's run is as long as its strategy")
        self.steps += count

    def reduction(self) -> MatrixReduction | PoissonMatrixMechanism:
        """The reduction of the run so far: the same mechanism on ``C[:t, :t]``.

        Returns
        -------
        MatrixReduction or PoissonMatrixMechanism
            Of the prefix strategy.

        Raises
        ------
        ValueError
            If no step has been recorded.
        """
        steps = self.steps
        if steps == 0:
            raise ValueError("no step recorded yet: call step() first")
        last = self._last  # read once: another thread may replace it (never half-built)
        if last is not None and last[0] == steps:
            return last[1]
        strategy = self.strategy
        if isinstance(strategy, ToeplitzStrategy):
            prefix = toeplitz_strategy(strategy.coefficients, steps)
        else:
            prefix = np.asarray(strategy)[:steps, :steps]
        reduction = self._reduction(prefix, steps, self.bands)
        self._last = (steps, reduction)
        return reduction

    def epsilon_bounds(self, delta: float) -> Bounds:
        """Certified bounds on epsilon at ``delta`` after the steps recorded so far.

        Parameters
        ----------
        delta : float
            In ``[0, 1]``.

        Returns
        -------
        Bounds
            ``(lower, upper)``.

        Raises
        ------
        ValueError
            If ``delta`` is out of range or no step has been recorded.
        """
        return self.reduction().epsilon_bounds(delta, accuracy=self.accuracy)

    def epsilon(self, delta: float) -> float:
        """Certified upper bound on epsilon at ``delta`` (see :meth:`epsilon_bounds`).

        Parameters
        ----------
        delta : float
            In ``[0, 1]``.

        Returns
        -------
        float
            The upper bound.

        Raises
        ------
        ValueError
            If ``delta`` is out of range or no step has been recorded.
        """
        return float(self.epsilon_bounds(delta).upper)

    def delta_bounds(self, epsilon: float) -> Bounds:
        """Certified bounds on delta at ``epsilon`` after the steps recorded so far.

        Parameters
        ----------
        epsilon : float
            At least 0.

        Returns
        -------
        Bounds
            ``(lower, upper)``.

        Raises
        ------
        ValueError
            If ``epsilon`` is out of range or no step has been recorded.
        """
        return self.reduction().delta_bounds(epsilon, accuracy=self.accuracy)

    def state_dict(self) -> dict[str, Any]:
        """The run's state for a checkpoint: the steps recorded.

        The strategy and options are the caller's configuration, as a model's architecture is.

        Returns
        -------
        dict
            ``{"steps": t}``.
        """
        return {"steps": self.steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict`.

        Parameters
        ----------
        state : dict
            ``{"steps": t}``, ``t`` between 0 and the strategy's size.

        Raises
        ------
        ValueError
            If ``state`` has no valid ``steps`` (nothing is changed).
        TypeError
            If ``state`` is not a dict.
        """
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict from state_dict(), got {type(state).__name__}")
        steps = state.get("steps")
        n = self.size
        if (not isinstance(steps, numbers.Integral) or isinstance(steps, bool)
                or not 0 <= steps <= n):
            raise ValueError(f"state['steps'] must be an integer in [0, {n}], got {steps!r}")
        self.steps = int(steps)
