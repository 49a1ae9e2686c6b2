"""The doors to every query on a composition beyond ``epsilon`` and ``delta``: tradeoff curves,
membership-inference risk, Gaussian DP, Rényi DP and zCDP, each a thin call into the conversion
module that owns it. :class:`~plda.PrivacyLossDistribution` and :class:`~plda.PLDAccountant`
inherit them, so both answer each query under one name. The mathematics is in the docs
(``docs/tradeoff.md``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

import numpy as np

from plda._internal.errors import check_bracket, public_entries
from plda._internal.typing import ArrayLike, FloatArray, FloatOrArray
from plda.bounds import Bounds
from plda.conversions import gdp as gdp_conversion
from plda.conversions import profile as profile_conversion
from plda.conversions import renyi as renyi_conversion
from plda.conversions import tradeoff as tradeoff_conversion
from plda.conversions import zcdp as zcdp_conversion
from plda.conversions.gdp import GaussianDPSummary
from plda.conversions.profile import DELTA_FLOOR, ProfileSamples

if TYPE_CHECKING:
    from plda.conversions.composed import ComposedLaws

__all__ = ["CompositionQueries"]


@public_entries  # each public call issues each warning once, at the user's line
class CompositionQueries:
    """Queries on a composition answered from its composed grid laws and its steps.

    A class that inherits them provides ``composed_laws()`` (the composition as the conversions
    read it, :class:`~plda.conversions.composed.ComposedLaws`) and ``delta_bounds(epsilon)``
    (its certified privacy profile). Every answer is certified on the side that never
    under-reports privacy loss (the upper bound of a risk or a divergence, the lower bound of a
    tradeoff curve); a ``*_bounds`` variant adds the other side.
    """

    if TYPE_CHECKING:  # what the inheriting class provides

        def composed_laws(self) -> ComposedLaws: ...
        def delta_bounds(self, epsilon: ArrayLike) -> Bounds: ...

    # ------------------------------------------------------------ f-DP tradeoff curves
    @overload
    def tradeoff(self, alpha: float, *, direction: str | None = None) -> float: ...
    @overload
    def tradeoff(self, alpha: ArrayLike, *, direction: str | None = None) -> FloatArray: ...
    def tradeoff(self, alpha: ArrayLike, *, direction: str | None = None) -> FloatOrArray:
        """Certified lower bound on the f-DP tradeoff function ``f(alpha)``.

        ``f(alpha)`` is the smallest type-II error of any test at type-I error ``alpha`` (Dong,
        Roth & Su 2019, Def. 2.1).

        Parameters
        ----------
        alpha
            Type-I error(s) in ``[0, 1]`` (float or array).
        direction
            ``None`` (default): the add/remove curve ``conv(min(T_remove, T_add))``,
            symmetric. ``"remove"`` or ``"add"``: the tradeoff of that ordered pair alone.

        Returns
        -------
        float or numpy.ndarray
            ``beta <= f(alpha)``: the composition is ``f``-DP for this curve (convex,
            non-increasing, at most ``1 - alpha``). ``tradeoff_bounds(alpha).lower``.

        Raises
        ------
        ValueError
            If ``alpha`` is outside ``[0, 1]`` or NaN, or ``direction`` is not one of those.
        TypeError
            If ``alpha`` is not a number or an array of numbers.
        """
        return tradeoff_conversion.tradeoff(self.composed_laws(), alpha, direction=direction)

    def tradeoff_bounds(self, alpha: ArrayLike, *, direction: str | None = None) -> Bounds:
        """``(lower, upper)`` bounds on the tradeoff function ``f(alpha)``.

        Parameters
        ----------
        alpha
            Type-I error(s) in ``[0, 1]`` (float or array).
        direction
            As for :meth:`tradeoff`.

        Returns
        -------
        Bounds
            ``lower <= f(alpha) <= upper``: ``lower`` from the pessimistic grid laws (certified,
            :meth:`tradeoff`), ``upper`` from the optimistic ones.

        Raises
        ------
        ValueError
            If ``alpha`` is outside ``[0, 1]`` or NaN, or ``direction`` is not one of those.
        TypeError
            If ``alpha`` is not a number or an array of numbers.
        """
        return tradeoff_conversion.tradeoff_bounds(self.composed_laws(), alpha, direction=direction)

    # ------------------------------------------------------------ membership inference
    def true_positive_rate_bounds(self, false_positive_rate: ArrayLike) -> Bounds:
        """Bounds on the best membership-inference true-positive rate at a false-positive rate.

        ``TPR*(alpha) = 1 - f(alpha)``, both neighbouring directions covered (Kulynych et al.
        2024, Sec. 3).

        Parameters
        ----------
        false_positive_rate
            ``alpha`` in ``[0, 1]`` (float or array).

        Returns
        -------
        Bounds
            ``lower <= TPR*(alpha) <= upper``, both in ``[alpha, 1]``: ``upper`` is certified
            (no attack does better), ``lower`` is attained by the optimistic pair. ``1 - f`` is
            formed without cancellation, so small rates keep their relative accuracy.

        Raises
        ------
        ValueError
            If ``false_positive_rate`` is outside ``[0, 1]`` or NaN.
        TypeError
            If it is not a number or an array of numbers.

        Examples
        --------
        >>> import plda
        >>> step = plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.01)
        >>> pld = plda.PrivacyLossDistribution.from_mechanism(step, 100)
        >>> tpr = pld.true_positive_rate_bounds(1e-3)
        >>> 1e-3 <= tpr.lower <= tpr.upper < 0.01
        True
        """
        composed = self.composed_laws()
        return tradeoff_conversion.true_positive_rate_bounds(composed, false_positive_rate)

    def advantage_bounds(self) -> Bounds:
        """Bounds on the membership-inference advantage ``max_alpha (TPR - FPR)``.

        The advantage is ``max_alpha (1 - alpha - f(alpha)) = delta(0)``, the total variation
        distance of the output laws (Dong, Roth & Su 2019, Prop. 2.12 at ``eps = 0``), the
        larger of the two neighbouring directions; both bounds are clipped to ``[0, 1]``, the
        range of an advantage.

        Returns
        -------
        Bounds
            ``lower <= advantage <= upper`` (floats in ``[0, 1]``); ``upper`` is certified.

        Raises
        ------
        InvertedBracketError
            If the two bounds cross (a bug, never a result).

        Examples
        --------
        >>> import plda
        >>> pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=2.0))
        >>> adv = pld.advantage_bounds()  # exact: 2 Phi(1 / (2 sigma)) - 1 = 0.1974
        >>> adv.lower <= 0.19741265 <= adv.upper
        True
        """
        lower, upper = self.delta_bounds(0.0)
        upper = float(np.clip(upper, 0.0, 1.0))
        lower = float(np.clip(lower, 0.0, 1.0))
        check_bracket(lower, upper, query="advantage_bounds")
        return Bounds(lower=lower, upper=upper)

    def symmetric_profile(self, bound: str = "upper") -> ProfileSamples:
        """Samples of the privacy profile ``max(delta_remove, delta_add)`` on ``eps >= 0``.

        Parameters
        ----------
        bound
            ``"upper"``: certified upper bounds from the pessimistic grid law, with its
            Chernoff tail; ``"lower"``: certified lower bounds at every grid loss and crossing.

        Returns
        -------
        ProfileSamples
            The samples, ``eps`` ascending.

        Raises
        ------
        ValueError
            If ``bound`` is not ``"upper"`` or ``"lower"``.
        """
        return profile_conversion.symmetric_profile(self.composed_laws(), bound)

    # ------------------------------------------------------------------- Gaussian DP
    def gdp_mu(self, *, delta_floor: float = DELTA_FLOOR) -> float:
        """Smallest certified Gaussian-DP ``mu``: ``f >= G_mu`` down to ``delta_floor``.

        Certified through the profile: the composition is ``(eps, max(delta_mu(eps),
        delta_floor))``-DP for every ``eps >= 0`` (Dong, Roth & Su 2019, Cor. 2.13); exact
        (rounded up) for compositions of Gaussians. The default floor (1e-250) is as strict as
        floats allow, and the loose Chernoff tail then sets ``mu``; ``delta_floor=1e-9``
        certifies GDP where it matters (``docs/tradeoff.md``, "Gaussian DP").

        Parameters
        ----------
        delta_floor
            The profile level below which the comparison stops, in ``[1e-250, 1)``.

        Returns
        -------
        float
            The certified ``mu``; ``inf`` when none is certified (a mass at infinite privacy
            loss above the floor, or a profile that stays above it), with a
            :class:`~plda.GaussianDPWarning` saying which and what to pass instead.

        Raises
        ------
        ValueError
            If ``delta_floor`` is outside ``[1e-250, 1)``.

        Examples
        --------
        >>> import plda
        >>> step = plda.PoissonSampled(plda.Gaussian(sigma=1.1), sample_rate=256 / 60000)
        >>> pld = plda.PrivacyLossDistribution.from_mechanism(step, 2000)
        >>> round(pld.gdp_mu(delta_floor=1e-9), 3)
        0.244
        """
        return gdp_conversion.gdp_mu(self.composed_laws(), delta_floor=delta_floor)

    def gdp_summary(self, *, delta_floor: float = DELTA_FLOOR) -> GaussianDPSummary:
        """The Gaussian-DP reading of the composition: certified, refuted and best-fit ``mu``.

        The certified ``mu`` (:meth:`gdp_mu`), the ``mu`` below which Gaussian DP is refuted,
        and the best-fit ``mu`` (closest ``G_mu`` in the sup norm, an approximation, not a
        bound).

        Parameters
        ----------
        delta_floor
            As for :meth:`gdp_mu`.

        Returns
        -------
        GaussianDPSummary
            ``mu``, ``mu_lower``, ``best_fit``, ``max_deviation`` and ``delta_floor``.

        Raises
        ------
        ValueError
            If ``delta_floor`` is outside ``[1e-250, 1)``.
        """
        return gdp_conversion.gaussian_dp(self.composed_laws(), delta_floor=delta_floor)

    # ------------------------------------------------------------------- Rényi DP, zCDP
    @overload
    def renyi(self, order: float) -> float: ...
    @overload
    def renyi(self, order: ArrayLike) -> FloatArray: ...
    def renyi(self, order: ArrayLike) -> FloatOrArray:
        """Certified Rényi-DP curve ``eps_alpha`` of the composition at each order ``alpha > 1``.

        The composition is ``(alpha, eps_alpha)``-RDP (Mironov 2017), summed step by step,
        never read from the composed grid.

        Parameters
        ----------
        order
            Rényi order(s) ``alpha``, each finite and above 1 (float or array).

        Returns
        -------
        float or numpy.ndarray
            Upper bounds on ``eps_alpha``; ``inf`` where it is infinite (a mass at infinite
            loss, e.g. an ``(epsilon, delta > 0)`` step). ``renyi_bounds(order).upper``.

        Raises
        ------
        ValueError
            If an order is not finite or not above 1.
        TypeError
            If ``order`` is not a number or an array of numbers.
        """
        return renyi_conversion.renyi(self.composed_laws(), order)

    def renyi_bounds(self, order: ArrayLike) -> Bounds:
        """``(lower, upper)`` bounds on the Rényi-DP curve ``eps_alpha`` at ``order``.

        Parameters
        ----------
        order
            As for :meth:`renyi`.

        Returns
        -------
        Bounds
            ``lower <= eps_alpha <= upper`` (the lower one from realized pairs when a step is
            not ``tight``).

        Raises
        ------
        ValueError
            If an order is not finite or not above 1.
        TypeError
            If ``order`` is not a number or an array of numbers.
        """
        return renyi_conversion.renyi_bounds(self.composed_laws(), order)

    def renyi_epsilon(self, delta: ArrayLike, *, orders: ArrayLike | None = None) -> FloatOrArray:
        """Certified ``epsilon(delta)`` by RDP accounting, for comparison with :meth:`epsilon`.

        The certified Rényi curve converted to ``(epsilon, delta)`` (Canonne, Kamath & Steinke
        2020, Prop. 12): what an RDP accountant reports for the same composition.

        Parameters
        ----------
        delta
            Target(s) in ``[0, 1]``.
        orders
            The Rényi orders to minimize over (default: a geometric grid refined around its
            best order).

        Returns
        -------
        float or numpy.ndarray
            The smallest ``epsilon >= 0`` the curve certifies at each ``delta``.

        Raises
        ------
        ValueError
            If ``delta`` is outside ``[0, 1]`` or an order is not finite or not above 1.
        """
        return renyi_conversion.renyi_epsilon(self.composed_laws(), delta, orders=orders)

    def renyi_delta(self, epsilon: ArrayLike, *, orders: ArrayLike | None = None) -> FloatOrArray:
        """Certified ``delta(epsilon)`` by RDP accounting (see :meth:`renyi_epsilon`).

        Parameters
        ----------
        epsilon
            Value(s) in ``[0, inf]``.
        orders
            As for :meth:`renyi_epsilon`.

        Returns
        -------
        float or numpy.ndarray
            The smallest ``delta`` (at most 1) the curve certifies at each ``epsilon``.

        Raises
        ------
        ValueError
            If ``epsilon`` is negative or NaN, or an order is not finite or not above 1.
        """
        return renyi_conversion.renyi_delta(self.composed_laws(), epsilon, orders=orders)

    def zcdp(self) -> float:
        """Certified zCDP ``rho``: ``eps_alpha <= rho alpha`` for every ``alpha > 1``.

        Bun & Steinke 2016.

        Returns
        -------
        float
            ``zcdp_bounds().upper``; ``inf`` when no finite ``rho`` is known (e.g. an
            ``(epsilon, delta > 0)`` step).
        """
        return zcdp_conversion.zcdp(self.composed_laws())

    def zcdp_bounds(self) -> Bounds:
        """Bounds on the smallest zCDP ``rho`` with ``eps_alpha <= rho alpha`` for all ``alpha``.

        Returns
        -------
        Bounds
            ``upper``: the smaller of the per-step closed forms and a sandwich over a grid of
            orders; ``lower``: the largest ``eps_alpha / alpha`` on that grid.
        """
        return zcdp_conversion.zcdp_bounds(self.composed_laws())
