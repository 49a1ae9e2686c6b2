"""DP-SGD steps on one-pass loaders (shuffled or in order), accounted epoch by epoch.

A loader that puts every record in exactly one batch per pass runs a :class:`~plda.Shuffled`
epoch per pass, not Poisson subsampling. :class:`OnePassEpochs` records each pass under
replace-one (the only relation under which a chunked permutation has a sound analysis), with
the smallest noise of the epoch above and the largest below. Why both hold:
``docs/howto/opacus-and-dp-accounting.md`` ("Why one-pass epochs are certified").
"""

from __future__ import annotations

import warnings

from plda._internal import validation as check
from plda._internal.errors import check_bracket
from plda.accounting.accountant import PLDAccountant
from plda.epochs import Shuffled
from plda.mechanisms import Gaussian, NotTightWarning
from plda.pld import Bounds

__all__ = ["OnePassEpochs"]

RELATION = "replace_one"


class OnePassEpochs:
    """Steps of DP-SGD on a one-pass loader of ``num_batches`` batches per epoch.

    Upper bound: each epoch as ``Shuffled(Gaussian(min sigma), m)`` (``m`` steps; an
    unfinished epoch counts as a whole one). Lower bound: the finished epochs'
    ``Shuffled(Gaussian(max sigma), m).lower_bound_mechanism()``.

    Parameters
    ----------
    num_batches : int
        Batches per pass over the data (``len(loader)``), an integer ``>= 1``.
    accuracy : float
        As for :class:`~plda.PLDAccountant`.

    Raises
    ------
    TypeError
        If ``num_batches`` is not a number.
    ValueError
        If ``num_batches`` is not an integer ``>= 1``.
    """

    def __init__(self, num_batches: int, accuracy: float):
        self.num_batches = check.count("num_batches", num_batches, minimum=1)
        self.upper = PLDAccountant(relation=RELATION, accuracy=accuracy)
        self.lower = PLDAccountant(relation=RELATION, accuracy=accuracy)
        self.pending: list[float] = []  # noise multipliers of the unfinished epoch's steps
        self.batches = 0  # batches the unfinished epoch has used
        self.steps = 0

    def step(self, noise_multiplier: float, batches: int = 1) -> None:
        """Record one optimizer step that used ``batches`` batches (gradient accumulation).

        Parameters
        ----------
        noise_multiplier : float
            The step's noise ``sigma``, in ``(0, inf)``.
        batches : int, optional
            Batches whose clipped gradients the step summed.

        Raises
        ------
        TypeError
            If an argument is not a number (nothing is recorded).
        ValueError
            If the step would run past the end of the epoch (its batches would come from two
            passes, which the analysis does not cover), or an argument is out of range;
            nothing is recorded.
        """
        sigma = check.positive_float("noise_multiplier", noise_multiplier)
        batches = check.count("batches", batches, minimum=1)
        if self.batches + batches > self.num_batches:
            raise ValueError(
                f"a step of {batches} batches runs past the end of the epoch ({self.batches} of "
                f"{self.num_batches} batches used): shuffled accounting needs each step's "
                "batches from one pass; accumulate gradients over a divisor of len(loader)"
            )
        self.pending.append(sigma)
        self.batches += batches
        self.steps += 1
        if self.batches == self.num_batches:
            upper, lower = self._epoch(self.pending)
            self.upper.compose(upper)
            self.lower.compose(lower)
            self.pending, self.batches = [], 0

    @staticmethod
    def _epoch(sigmas: list[float]):
        """``(upper, lower)`` mechanisms of an epoch whose steps had noise ``sigmas``."""
        upper = Shuffled(Gaussian(sigma=min(sigmas)), num_steps=len(sigmas))
        lower = Shuffled(Gaussian(sigma=max(sigmas)), num_steps=len(sigmas))
        return upper, lower.lower_bound_mechanism()

    def _upper_accountant(self) -> PLDAccountant:
        if not self.pending:
            return self.upper
        with_partial = PLDAccountant.from_state_dict(self.upper.state_dict())
        with_partial.compose(self._epoch(self.pending)[0])
        return with_partial

    def __len__(self) -> int:
        """Number of recorded training steps (optimizer steps, the unfinished epoch's too)."""
        return self.steps

    def epsilon(self, delta: float) -> float:
        """Certified upper bound on epsilon at ``delta``.

        Parameters
        ----------
        delta : float
            The delta, in ``[0, 1]``.

        Returns
        -------
        float
            The epsilon, the unfinished epoch counted as a whole one; 0 before the first step.
        """
        if not self.steps:
            return 0.0
        with warnings.catch_warnings():
            # about the upper accountant's own lower end, which is not what is reported
            warnings.simplefilter("ignore", NotTightWarning)
            return float(self._upper_accountant().epsilon(delta))

    def epsilon_bounds(self, delta: float) -> Bounds:
        """Certified lower and upper bounds on epsilon at ``delta``.

        Parameters
        ----------
        delta : float
            The delta, in ``[0, 1]``.

        Returns
        -------
        Bounds
            ``Bounds(lower=..., upper=...)``; the lower bound leaves the unfinished epoch out.
        """
        upper = self.epsilon(delta)
        lower = float(self.lower.epsilon_bounds(delta).lower) if len(self.lower) else 0.0
        check_bracket(lower, upper, query="epsilon_bounds")
        return Bounds(lower=lower, upper=upper)

    def history(self) -> list[tuple[float, float, int]]:
        """The steps as Opacus-style triples.

        Returns
        -------
        list of (float, float, int)
            ``[(noise_multiplier, sample_rate, steps), ...]``, ``sample_rate`` the fraction of
            an epoch's batches per step.
        """
        out = []
        for mechanism, count in self.upper.history:
            steps = mechanism.num_steps
            out.append((mechanism.mechanism.sigma, 1.0 / steps, count * steps))
        out += [(sigma, 1.0 / self.num_batches, 1) for sigma in self.pending]
        return out

    def state_dict(self) -> dict:
        """The state as a JSON-serializable dict (for :meth:`from_state_dict`).

        Returns
        -------
        dict
            ``num_batches``, the unfinished epoch (``pending``, ``batches``), ``steps`` and
            both accountants' states.
        """
        return {
            "num_batches": self.num_batches,
            "pending": list(self.pending),
            "batches": self.batches,
            "steps": self.steps,
            "upper": self.upper.state_dict(),
            "lower": self.lower.state_dict(),
        }

    @classmethod
    def from_state_dict(cls, state) -> OnePassEpochs:
        """The epochs saved by :meth:`state_dict`.

        Parameters
        ----------
        state : dict
            A saved state.

        Returns
        -------
        OnePassEpochs
            The epochs as saved.

        Raises
        ------
        ValueError
            If ``state`` is corrupted, or not accounted under replace-one.
        """
        keys = {"num_batches", "pending", "batches", "steps", "upper", "lower"}
        if not isinstance(state, dict) or set(state) != keys:
            raise ValueError(f"one-pass epoch state must be a dict with keys {sorted(keys)}")
        upper = PLDAccountant.from_state_dict(state["upper"])
        lower = PLDAccountant.from_state_dict(state["lower"])
        if upper.relation != RELATION or lower.relation != RELATION:
            raise ValueError("one-pass epoch state must be accounted under replace_one")
        try:
            out = cls(state["num_batches"], upper.accuracy)
            pending = [check.positive_float("pending", s) for s in state["pending"]]
            batches = check.count("batches", state["batches"], maximum=out.num_batches - 1)
            steps = check.count("steps", state["steps"])
        except TypeError as error:
            raise ValueError(f"one-pass epoch state: {error}") from None
        if len(pending) > batches or (batches and not pending):
            raise ValueError("one-pass epoch state: pending steps and batches disagree")
        out.upper, out.lower = upper, lower
        out.pending, out.batches, out.steps = pending, batches, steps
        return out
