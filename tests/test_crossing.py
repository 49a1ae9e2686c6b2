"""The crossing search of a grid law's profile (plda.grid.crossing): one delta solved on the cut
where the profile crosses it, for untilted and tilted laws alike."""

from __future__ import annotations

import dataclasses
import math

import mpmath
import numpy as np
import pytest

import plda
from plda.discretization.discretize import discretize
from plda.engine.tilt import compose_tilted
from plda.grid.discrete import DiscreteLoss
from plda.testing import discrete_laplace_composition_epsilon, gaussian_epsilon

SIGMA, STEPS, TILT = 2.0, 16, 3.0
MU = math.sqrt(STEPS) / SIGMA


def _tilted(upper: bool) -> DiscreteLoss:
    """A Gaussian composition (mu = 2) tilted at order 3, near delta = 1e-12."""
    pair = discretize(plda.Gaussian(SIGMA).privacy_loss("remove"), 2.0**-8)
    return compose_tilted([(pair[0] if upper else pair[1], STEPS)], TILT)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("delta", [1e-4, 1e-8, 1e-12, 1e-16])
def test_one_tilted_delta_is_solved_as_the_full_profile_solves_it(upper, delta):
    law = _tilted(upper)
    one = float(law.epsilon(np.array(delta)))  # the crossing search
    # five deltas: the full segment arrays (on a fresh version, nothing remembered). The
    # lower version's lowest losses are swamped by its error terms (A_j ~ -6e3): the full
    # profile's monotone envelope once took them from the left and answered 0 at every delta
    full = float(dataclasses.replace(law).epsilon(np.full(5, delta))[0])
    assert one == pytest.approx(full, rel=1e-9, abs=1e-12)
    exact = gaussian_epsilon(delta, MU)
    assert (one >= exact) if upper else (one <= exact)
    assert abs(one - exact) <= 1e-3 * exact  # tight on both sides


def test_one_tilted_delta_reads_no_full_profile(monkeypatch):
    # a tilted law holds 1e5 entries or more: its full profile was most of a tiny-delta query
    law = _tilted(True)

    def refuse(self):
        raise AssertionError("the full profile was built")

    monkeypatch.setattr(DiscreteLoss, "_profile_segments", refuse)
    monkeypatch.setattr(DiscreteLoss, "_tail_mass_terms", refuse)
    assert float(law.epsilon(np.array(1e-12))) >= gaussian_epsilon(1e-12, MU)


@pytest.mark.parametrize("shift", [0.0, -600.0])
def test_tilted_weight_sums_bound_the_exact_sums(shift):
    # the geometric closed form is rounded up: never below the sums the error terms weigh. At
    # weights near e^-600 (deltas near 1e-200) the squares underflow: the root of their sum came
    # out 0 and the L2 error term vanished (Laplace(4) x 1000 at 1e-200: a lower bound 300
    # times the delta); the root is now w_j times the root of a geometric sum
    law = dataclasses.replace(_tilted(True), log_scale=_tilted(True).log_scale + shift)
    n = len(law.probs)
    mpmath.mp.dps = 40
    exact = [mpmath.exp(mpmath.mpf(law.log_scale) - mpmath.mpf(law.tilt)
                        * (law.offset + i) * mpmath.mpf(law.step)) for i in range(n)]
    cuts = (0, 1, n // 2, n - 1, n)
    arrays = law._tilt_weights(np.array(cuts))
    for k, j in enumerate(cuts):
        w, w_sum, w2_root = law._tilt_weights(j)
        total = mpmath.fsum(exact[j:])
        root = mpmath.sqrt(mpmath.fsum(x * x for x in exact[j:]))
        assert mpmath.mpf(w_sum) >= total and mpmath.mpf(w2_root) >= root
        assert w_sum <= float(total) * (1 + 1e-13) and w2_root <= float(root) * (1 + 1e-13)
        assert (w, w_sum, w2_root) == pytest.approx(tuple(a[k] for a in arrays), rel=1e-13)
        if j < n:
            assert w == pytest.approx(float(exact[j]), rel=1e-14) and w2_root > 0
        else:
            assert (w, w_sum, w2_root) == (0.0, 0.0, 0.0)


def test_a_swamped_tilted_lower_version_is_solved_on_its_full_profile():
    # 300 discrete Laplace runs tilted at order 4, far from delta = 1e-40's Chernoff order: the
    # lower version's low losses read below every delta, the bisection stopped on the first cut
    # and answered 0; that one case goes to the full profile (enveloped from the right)
    pair = discretize(plda.DiscreteLaplace(0.5).privacy_loss("remove"), 2.0**-7)
    law = compose_tilted([(pair[1], 300)], 4.0)
    one = float(law.epsilon(np.array(1e-40)))
    full = float(dataclasses.replace(law).epsilon(np.full(5, 1e-40))[0])
    exact = discrete_laplace_composition_epsilon(1e-40, parameter=0.5, count=300)
    assert one == full and 0.99 * exact < one <= exact
