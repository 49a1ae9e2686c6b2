"""Hyperparameter tuning by random stopping: the best of a random number of runs (Papernot &
Steinke 2022), as a composable step certified from the base run's certified Rényi curve and
from its certified privacy profile (Koskela, Redberg & Wang 2024)."""

from __future__ import annotations

import dataclasses
import math
import numbers
import sys
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq

from plda._internal.errors import AccuracyWarning
from plda._internal.validation import positive_float
from plda.mechanisms import GaussianDP, Mechanism, PrivacyProfile, RenyiDP
from plda.pld import PrivacyLossDistribution
from plda.selection.profile_bound import RunCountLaw, profile_delta_bound

__all__ = [
    "DISTRIBUTIONS",
    "ORDERS",
    "RepeatAndSelect",
    "truncated_negative_binomial_gamma",
    "truncated_negative_binomial_mean",
    "truncated_negative_binomial_means",
]

#: the laws of the number of runs ``K``
DISTRIBUTIONS = ("truncated_negative_binomial", "geometric", "logarithmic", "poisson")
#: the Rényi orders of the certified curve (and of the auxiliary order of the TNB bound)
#: (steps of 0.1 up to 11, then integers to 64, then 128 to 1024: the density RDP accountants
#: use, so the conversion to (epsilon, delta) loses no more than theirs)
ORDERS = (*(round(1 + x / 10, 1) for x in range(1, 101)), *map(float, range(12, 65)),
          128.0, 256.0, 512.0, 1024.0)
#: the profile bound from the base's profile: the base's accuracy (its certified upper delta,
#: a little looser than at the default accuracy and much cheaper), the delta down to which
#: the base's profile is read, its grid points, and the grid points of the selection's bound
PROFILE_ACCURACY = 0.1
PROFILE_DELTA_FLOOR = 1e-30
PROFILE_BASE_POINTS = 2001
PROFILE_POINTS = 4001
#: the ``gamma`` the truncated negative binomial's mean is solved for: a mean outside what this
#: range gives (shapes near -1 reach a mean of 10 only at ``gamma ~ 1e-1000``) is refused
GAMMA_RANGE = (1e-15, 1.0 - 1e-15)


def truncated_negative_binomial_mean(gamma: float, eta: float) -> float:
    """``E[K]`` of the truncated negative binomial law ``D_{eta, gamma}`` (``K >= 1``).

    Parameters
    ----------
    gamma : float
        In (0, 1).
    eta : float
        The shape, above -1 (1: geometric; 0: logarithmic).

    Returns
    -------
    float
        ``eta (1 - gamma) / (gamma (1 - gamma^eta))``, or ``(1/gamma - 1) / log(1/gamma)`` at
        ``eta = 0``.
    """
    x = eta * math.log(gamma)
    if abs(x) < sys.float_info.min:
        # the logarithmic law (eta = 0), and its limit where eta log(gamma) underflows (eta =
        # 1e-310 divided by 0): the relative difference, |x| / 2, is below the last digit
        return (1.0 / gamma - 1.0) / math.log(1.0 / gamma)
    # eta (1 - gamma) / (gamma (1 - gamma^eta)), with 1 - gamma^eta = -expm1(eta log gamma)
    return eta * (1.0 - gamma) / (gamma * -math.expm1(x))


def _means_text(low: float, high: float) -> str:
    return f"(1, {high!r}]" if low <= 1.0 else f"[{low!r}, {high!r}]"


def truncated_negative_binomial_means(eta: float) -> tuple[float, float]:
    """The range of means the truncated negative binomial of shape ``eta`` takes.

    Its ``gamma`` is solved in :data:`GAMMA_RANGE`; the mean falls as ``gamma`` grows.

    Parameters
    ----------
    eta : float
        The shape, above -1.

    Returns
    -------
    tuple of float
        ``(low, high)``: the means at the top and at the bottom of the range of ``gamma``.
    """
    return (truncated_negative_binomial_mean(GAMMA_RANGE[1], eta),
            truncated_negative_binomial_mean(GAMMA_RANGE[0], eta))


