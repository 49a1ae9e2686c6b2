"""Groups of records under Poisson sampling with a Laplace base (issue 26, item 1).

The exact references are written from the definitions in mpmath (``mixture_reference``): the
mixture's hockey-stick divergence through its monotone likelihood ratio, and, for realized
groups whose records move the query by different amounts and signs, by quadrature.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import mpmath
import numpy as np
import pytest
from mixture_reference import binomial_weights, laplace_mixture_delta

import plda
from plda.mechanisms.laplace_mixture import LaplaceMixtureLaw, laplace_interval_mass

PLD = plda.PrivacyLossDistribution
EPS = (0.0, 0.1, 0.5, 1.0, 2.0)


def realized_group_delta(scale, rate, contributions, eps, direction):
    """``delta(eps)`` of a realized group: records moving the query by ``contributions``
    (each within the sensitivity), each sampled with ``rate``, against the dataset without
    them: ``int (p - e^eps q)_+``, in closed form. Between two consecutive centres every
    Laplace density is ``a e^(y/b)`` or ``a e^(-y/b)``, so the integrand is
    ``A e^(y/b) + B e^(-y/b)``, which changes sign at most once (at ``e^(2y/b) = -B/A``)."""
    b, e = mpmath.mpf(scale), mpmath.exp(mpmath.mpf(eps))
    comps = []
    for chosen in itertools.product((0, 1), repeat=len(contributions)):
        weight = mpmath.fprod(mpmath.mpf(rate) if c else 1 - mpmath.mpf(rate) for c in chosen)
        comps.append((weight, mpmath.fsum(mpmath.mpf(x) for x, c in zip(contributions, chosen,
                                                                         strict=True) if c)))
    signed = [(w, m) for w, m in comps]
    other = [(mpmath.mpf(1), mpmath.mpf(0))]
    first, second = (signed, other) if direction == "remove" else (other, signed)
    terms = [(w, m) for w, m in first] + [(-e * w, m) for w, m in second]
    cuts = sorted({m for _, m in terms})
    edges = [-mpmath.inf, *cuts, mpmath.inf]
    total = mpmath.mpf(0)
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        # A e^(y/b) from centres right of the segment, B e^(-y/b) from those left of it
        a = mpmath.fsum(w * mpmath.exp(-m / b) / (2 * b) for w, m in terms if m >= hi)
        c = mpmath.fsum(w * mpmath.exp(m / b) / (2 * b) for w, m in terms if m <= lo)

        def integral(x0, x1, a=a, c=c):  # of A e^(y/b) + B e^(-y/b) over [x0, x1]
            up = a * b * (mpmath.exp(x1 / b) - mpmath.exp(x0 / b)) if a else 0
            down = c * b * (mpmath.exp(-x0 / b) - mpmath.exp(-x1 / b)) if c else 0
            return up + down

        points = [lo, hi]
        if a != 0 and c != 0 and -c / a > 0:
            root = b * mpmath.log(-c / a) / 2
            if lo < root < hi:
                points = [lo, root, hi]
        for x0, x1 in zip(points[:-1], points[1:], strict=True):
            piece = integral(x0, x1)
            total += max(piece, 0)
    return total


# ------------------------------------------------------------------ the law
@pytest.mark.parametrize(("shifts", "weights"), [((0.0, 1.0, 2.0, 3.0), (0.729, 0.243, 0.027,
                                                                         0.001)),
                                                  ((0.5, 1.7), (0.5, 0.5)),
                                                  ((0.0, 1e-3, 300.0), (0.9, 0.09, 0.01))])
def test_law_masses_and_inverse_are_exact(shifts, weights):
    """Atoms and continuous part hold all the mass under both hypotheses; the output at a loss
    gives back that loss (the segment formula against the definition, in mpmath)."""
    law = LaplaceMixtureLaw(shifts=shifts, weights=weights)
    lo, hi = law.continuous_support
    for hypothesis in "PQ":
        total = law.continuous_cdf(np.array([hi]), hypothesis)[0] + law._atom_masses(
            hypothesis).sum()
        assert total == pytest.approx(1.0, rel=1e-13)
    for x in np.linspace(lo, hi, 13)[1:-1]:
        y = float(law.output(x))
        with mpmath.workdps(30):
            loss = mpmath.log(mpmath.fsum(mpmath.mpf(w) * mpmath.exp(abs(y) - abs(y - u))
                                          for u, w in zip(shifts, weights, strict=True)))
        assert float(loss) == pytest.approx(x, rel=1e-12, abs=1e-14)


def test_negligible_upper_components_leave_no_mass_above_the_top_loss():
    """q = 0.001, K = 8: the top components weigh 1e-24, the loss is flat to within an ulp
    over the top segments and the closed-form inverse there is rounding noise; it once left
    3.8e-7 of continuous mass above the top loss, read as mass at +inf (epsilon inf at 100
    steps)."""
    step = plda.PoissonSampled(plda.Laplace(0.5), 0.001, group_size=8)
    law = step.privacy_loss("remove")
    lo, hi = law.continuous_support
    assert law.continuous_sf(np.array([hi]), "P")[0] == 0.0
    assert law.continuous_cdf(np.array([lo]), "P")[0] == 0.0
    x = np.linspace(lo, hi, 2001)
    assert np.all(np.diff(law.continuous_cdf(x, "P")) >= 0)
    bounds = PLD.from_mechanism(step, 100).epsilon_bounds(1e-5)
    assert math.isfinite(bounds.upper) and bounds.lower <= bounds.upper < 1.0


def test_interval_mass_has_no_cancellation():
    """``P(a < Y < c)`` of a Laplace variable for tiny intervals on each side of and across
    the centre, against mpmath."""
    for a, c in ((3.0, 3.0 + 1e-12), (-3.0 - 1e-12, -3.0), (-1e-13, 2e-13), (0.0, math.inf),
                 (-math.inf, -40.0)):
        got = float(laplace_interval_mass(0.0, a, c))
        with mpmath.workdps(40):
            def cdf(x):
                x = mpmath.mpf(x)
                return mpmath.exp(x) / 2 if x < 0 else 1 - mpmath.exp(-x) / 2
            want = cdf(c) - cdf(a)
        assert got == pytest.approx(float(want), rel=1e-13)


@pytest.mark.parametrize("count", [1, 3])
def test_a_group_with_every_record_kept_is_laplace_at_k_sensitivities(count):
    got = PLD.from_mechanism(plda.PoissonSampled(plda.Laplace(2.0), 1.0, group_size=3),
                             count).delta_bounds(np.array(EPS))
    want = PLD.from_mechanism(plda.Laplace(2.0, sensitivity=3.0), count).delta_bounds(
        np.array(EPS))
    np.testing.assert_array_equal(got.upper, want.upper)
    np.testing.assert_array_equal(got.lower, want.lower)


def test_the_group_law_is_the_binomial_mixture():
    step = plda.PoissonSampled(plda.Laplace(1.5, sensitivity=0.5), 0.2, group_size=4)
    mixture = step.group_mixture()
    assert isinstance(mixture, plda.LaplaceMixture)
    assert mixture.sensitivities == (0.0, 0.5, 1.0, 1.5, 2.0)
    got = PLD.from_mechanism(step, 1).delta_bounds(np.array(EPS))
    with mpmath.workdps(30):
        for e, lower, upper in zip(EPS, got.lower, got.upper, strict=True):
            exact = laplace_mixture_delta(1.5, [0.5 * k for k in range(5)],
                                          binomial_weights(4, 0.2), e)
            assert lower <= exact <= upper


# ------------------------------------------------------------------ realized and dominating
@pytest.mark.parametrize("contributions", [(1.0, 1.0), (1.0, -1.0), (1.0, 0.4), (-0.3, -1.0),
                                           (1.0, 1.0, 1.0), (1.0, -0.5, 0.8)])
@pytest.mark.parametrize("rate", [0.1, 0.6])
def test_every_realized_group_is_below_the_bound(contributions, rate):
    """Records moving the query by different amounts and signs (each within the sensitivity
    1) are dominated by the group of all +1; all +1 reaches it (within the accuracy)."""
    k = len(contributions)
    step = plda.PoissonSampled(plda.Laplace(1.0), rate, group_size=k)
    got = PLD.from_mechanism(step, 1).delta_bounds(np.array(EPS))
    with mpmath.workdps(20):
        for i, e in enumerate(EPS):
            for direction in ("remove", "add"):
                exact = realized_group_delta(1.0, rate, contributions, e, direction)
                assert exact <= got.upper[i] + 1e-9, (direction, e, float(exact), got.upper[i])
            if all(x == 1.0 for x in contributions):
                aligned = max(realized_group_delta(1.0, rate, contributions, e, d)
                              for d in ("remove", "add"))
                # two references written apart agree: the cut of the monotone ratio
                mixture = laplace_mixture_delta(1.0, range(k + 1), binomial_weights(k, rate), e)
                assert abs(aligned - mixture) <= 1e-15
                assert got.lower[i] <= aligned + 1e-9


# ------------------------------------------------------------------ entry points
def test_accountant_cli_and_checkpoint_agree_with_the_pld():
    step = plda.PoissonSampled(plda.Laplace(1.0), 0.1, group_size=3)
    want = PLD.from_mechanism(step, 10).epsilon_bounds(1e-6)
    accountant = plda.PLDAccountant()
    accountant.compose(step, 10)
    got = accountant.epsilon_bounds(1e-6)
    assert got.lower <= want.upper and want.lower <= got.upper
    restored = plda.PLDAccountant.from_state_dict(json.loads(json.dumps(
        accountant.state_dict())))
    assert restored.epsilon_bounds(1e-6) == got
    done = subprocess.run(
        [sys.executable, "-m", "plda", "epsilon", "--mechanism",
         "laplace:scale=1,sample_rate=0.1,group_size=3", "--count", "10", "--delta", "1e-6",
         "--json"], capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout)
    assert answer["epsilon_lower"] <= want.upper and want.lower <= answer["epsilon_upper"]


def test_cli_refuses_a_group_without_sampling():
    done = subprocess.run(
        [sys.executable, "-m", "plda", "epsilon", "--mechanism", "laplace:scale=1,group_size=3",
         "--delta", "1e-6"], capture_output=True, text=True)
    assert done.returncode == 2 and "group_size needs sample_rate" in done.stderr


# ------------------------------------------------------------------ refusals and bad input
def test_replace_one_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="replace_one.*Gaussian base"):
        PLD.from_mechanism(plda.PoissonSampled(plda.Laplace(1.0), 0.1, group_size=2), 3,
                           relation="replace_one").epsilon_bounds(1e-6)


def test_other_bases_are_refused_naming_the_ones_that_work():
    with pytest.raises(ValueError, match="Gaussian or plda.Laplace"):
        plda.PoissonSampled(plda.DiscreteLaplace(0.5), 0.1, group_size=2)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"scale": 0.0, "sensitivities": (0, 1), "probabilities": (0.5, 0.5)}, ValueError, "scale"),
    ({"scale": 1.0, "sensitivities": (0, -1), "probabilities": (0.5, 0.5)}, ValueError,
     "sensitivities"),
    ({"scale": 1.0, "sensitivities": (0, 1), "probabilities": (0.5, 0.6)}, ValueError,
     "sum to 1"),
    ({"scale": 1.0, "sensitivities": (0, 1), "probabilities": (0.5,)}, ValueError,
     "one length"),
    ({"scale": 1.0, "sensitivities": (0, 800), "probabilities": (0.5, 0.5)}, ValueError,
     "max\\(sensitivities\\) / scale"),
    ({"scale": 1.0, "sensitivities": (0, math.nan), "probabilities": (0.5, 0.5)}, ValueError,
     "sensitivities"),
    ({"scale": "1", "sensitivities": (0, 1), "probabilities": (0.5, 0.5)}, TypeError, "scale"),
])
def test_bad_mixtures_name_the_argument(kwargs, error, match):
    with pytest.raises(error, match=match):
        plda.LaplaceMixture(**kwargs)


def test_a_large_group_at_a_high_rate_keeps_its_bracket():
    # next to the atom at the top of the loss the density of the continuous part is singular;
    # the optimistic split of that cell trusted a quadrature that found 4e-5 more than the
    # cell's mass, and the lower version's delta exceeded the upper one's (InvertedBracketError
    # from delta_bounds, for a valid mechanism)
    step = plda.PoissonSampled(plda.Laplace(0.5), 0.9, group_size=16)
    pld = plda.PrivacyLossDistribution.from_mechanism(step, 1)
    epsilons = [0.0, 1.0, 4.0, 20.0, 30.0]
    lower, upper = pld.delta_bounds(epsilons)
    with mpmath.workdps(30):
        for e, lo, up in zip(epsilons, lower, upper, strict=True):
            exact = laplace_mixture_delta(0.5, range(17), binomial_weights(16, 0.9), e)
            assert lo <= exact <= up
