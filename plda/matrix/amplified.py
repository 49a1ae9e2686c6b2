"""Banded matrix factorization with cyclic Poisson sampling, reduced exactly to DP-SGD.

Choquette-Choo et al. 2023, "(Amplified) banded matrix factorization": a ``b``-banded
strategy run with cyclic Poisson sampling is as private as DP-SGD with ``ceil(n / b)`` steps
at noise multiplier ``sigma / max_j ||C e_j||``. The assumptions on the training loop and the
proof: ``docs/howto/dp-ftrl.md``.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from plda._internal.validation import positive_float, probability
from plda.matrix.reductions import MatrixReduction
from plda.matrix.strategies import check_strategy, norms_of
from plda.mechanisms import Gaussian, PoissonSampled
from plda.pld import PrivacyLossDistribution

__all__ = ["CyclicPoissonBandMF"]


@dataclass(frozen=True, eq=False)
class CyclicPoissonBandMF(MatrixReduction):
    """BandMF with cyclic Poisson sampling: exactly DP-SGD with ``ceil(n / b)`` steps.

    The data are split once into ``b`` parts; step ``i`` Poisson-samples part ``i mod b`` at
    rate ``q`` and releases row ``i`` of ``C x + sigma z``, ``C`` lower-triangular with
    ``C[i, j] = 0`` for ``i - j >= b``. A record then takes part (with probability ``q``
    each) in the steps ``j, j + b, ...`` of its part, whose columns of ``C`` touch disjoint
    rows, so its privacy loss is the composition of ``PoissonSampled(Gaussian(sigma /
    ||C e_i||), q)`` over those steps (Choquette-Choo et al. 2023, "(Amplified) banded matrix
    factorization"). :meth:`pld` is DP-SGD at the largest column norm for ``ceil(n / b)``
    steps, ``PoissonSampled(Gaussian(sigma=noise_multiplier / max_norm), sample_rate)``
    composed :attr:`rounds` times: a certified upper bound, and exact (:attr:`exact`) when
    some part with ``ceil(n / b)`` steps has every column at the largest norm (columns
    normalized, the usual BandMF). Otherwise :meth:`lower_pld` is the realized composition
    of a full part at its smallest column norm (:attr:`realized_norm`).

    Parameters
    ----------
    strategy : array_like or ToeplitzStrategy
        ``C``: a square lower-triangular array, Toeplitz coefficients or a
        :class:`~plda.matrix.ToeplitzStrategy`.
    noise_multiplier : float
        ``sigma``, the noise's standard deviation over the clipping norm, positive.
    sample_rate : float
        ``q``, the Poisson rate within a part, in ``(0, 1]``.
    bands : int, optional
        ``b``, the number of parts; by default the strategy's number of non-zero diagonals.
        At least that number (a ``b``-banded ``C`` is ``b'``-banded for ``b' >= b``) and at
        most ``n``.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``strategy`` is not square lower-triangular (or holds NaN or infinities),
        ``noise_multiplier`` is not positive and finite, ``sample_rate`` is outside
        ``(0, 1]``, or ``bands`` is below the strategy's bands or above ``n``.

    Examples
    --------
    >>> import numpy as np
    >>> import plda.matrix as pm
    >>> band = pm.CyclicPoissonBandMF(pm.toeplitz_strategy([1.0, 0.5], 10), 1.0, 0.1)
    >>> band.bands, band.rounds, band.exact
    (2, 5, True)
    """

    strategy: object
    noise_multiplier: float
    sample_rate: float
    bands: int | None = None
    _norms: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        checked = check_strategy(self.strategy, causal=True)
        sigma = positive_float("noise_multiplier", self.noise_multiplier)
        rate = probability("sample_rate", self.sample_rate, open_low=True)
        bands = checked.bands if self.bands is None else self.bands
        if isinstance(bands, bool) or not isinstance(bands, numbers.Integral):
            raise TypeError(f"bands must be an integer in [{checked.bands}, {checked.steps}], "
                            f"got {bands!r}")
        if not checked.bands <= bands <= checked.steps:
            raise ValueError(
                f"bands must be an integer in [{checked.bands}, {checked.steps}] (the "
                f"strategy's non-zero diagonals up to its steps), got {bands!r}"
            )
        norms = norms_of(checked)
        if not np.max(norms) > 0:
            raise ValueError("strategy must have a non-zero column")
        object.__setattr__(self, "noise_multiplier", sigma)
        object.__setattr__(self, "sample_rate", rate)
        object.__setattr__(self, "bands", int(bands))
        object.__setattr__(self, "_norms", norms)
        _ = self.step  # the DP-SGD step's own checks (its noise over the norm in plda's range)

    @property
    def steps(self) -> int:
        """``n``, the steps of the strategy."""
        return self._norms.size

    @property
    def rounds(self) -> int:
        """``ceil(n / b)``: the most steps one record can take part in."""
        return -(-self.steps // self.bands)

    @property
    def max_column_norm(self) -> float:
        """``max_j ||C e_j||``, the single-participation sensitivity."""
        return float(np.max(self._norms))

    @property
    def dp_sgd_noise_multiplier(self) -> float:
        """``noise_multiplier / max_column_norm``: the DP-SGD noise the run is worth."""
        return self.noise_multiplier / self.max_column_norm

    @property
    def step(self) -> PoissonSampled:
        """One DP-SGD step: ``PoissonSampled(Gaussian(dp_sgd_noise_multiplier), q)``."""
        return PoissonSampled(Gaussian(sigma=self.dp_sgd_noise_multiplier),
                              sample_rate=self.sample_rate)

    def _full_parts(self) -> range:
        """The parts ``j`` with ``rounds`` steps (``j + (rounds - 1) b < n``)."""
        return range(0, self.steps - (self.rounds - 1) * self.bands)

    @property
    def exact(self) -> bool:
        """Whether :meth:`pld` is exact (both bounds hold).

        True when some part with :attr:`rounds` steps has all its columns at the largest norm.
        """
        top = np.max(self._norms)
        return any(bool(np.all(self._norms[j :: self.bands] == top))
                   for j in self._full_parts())

    def _build(self, which, relation, accuracy):
        if which == "upper":
            return PrivacyLossDistribution.from_mechanism(
                self.step, self.rounds, relation=relation, accuracy=accuracy)
        # a realized pair: a full part's record, each step at the part's smallest column norm
        # (a smaller sensitivity is a post-processing of the larger one: see the docs)
        norm = self.realized_norm
        step = PoissonSampled(Gaussian(sigma=self.noise_multiplier, sensitivity=norm),
                              sample_rate=self.sample_rate)
        return PrivacyLossDistribution.from_mechanism(step, self.rounds, relation=relation,
                                                      accuracy=accuracy)

    @property
    def realized_norm(self) -> float:
        """The column norm of the realized pair behind :meth:`lower_pld`.

        The largest, over the parts with :attr:`rounds` steps, of the part's smallest column
        norm: :meth:`lower_pld` composes ``PoissonSampled(Gaussian(noise_multiplier,
        realized_norm), q)`` :attr:`rounds` times.
        """
        return max(float(np.min(self._norms[j :: self.bands])) for j in self._full_parts())

    def __repr__(self) -> str:
        return (f"CyclicPoissonBandMF(steps={self.steps}, bands={self.bands}, "
                f"noise_multiplier={self.noise_multiplier!r}, "
                f"sample_rate={self.sample_rate!r}, rounds={self.rounds}, "
                f"max_column_norm={self.max_column_norm!r})")