def truncated_negative_binomial_gamma(mean: float, eta: float) -> float:
    """The ``gamma`` of the truncated negative binomial law with this mean and shape.

    Parameters
    ----------
    mean : float
        ``E[K]``, above 1.
    eta : float
        The shape, above -1 (1: geometric; 0: logarithmic).

    Returns
    -------
    float
        ``gamma`` in (0, 1) with ``E[K] = mean`` (the mean falls as ``gamma`` grows).

    Raises
    ------
    ValueError
        If ``mean <= 1``, ``eta <= -1`` or not finite, or ``mean`` outside the means
        :func:`truncated_negative_binomial_means` gives (``gamma`` outside
        :data:`GAMMA_RANGE`).
    """
    if not mean > 1.0:
        raise ValueError(f"mean must be above 1 for a truncated negative binomial, got {mean!r}")
    if not (eta > -1.0 and math.isfinite(eta)):
        raise ValueError(f"shape must be a finite number above -1, got {eta!r}")
    low, high = truncated_negative_binomial_means(eta)
    if not low <= mean <= high:
        raise ValueError(
            f"mean must be in {_means_text(low, high)} for a truncated negative binomial of "
            f"shape {eta!r} (gamma in [{GAMMA_RANGE[0]:g}, 1 - {GAMMA_RANGE[0]:g}]), got "
            f"{mean!r}"
        )
    return float(brentq(lambda g: truncated_negative_binomial_mean(g, eta) - mean,
                        *GAMMA_RANGE, xtol=1e-300, rtol=1e-14))


@dataclass(frozen=True, eq=False)
class RepeatAndSelect(Mechanism):
    r"""Run ``base`` a random number ``K`` of times and release the best run (by any score).

    The Rényi curve of the selection follows from the base's *certified* Rényi curve
    ``eps(lambda)`` (Papernot & Steinke 2022; read from plda's certified upper bounds at
    :data:`ORDERS`):

    - truncated negative binomial ``K ~ D_{eta, gamma}`` (``shape = eta``; geometric
      ``eta = 1``, logarithmic ``eta = 0``), Thm. 2: ``eps'(lambda) = eps(lambda) +
      (1 + eta)(1 - 1/l) eps(l) + (1 + eta) log(1/gamma) / l + log(E[K]) / (lambda - 1)``,
      minimized over the auxiliary order ``l >= 1``;
    - Poisson ``K`` of mean ``mu``, Thm. 6: ``eps'(lambda) = eps(lambda) + mu delta +
      log(mu) / (lambda - 1)``, with ``delta`` the base's certified ``delta`` at
      ``log(1 + 1/(lambda - 1))``;
    - a base that is ``eps0``-DP (no loss above ``eps0``) run with geometric stopping is also
      ``3 eps0``-DP (Liu & Talwar 2019), so ``eps'(lambda) <= min(3 eps0, lambda (3 eps0)^2 / 2)``.

    The step is accounted through a :class:`~plda.PrivacyProfile` (its tightest pair), so it
    composes with every other mechanism: at each epsilon the smaller of two certified upper
    bounds on the same profile, the curve's converted profile and the bound from the base's
    certified privacy profile (:func:`~plda.selection.profile_bound.profile_delta_bound`,
    after Koskela, Redberg & Wang 2024: ``delta(eps) <= E[K] sum_k (rho(a_{k-1}) -
    rho(a_k)) min(a_k, delta_base(eps - C_k))``). The curve itself is
    :attr:`renyi_guarantee`, read by Rényi accounting of a composition; a base with a mass at
    infinite loss (an ``(epsilon, delta > 0)`` step) has no finite curve, and its selection is
    bounded from its profile alone (``renyi_guarantee`` is None).

    Lower bound: with ``K >= 1`` (every law but Poisson) a score that always prefers the
    first run releases that run, so the base's own realized runs are realized here; with
    Poisson stopping, none is claimed (0).

    Parameters
    ----------
    base : Mechanism or PrivacyLossDistribution
        One run: a mechanism, or a composition (a whole training run).
    mean : float
        ``E[K]``, the mean number of runs, at least 1; for the truncated negative binomial
        laws at most the mean of ``gamma = 1e-15`` (``1e15`` geometric, ``2.9e13``
        logarithmic, ever less as ``shape`` nears -1:
        :func:`truncated_negative_binomial_means`).
    distribution : str, optional
        One of :data:`DISTRIBUTIONS` (default the truncated negative binomial).
    shape : float, optional
        ``eta`` of the truncated negative binomial, above -1 (default 1, the geometric law);
        ignored by the other laws.
    relation : str, optional
        The relation the base's Rényi curve is computed under, for a mechanism base (a
        composition carries its own).

    Raises
    ------
    TypeError
        If ``base`` is neither a mechanism nor a composition, or a number is not real.
    ValueError
        If ``distribution`` is unknown, ``mean`` or ``shape`` is out of range, or the
        selection's curve or profile passes epsilon 1e150 (a ``base`` near that cap).
    """

    base: object
    mean: float
    distribution: str = "truncated_negative_binomial"
    shape: float = 1.0
    relation: str = "add_remove"
    tight = False
    guarantee: RenyiDP | PrivacyProfile | None = field(default=None, init=False, repr=False)
    renyi_guarantee: RenyiDP | None = field(default=None, init=False, repr=False)

    @property
    def stated_currency(self) -> str | None:
        """``"renyi"`` once the step carries its Rényi guarantee (read by the conversions)."""
        return "renyi" if isinstance(self.renyi_guarantee, RenyiDP) else None

    def __post_init__(self):
        if not isinstance(self.base, (Mechanism, PrivacyLossDistribution)):
            raise TypeError("base must be a plda mechanism or a PrivacyLossDistribution, got "
                            f"{type(self.base).__name__}")
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, got "
                             f"{self.distribution!r}")
        mean = positive_float("mean", self.mean)
        if not mean >= 1.0:
            raise ValueError(f"mean must be at least 1 (the mean number of runs), got "
                             f"{self.mean!r}")
        if isinstance(self.shape, bool) or not isinstance(self.shape, numbers.Real):
            raise TypeError(f"shape must be a real number, got {type(self.shape).__name__}")
        eta = {"geometric": 1.0, "logarithmic": 0.0, "poisson": 1.0}.get(
            self.distribution, float(self.shape))  # the shape is the TNB's only
        if not eta > -1.0 or not math.isfinite(eta):
            raise ValueError(f"shape must be a finite number above -1, got {self.shape!r}")
        if mean > 1.0 and self.distribution != "poisson":  # before any work on the base
            low, high = truncated_negative_binomial_means(eta)
            if not low <= mean <= high:
                shape = f" with shape {eta!r}" if self.distribution == DISTRIBUTIONS[0] else ""
                raise ValueError(
                    f"mean must be 1 or in {_means_text(low, high)} for distribution="
                    f"{self.distribution!r}{shape} (its gamma in [{GAMMA_RANGE[0]:g}, 1 - "
                    f"{GAMMA_RANGE[0]:g}]), got {self.mean!r}"
                )
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "shape", eta)
        try:
            self._state_guarantees()
        except ValueError as exc:  # a curve or profile past what RenyiDP / PrivacyProfile state
            raise ValueError("base: the selection's Renyi curve or privacy profile passes "
                             f"epsilon 1e150, the largest plda states ({exc})") from exc

    def _state_guarantees(self) -> None:
        curve, pure = self._renyi_curve()
        # a base with a mass at infinite loss ((epsilon, delta > 0)-DP) has no finite Rényi
        # divergence: the orders where the curve is infinite say nothing (each order holds on
        # its own), and with none left the bound comes from the base's profile alone
        finite = [(a, c) for a, c in zip(ORDERS, curve, strict=True) if math.isfinite(c)]
        renyi = RenyiDP(*zip(*finite, strict=True)) if finite else None
        # read by the Rényi accounting of a composition holding this step (plda.conversions)
        object.__setattr__(self, "renyi_guarantee", renyi)
        # two certified upper bounds on the same profile, the Rényi one and the one from the
        # base's profile (Koskela, Redberg & Wang 2024): their pointwise minimum is one too
        eps, deltas = self._combined_profile(renyi)
        if pure is not None:  # and (pure, 0) beside them (Liu & Talwar)
            keep = eps < pure
            eps, deltas = np.append(eps[keep], pure), np.append(deltas[keep], 0.0)
        object.__setattr__(self, "guarantee", PrivacyProfile(tuple(eps), tuple(deltas)))

    # ------------------------------------------------------------------ the bound
    def _base_pld(self) -> PrivacyLossDistribution:
        if isinstance(self.base, PrivacyLossDistribution):
            return self.base
        return PrivacyLossDistribution.from_mechanism(self.base, relation=self.relation)

    def _renyi_curve(self) -> tuple[tuple[float, ...], float | None]:
        pld = self._base_pld()
        orders = np.array(ORDERS)
        eps = np.asarray(pld.renyi_bounds(orders).upper, dtype=float)  # certified, per order
        if self.distribution == "poisson":
            mu = self.mean
            # the largest e^eps_hat the theorem allows, so the smallest certified delta
            eps_hat = np.log1p(1.0 / (orders - 1.0))
            delta_hat = np.asarray(pld.delta(eps_hat), dtype=float)
            curve = eps + mu * delta_hat + math.log(mu) / (orders - 1.0)
        elif self.mean == 1.0:  # one run: the base itself
            curve = eps.copy()
        else:
            eta = self.shape
            gamma = truncated_negative_binomial_gamma(self.mean, eta)
            expected = truncated_negative_binomial_mean(gamma, eta)
            # the auxiliary order l: 1 (its term vanishes) or any order of the curve
            aux = np.concatenate([[0.0], (1.0 - 1.0 / orders) * eps + math.log(1 / gamma) / orders])
            aux[0] = math.log(1.0 / gamma)  # l = 1: (1 + eta) log(1/gamma)
            best = (1.0 + eta) * float(np.min(aux))
            # log E[K] rounded up a little: E[K] came from a root-finder
            curve = eps + best + math.log(expected * (1 + 1e-12)) / (orders - 1.0)
        cap = None
        if self.distribution == "geometric":
            pure = self._pure_epsilon(pld)
            if pure is not None:
                # Liu & Talwar 2019: geometric stopping of an eps0-DP base is 3 eps0-DP, so
                # D_lambda <= min(3 eps0, lambda (3 eps0)^2 / 2) (Bun & Steinke 2016)
                cap = float(np.nextafter(3.0 * pure, np.inf))
                curve = np.minimum(curve, np.minimum(cap, orders * cap * cap / 2.0))
        # D_lambda does not decrease with lambda, so a bound at a higher order holds at every
        # lower one: the running minimum from the right (it matters where log(E[K])/(lambda-1)
        # is large)
        curve = np.minimum.accumulate(curve[::-1])[::-1]
        # every entry rounded up: the curve is a bound
        return tuple(float(np.nextafter(c, np.inf)) for c in curve), cap

    def _combined_profile(self, renyi: RenyiDP | None) -> tuple[np.ndarray, np.ndarray]:
        """The pointwise minimum of the Rényi curve's profile and :func:`profile_delta_bound`.

        On the union of the two epsilon grids; each bound is read between its own points as
        a step function from the safe side (``delta`` never grows with ``epsilon``: the value
        at the nearest point below holds), so every merged point is a valid guarantee."""
        # no Rényi curve: a profile of (0, 1) alone, which the base's profile bound undercuts
        r_eps, r_delta = renyi.profile() if renyi is not None else (np.zeros(1), np.ones(1))
        pld = self._base_pld()
        # the base's certified profile, on a grid to where its delta is negligible. At a
        # coarser accuracy than the default: its upper bound stays certified, only a little
        # looser (2e-4 in the selection's epsilon(1e-6) on the benchmark's DP-SGD run), and
        # the query costs 0.2 s instead of 5 (certifying deltas near 1e-30 at 1e-3 is dear)
        coarse = pld.with_accuracy(PROFILE_ACCURACY)
        with warnings.catch_warnings():  # a wide bracket far out in the tail is expected
            warnings.simplefilter("ignore", AccuracyWarning)
            top = float(coarse.epsilon(PROFILE_DELTA_FLOOR))
            floor = float(coarse.delta(math.inf))  # the base's mass at infinite loss
            if not math.isfinite(top) and 0.0 < floor < 1.0:
                # its delta never falls below that mass: the grid stops just above it (past
                # its end the value at the last point holds, delta being non-increasing)
                top = float(coarse.epsilon(min(1.0, floor * (1 + 1e-6) + PROFILE_DELTA_FLOOR)))
        if not math.isfinite(top) or top <= 0.0:  # no finite profile: the Rényi side only
            return r_eps, r_delta
        base_eps = np.linspace(0.0, top, PROFILE_BASE_POINTS)
        # the profile is read on a grid pinned at a quarter of the step that query refined to
        # (a query never starts from where the last one ended, so it is pinned here): on the
        # benchmark's run the selection's epsilon(1e-6) is 3.0718 instead of about 3.075 on the
        # delta query's own grid, for 0.3 s more
        coarse = dataclasses.replace(coarse, step=coarse.grid_step / 4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AccuracyWarning)
            base_delta = np.asarray(coarse.delta(base_eps), dtype=float)
        if self.distribution == "poisson":
            law = RunCountLaw("poisson", self.mean)
        elif self.mean == 1.0:  # one run: the base's own profile
            law = None
        else:
            gamma = truncated_negative_binomial_gamma(self.mean, self.shape)
            law = RunCountLaw("truncated_negative_binomial",
                              truncated_negative_binomial_mean(gamma, self.shape), self.shape,
                              gamma)
        # past top + C_J (C_J <= log(rho(0) / rho(1))) the bound is flat: the grid stops there
        reach = 0.0 if law is None else float(law.log_ratio(0.0, 1.0))
        end = top + reach if renyi is None else min(top + reach, float(r_eps[-1]))
        ours_eps = np.linspace(0.0, end, PROFILE_POINTS)
        if law is None:
            ours = np.minimum.accumulate(base_delta)[
                np.searchsorted(base_eps, ours_eps, side="right") - 1]
        else:
            ours = profile_delta_bound(base_eps, base_delta, ours_eps, law)
        eps = np.union1d(r_eps, ours_eps)
        # each side at the merged points: its value at its nearest point at or below (1 where
        # it has none), then the minimum, then the running minimum (still valid, and the
        # profile must not grow)
        i = np.searchsorted(r_eps, eps, side="right") - 1
        from_renyi = np.where(i >= 0, r_delta[np.maximum(i, 0)], 1.0)
        j = np.searchsorted(ours_eps, eps, side="right") - 1
        from_ours = np.where(j >= 0, ours[np.maximum(j, 0)], 1.0)
        return eps, np.minimum.accumulate(np.minimum(from_renyi, from_ours))

    @staticmethod
    def _pure_epsilon(pld: PrivacyLossDistribution) -> float | None:
        """The base's certified pure epsilon, or None when it is not pure DP."""
        upper = float(pld.epsilon_bounds(0.0).upper)
        return upper if math.isfinite(upper) else None

    # ------------------------------------------------------------------ the mechanism
    def _remove_law(self):
        return self.guarantee.privacy_loss("remove")

    def _add_law(self):
        return self.guarantee.privacy_loss("add")

    def lower_bound_recipes(self, count: int) -> tuple:
        """Realized compositions of ``count`` selections.

        ``count`` runs of the base (a score that prefers the first run releases it), or
        nothing claimed under Poisson stopping.

        Parameters
        ----------
        count : int
            The number of selections.

        Returns
        -------
        tuple
            Recipes ``((mechanism, count), ...)`` in add/remove terms.
        """
        if self.distribution == "poisson":
            return (((GaussianDP(0.0), count),),)  # no loss: the trivial lower bound
        if isinstance(self.base, PrivacyLossDistribution):
            recipe = tuple((m.under_replace_one() if self.base.relation == "replace_one"
                            else m, k * count) for m, k in self.base.components)
            return (recipe,)
        base = self.base.under_replace_one() if self.relation == "replace_one" else self.base
        return (((base, count),),)

    def under_replace_one(self) -> Mechanism:
        """The selection with the base's Rényi curve under replace-one.

        Returns
        -------
        RepeatAndSelect
            For a mechanism base, the same selection of its replace-one reading; a
            composition base must itself be under replace-one.

        Raises
        ------
        ValueError
            If the base is a composition under add/remove, or has no replace-one reading.
        """
        if isinstance(self.base, PrivacyLossDistribution):
            if self.base.relation != "replace_one":
                raise ValueError("RepeatAndSelect of a composition under add_remove cannot be "
                                 "read under replace_one: build the base with "
                                 "relation='replace_one'")
            return self
        if self.relation == "replace_one":
            return self
        self.base.under_replace_one()  # refused with the base's reason
        return RepeatAndSelect(self.base, self.mean, self.distribution, self.shape,
                               relation="replace_one")

    def _coarsened(self) -> Mechanism:
        return self
