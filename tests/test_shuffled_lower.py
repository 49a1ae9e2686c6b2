"""The shuffled epoch's realized lower pairs (issue 24, item 5): the input with the other
records at ``-C`` and x at ``+C`` gives one random batch shifted by ``2C`` with x against the
same batch shifted by ``C`` without it. Checked against exact values computed here in mpmath:
the datasets' output laws by enumerating every shuffle, the full ``T = 2`` pair by a
two-dimensional integral (inner integral in closed form), the ``T = 3`` pair by a
three-dimensional one, and the largest coordinate's law by quadrature."""

from __future__ import annotations

import itertools
import math
import warnings
from collections import Counter
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import integrate

import plda
from plda import PrivacyLossDistribution as PLD
from plda.epochs.cells import shifted_pair_cell_sum_laws, shifted_pair_cells
from plda.epochs.max_shift_pair import LaplaceMaxShiftPairLaw, MaxShiftPairLaw
from plda.epochs.shuffled import (
    ShuffledLowerBound,
    ShuffledOppositeLowerBound,
    ShuffledOppositeSumLowerBound,
)
from plda.serialization import mechanism_from_dict, mechanism_to_dict

EPSILONS = (0.0, 0.5, 1.0, 2.0)


# ---------------------------------------------------------------- datasets and their outputs
def batch_sum_means(records, num_steps, removed=None):
    """Law of the vector of batch sums of one shuffled epoch (``num_steps`` batches of
    ``len(records) / num_steps`` slots), as ``{means: probability}``: every permutation of the
    records is equally likely; ``removed`` (an index) leaves that record's slot empty, the
    coupling plda's add/remove analysis assumes."""
    size = len(records) // num_steps
    assert size * num_steps == len(records)
    law: Counter = Counter()
    perms = list(itertools.permutations(range(len(records))))
    for perm in perms:
        sums = [sum(records[i] for i in perm[t * size:(t + 1) * size] if i != removed)
                for t in range(num_steps)]
        law[tuple(sums)] += Fraction(1, len(perms))
    return dict(law)


def _shifted(law, constant):
    return {tuple(m - constant for m in means): p for means, p in law.items()}


def test_the_opposite_input_realizes_the_pair():
    """Other records at -1, x at +1, batches of 2: with x one random batch sits 2 above the
    others' constant, without x (slot left empty) the same batch sits 1 above; under
    replace-one with x' = -1 nothing is shifted. The input with the others at 0 gives shift 1
    against none."""
    x, others = 1, [-1, -1, -1]
    with_x = _shifted(batch_sum_means([x] + others, 2), -2)
    without_x = _shifted(batch_sum_means([x] + others, 2, removed=0), -2)
    replaced = _shifted(batch_sum_means([-1] + others, 2), -2)
    assert with_x == {(2, 0): Fraction(1, 2), (0, 2): Fraction(1, 2)}
    assert without_x == {(1, 0): Fraction(1, 2), (0, 1): Fraction(1, 2)}
    assert replaced == {(0, 0): 1}
    assert batch_sum_means([1, 0, 0, 0], 2) == {(1, 0): Fraction(1, 2), (0, 1): Fraction(1, 2)}
    assert batch_sum_means([1, 0, 0, 0], 2, removed=0) == {(0, 0): 1}


# ------------------------------------------------------- exact delta of the full pair, T = 2, 3
def _positive_intervals(coefficients):
    """Intervals of ``u > 0`` where ``sum_k a_k u^k > 0`` (``k <= 2``), as ``(lo, hi)``."""
    a0, a1, a2 = coefficients
    roots = []
    if a2 != 0:
        disc = a1 * a1 - 4 * a2 * a0
        if disc > 0:
            s = mpmath.sqrt(disc)
            roots = [(-a1 - s) / (2 * a2), (-a1 + s) / (2 * a2)]
    elif a1 != 0:
        roots = [-a0 / a1]
    cuts = sorted({mpmath.mpf(0)} | {r for r in roots if r > 0}) + [mpmath.inf]
    out = []
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        mid = lo + 1 if hi == mpmath.inf else (lo + hi) / 2
        if a0 + a1 * mid + a2 * mid * mid > 0:
            out.append((lo, hi))
    return out


def _last_coordinate_integral(terms, mu, prefix):
    """``int (sum_i c_i prod_j phi(x_j - k_ij mu))_+ dx_T`` for the other coordinates fixed at
    ``prefix``: divided by ``phi(x_T)`` the integrand is a polynomial of degree <= 2 in
    ``u = e^(mu x_T)`` (each ``k_iT`` is 0, 1 or 2), so the positive set is explicit and the
    integral a sum of normal cdf differences."""
    coefficients = [mpmath.mpf(0)] * 3
    weights = []
    for c, ks in terms:
        w = c * mpmath.fprod(mpmath.npdf(x - k * mu) for x, k in zip(prefix, ks[:-1],
                                                                     strict=True))
        weights.append((w, ks[-1]))
        coefficients[ks[-1]] += w * mpmath.exp(-ks[-1] ** 2 * mu * mu / 2)
    total = mpmath.mpf(0)
    for lo, hi in _positive_intervals(coefficients):
        a = -mpmath.inf if lo == 0 else mpmath.log(lo) / mu
        b = mpmath.inf if hi == mpmath.inf else mpmath.log(hi) / mu
        total += mpmath.fsum(w * (mpmath.ncdf(b - k * mu) - mpmath.ncdf(a - k * mu))
                             for w, k in weights)
    return total


def _terms(p_law, q_law, eps):
    f = mpmath.exp(eps)
    return ([(mpmath.mpf(p.numerator) / p.denominator, ks) for ks, p in p_law.items()]
            + [(-f * mpmath.mpf(q.numerator) / q.denominator, ks) for ks, q in q_law.items()])


def full_delta_two_steps(p_law, q_law, mu, eps):
    """``int int (p - e^eps q)_+`` for two mixtures of ``N(k mu, I_2)`` (``k`` in {0, 1, 2}^2):
    the inner integral in closed form, the outer by mpmath quadrature (to about 1e-7: the
    integrand has kinks where the positive set changes shape)."""
    with mpmath.workdps(15):
        terms = _terms(p_law, q_law, mpmath.mpf(eps))
        m = mpmath.mpf(mu)
        breaks = [-mpmath.inf, -4, 0, m, 2 * m, 2 * m + 4, mpmath.inf]
        return float(mpmath.quad(lambda x: _last_coordinate_integral(terms, m, [x]), breaks))


def _normal_mass(a, b):
    """``Phi(b) - Phi(a)`` in floats, from the upper tails when both are above 0."""
    if a > 0:
        return 0.5 * (math.erfc(a / math.sqrt(2)) - math.erfc(b / math.sqrt(2)))
    return 0.5 * (math.erfc(-b / math.sqrt(2)) - math.erfc(-a / math.sqrt(2)))


def _last_coordinate_integral_float(terms, mu, prefix):
    """:func:`_last_coordinate_integral` in floats (for the three-dimensional integral)."""
    coefficients = [0.0, 0.0, 0.0]
    weights = []
    for c, ks in terms:
        w = c * math.prod(math.exp(-0.5 * (x - k * mu) ** 2) / math.sqrt(2 * math.pi)
                          for x, k in zip(prefix, ks[:-1], strict=True))
        weights.append((w, ks[-1]))
        coefficients[ks[-1]] += w * math.exp(-ks[-1] ** 2 * mu * mu / 2)
    total = 0.0
    for lo, hi in _positive_intervals([mpmath.mpf(v) for v in coefficients]):
        a = -math.inf if lo == 0 else float(mpmath.log(lo)) / mu
        b = math.inf if hi == mpmath.inf else float(mpmath.log(hi)) / mu
        total += sum(w * _normal_mass(a - k * mu, b - k * mu) for w, k in weights)
    return total


def full_delta_three_steps(p_law, q_law, mu, eps):
    """The same for ``T = 3``: the inner integral in closed form, the outer two by scipy's
    adaptive quadrature (floats)."""
    f = math.exp(eps)
    terms = ([(float(p), ks) for ks, p in p_law.items()]
             + [(-f * float(q), ks) for ks, q in q_law.items()])

    def inner(x2, x1):
        return _last_coordinate_integral_float(terms, mu, [x1, x2])

    top = 2 * mu + 7.5
    value, error = integrate.dblquad(inner, -7.5, top, -7.5, top, epsabs=1e-8, epsrel=1e-6)
    assert error < 1e-5 * max(value, 1e-3)
    return value


def _opposite_laws(num_steps):
    """(P, Q) of the input with the others at -1 and x at +1, in units of C, constant removed."""
    records = [1] + [-1] * (num_steps - 1)
    return (_shifted(batch_sum_means(records, num_steps), -1),
            _shifted(batch_sum_means(records, num_steps, removed=0), -1))


def _lower_and_upper(sigma, num_steps, eps, relation="add_remove"):
    epoch = plda.Shuffled(plda.Gaussian(sigma), num_steps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        warnings.simplefilter("ignore", plda.SamplerAssumptionWarning)
        upper = PLD.from_mechanism(epoch, relation=relation).delta_bounds(eps).upper
    lower = PLD.from_mechanism(epoch.lower_bound_mechanism(),
                               relation=relation).delta_bounds(eps).lower
    return lower, upper


@pytest.mark.parametrize("sigma, eps", [(0.7, 1.0), (1.0, 0.0), (1.0, 2.0), (2.5, 0.5)])
def test_opposite_pair_two_steps_against_the_exact_full_pair(sigma, eps):
    """T = 2: the certified lower bound is at most the exact full pair's delta (both
    directions), which is at most the certified upper bound, and the lower bound beats the
    others-at-0 pair's exact delta."""
    mu = 1 / sigma
    p_law, q_law = _opposite_laws(2)
    assert p_law == {(2, 0): Fraction(1, 2), (0, 2): Fraction(1, 2)}
    lower, upper = _lower_and_upper(sigma, 2, np.array([eps]))
    exact = max(full_delta_two_steps(p_law, q_law, mu, eps),
                full_delta_two_steps(q_law, p_law, mu, eps))
    assert lower[0] <= exact * (1 + 1e-6) <= upper[0]
    # the largest coordinate is a post-processing (a little below the full pair) ...
    law = MaxShiftPairLaw(mu=2 * mu, num_steps=2, mu_q=mu)
    assert float(max(law.delta(eps), law.reversed().delta(eps))) <= exact * (1 + 1e-6)
    assert lower[0] >= 0.999 * float(law.delta(eps)) - 1e-12
    # ... and stronger than the whole pair of the input with the others at 0
    old_p = {(1, 0): Fraction(1, 2), (0, 1): Fraction(1, 2)}
    old = max(full_delta_two_steps(old_p, {(0, 0): 1}, mu, eps),
              full_delta_two_steps({(0, 0): 1}, old_p, mu, eps))
    assert lower[0] > old


def test_opposite_pair_three_steps_against_the_exact_full_pair():
    sigma, e = 1.0, 0.5
    p_law, q_law = _opposite_laws(3)
    assert p_law == {(2, 0, 0): Fraction(1, 3), (0, 2, 0): Fraction(1, 3),
                     (0, 0, 2): Fraction(1, 3)}
    lower, upper = _lower_and_upper(sigma, 3, np.array([e]))
    exact = full_delta_three_steps(p_law, q_law, 1 / sigma, e)
    law = MaxShiftPairLaw(mu=2.0, num_steps=3, mu_q=1.0)
    assert float(law.delta(e)) <= exact * (1 + 1e-5)
    assert 0.999 * float(law.delta(e)) <= lower[0] <= exact * (1 + 1e-5) <= upper[0]


def test_replace_one_keeps_the_shift_against_nothing():
    """Under replace-one the input with the others at -1, x = +1, x' = -1 (shift 2 against
    none) beats the other inputs with constant others at every epsilon checked: x' = 0 (shift
    2 against 1), and others at 0 with x' = -1 (shift 1 against -1)."""
    mu = 1.0
    best = ({(2, 0): Fraction(1, 2), (0, 2): Fraction(1, 2)}, {(0, 0): 1})
    x_prime_zero = _opposite_laws(2)
    # others 0, x = 1, x' = -1: means (1, 0)/(0, 1) against (-1, 0)/(0, -1); add 1 to both
    symmetric = ({(2, 1): Fraction(1, 2), (1, 2): Fraction(1, 2)},
                 {(0, 1): Fraction(1, 2), (1, 0): Fraction(1, 2)})
    checked = (0.0, 1.0)
    lower, _ = _lower_and_upper(1 / mu, 2, np.array(checked), relation="replace_one")
    for i, e in enumerate(checked):
        def both(pair, e=e):
            return max(full_delta_two_steps(*pair, mu, e),
                       full_delta_two_steps(pair[1], pair[0], mu, e))
        top = both(best)
        assert both(x_prime_zero) < top and both(symmetric) < top
        assert lower[i] <= top * (1 + 1e-6)


# ------------------------------------------------------ the largest coordinate's law (mpmath)
def _max_density(kind, shift, t):
    if kind == "gauss":
        pdf, cdf = mpmath.npdf, mpmath.ncdf
    else:
        def pdf(z):
            return mpmath.exp(-abs(z)) / 2

        def cdf(z):
            return mpmath.exp(z) / 2 if z < 0 else 1 - mpmath.exp(-z) / 2

    def density(y):
        return (pdf(y - shift) * cdf(y) ** (t - 1)
                + (t - 1) * cdf(y - shift) * cdf(y) ** (t - 2) * pdf(y))

    return density, (lambda y: cdf(y - shift) * cdf(y) ** (t - 1))


@pytest.mark.parametrize("kind, shift_p, shift_q, steps", [
    ("gauss", 2.6, 1.3, 5), ("gauss", 0.4, 0.2, 1000), ("gauss", 4.0, 2.0, 3),
    ("laplace", 2.2, 1.1, 4), ("laplace", 0.5, 0.25, 200),
])
def test_max_shift_pair_law_against_mpmath(kind, shift_p, shift_q, steps):
    """cdfs at the loss of given points, densities, and delta by quadrature from the crossing
    (the loss increases in y: docs/howto/samplers.md, "How the shuffled bracket is certified")."""
    if kind == "gauss":
        law = MaxShiftPairLaw(mu=shift_p, num_steps=steps, mu_q=shift_q)
    else:
        law = LaplaceMaxShiftPairLaw(m=shift_p, num_steps=steps, m_q=shift_q)
    with mpmath.workdps(30):
        p_pdf, p_cdf = _max_density(kind, mpmath.mpf(shift_p), steps)
        q_pdf, q_cdf = _max_density(kind, mpmath.mpf(shift_q), steps)

        def loss(y):
            return mpmath.log(p_pdf(y)) - mpmath.log(q_pdf(y))

        points = sorted({shift_q + 0.3, shift_p + 0.1, 2.5 + shift_p, 4.0 + shift_p}
                        | ({-1.5, 0.0} if kind == "gauss" else set()))
        values = [loss(mpmath.mpf(y)) for y in points]
        assert all(b > a for a, b in zip(values[:-1], values[1:], strict=True))
        for y, value in zip(points, values, strict=True):
            x = float(value)
            for hypothesis, cdf in (("P", p_cdf), ("Q", q_cdf)):
                exact = cdf(mpmath.mpf(y))
                assert float(law.cdf(x, hypothesis)) == pytest.approx(float(exact), rel=1e-8)
                assert float(law.sf(x, hypothesis)) == pytest.approx(float(1 - exact), rel=1e-8)
            slope = mpmath.diff(loss, mpmath.mpf(y))
            assert float(law.continuous_pdf(x, "P")) == pytest.approx(
                float(p_pdf(mpmath.mpf(y)) / slope), rel=1e-6)
        top = law.continuous_support[1]
        for eps in (0.0, 0.3, 1.0):
            if eps >= top:
                assert float(law.delta(eps)) == 0.0
                continue
            f = mpmath.exp(eps)
            lo, hi = mpmath.mpf(-30), mpmath.mpf(80)
            for _ in range(150):  # bisection: the loss is nondecreasing (flat for a Laplace)
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if loss(mid) <= eps else (lo, mid)
            root = hi
            exact = (1 - p_cdf(root)) - f * (1 - q_cdf(root))
            assert float(law.delta(eps)) == pytest.approx(float(exact), rel=1e-8, abs=1e-15)


def test_max_shift_pair_laws_refuse_bad_shifts():
    with pytest.raises(ValueError, match="mu_q"):
        MaxShiftPairLaw(mu=1.0, num_steps=3, mu_q=1.0)
    with pytest.raises(ValueError, match="m_q"):
        LaplaceMaxShiftPairLaw(m=1.0, num_steps=3, m_q=-0.1)
    with pytest.raises(ValueError, match="num_steps"):
        MaxShiftPairLaw(mu=2.0, num_steps=1, mu_q=1.0)


# ------------------------------------------------------------------------ the shuffled epoch
def test_cifar_sized_epoch_lower_bound():
    """The docs' CIFAR-sized epoch (sigma = 1, 195 steps, delta = 1e-5): the others-at-0 pair
    certified 0.393 only; the others-at--C pair certifies 3.839 (its full pair: 3.842, a
    per-epsilon sufficient statistic computed outside plda), below the upper bound 4.377."""
    epoch = plda.Shuffled(plda.Gaussian(1.0), 195)
    lower = PLD.from_mechanism(epoch.lower_bound_mechanism()).epsilon_bounds(1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        warnings.simplefilter("ignore", plda.SamplerAssumptionWarning)
        upper = PLD.from_mechanism(epoch).epsilon_bounds(1e-5).upper
    assert 3.83 < lower.lower <= lower.upper < 3.85 < upper < 4.39


def test_lower_bound_mechanisms_under_both_relations():
    gauss = plda.Gaussian(1.3)
    epoch = plda.Shuffled(gauss, 7)
    opposite, zero = epoch.lower_bound_mechanisms()
    assert opposite == epoch.lower_bound_mechanism() == ShuffledOppositeLowerBound(gauss, 7)
    assert zero == ShuffledLowerBound(gauss, 7)
    # read under replace-one both become the shift-2C-against-nothing pair, which is also
    # what the replace-one reading of the epoch offers
    converted = epoch.under_replace_one()
    assert converted.lower_bound_mechanisms() == (converted.lower_bound_mechanism(),)
    assert opposite.under_replace_one() == zero.under_replace_one()
    assert opposite.under_replace_one() == converted.lower_bound_mechanism()
    law = opposite.privacy_loss("remove")
    assert isinstance(law, MaxShiftPairLaw) and (law.mu, law.mu_q) == (2 / 1.3, 1 / 1.3)
    assert mechanism_from_dict(mechanism_to_dict(opposite)) == opposite
    laplace = ShuffledOppositeLowerBound(plda.Laplace(0.5), 4).privacy_loss("remove")
    assert isinstance(laplace, LaplaceMaxShiftPairLaw) and (laplace.m, laplace.m_q) == (4.0, 2.0)
    with pytest.raises(TypeError, match="Gaussian or plda.Laplace"):
        ShuffledOppositeLowerBound(plda.DiscreteLaplace(1.0), 3)
    with pytest.raises(ValueError, match="num_steps"):
        ShuffledOppositeLowerBound(gauss, 0)


@pytest.mark.parametrize("base", [plda.Gaussian(0.8), plda.Laplace(0.6)],
                         ids=["gauss", "laplace"])
def test_one_step_is_the_base(base):
    one = PLD.from_mechanism(ShuffledOppositeLowerBound(base, 1)).epsilon_bounds(1e-5)
    want = PLD.from_mechanism(base).epsilon_bounds(1e-5)
    assert one.lower == pytest.approx(want.lower, rel=1e-9)


def test_long_epochs_keep_a_finite_far_tail():
    """T = 10^4 at sigma = 0.5: the largest coordinate's far-tail point (mass 1e-320 / T)
    underflowed, and the discretizer refused the infinite grid."""
    epoch = plda.Shuffled(plda.Gaussian(0.5), 10**4)
    for mechanism in epoch.lower_bound_mechanisms():
        bounds = PLD.from_mechanism(mechanism).epsilon_bounds(1e-5)
        assert 0 < bounds.lower <= bounds.upper < math.inf


def test_laplace_opposite_pair_is_below_the_upper_bound():
    epoch = plda.Shuffled(plda.Laplace(1.0), 10)
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        warnings.simplefilter("ignore", plda.SamplerAssumptionWarning)
        upper = PLD.from_mechanism(epoch, 3).delta_bounds(eps).upper
    for mechanism in epoch.lower_bound_mechanisms():
        lower = PLD.from_mechanism(mechanism, 3).delta_bounds(eps).lower
        assert np.all(lower <= upper)
    new = PLD.from_mechanism(epoch.lower_bound_mechanism(), 3).epsilon_bounds(1e-5).lower
    old = PLD.from_mechanism(epoch.lower_bound_mechanisms()[1], 3).epsilon_bounds(1e-5).lower
    assert new > old



# ----------------------------------------- the same input through a sum over batches (much noise)
@pytest.mark.parametrize("sigma, eps", [(2.0, 0.0), (4.0, 0.3)])
def test_opposite_sum_two_steps_against_the_exact_full_pair(sigma, eps):
    """The sum over batches of the cells of e^(2 mu Y - 2 mu^2): a post-processing whose
    certified lower bound is at most the exact full pair's delta and close to it at T = 2."""
    mechanism = ShuffledOppositeSumLowerBound(plda.Gaussian(sigma), 2)
    lower = PLD.from_mechanism(mechanism).delta_bounds(eps).lower
    p_law, q_law = _opposite_laws(2)
    exact = max(full_delta_two_steps(p_law, q_law, 1 / sigma, eps),
                full_delta_two_steps(q_law, p_law, 1 / sigma, eps))
    assert 0.95 * exact <= lower <= exact * (1 + 1e-6)


def test_cell_sum_laws_are_sub_measures():
    """Each direction's law is a sub-measure of the exact discrete law under its first
    hypothesis and a super-measure under the second (the certified FFT errors subtracted,
    resp. added: lower masses and lower losses), and the atoms agree with direct convolutions
    of the cell masses."""
    remove, add = shifted_pair_cell_sum_laws(0.25, 3)
    for law in (remove, add):
        p_mass, q_mass = (float(law.cdf(np.inf, h) + law.sf(np.inf, h)) for h in "PQ")
        assert 1 - 1e-9 <= p_mass <= 1 <= q_mass <= 1 + 1e-9
    q0, _, p1, _, p2, _, _ = shifted_pair_cells(0.25, 3)
    others = np.convolve(q0, q0)
    p_t, q_t = np.convolve(others, p2), np.convolve(others, p1)
    keep = p_t > 1e-6
    losses, masses = np.log(p_t[keep] / q_t[keep]), p_t[keep]
    # each of these is an atom of the remove law, to the FFT's accuracy
    nearest = np.clip(np.searchsorted(remove.atom_losses, losses), 1, len(remove.atom_losses) - 1)
    nearest = np.where(np.abs(remove.atom_losses[nearest - 1] - losses)
                       < np.abs(remove.atom_losses[nearest] - losses), nearest - 1, nearest)
    np.testing.assert_allclose(remove.atom_losses[nearest], losses, atol=1e-7)
    np.testing.assert_allclose(remove.atom_probs[nearest], masses, rtol=1e-6)
    assert np.all(remove.atom_probs[nearest] <= masses * (1 + 1e-12))


@pytest.mark.filterwarnings("ignore::plda.AccuracyWarning")  # 100 allocation epochs: gap 5%
def test_many_noisy_epochs_take_the_sum_over_batches():
    """sigma = 5, 100 steps, 100 epochs: the largest batch sum gives 0.35, the others-at-0
    pair 0.73 (the only lower bound before; 0.70 on the allocation lattice of step 0.02, now
    mu / 64), the sum over batches 0.79; the upper bound is 10.0. lower_bound_mechanisms()
    offers all three."""
    epoch = plda.Shuffled(plda.Gaussian(5.0), 100)
    mechanisms = epoch.lower_bound_mechanisms()
    assert [type(m) for m in mechanisms] == [ShuffledOppositeLowerBound,
                                             ShuffledOppositeSumLowerBound, ShuffledLowerBound]
    lowers = [PLD.from_mechanism(m, 100).epsilon_bounds(1e-5).lower for m in mechanisms]
    assert lowers[0] < 0.36 and 0.72 < lowers[2] < 0.74 and lowers[1] > 0.78
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        warnings.simplefilter("ignore", plda.SamplerAssumptionWarning)
        assert max(lowers) < PLD.from_mechanism(epoch, 100).epsilon(1e-5)
    for mechanism in mechanisms:
        assert mechanism_from_dict(mechanism_to_dict(mechanism)) == mechanism
        assert mechanism.under_replace_one() == epoch.under_replace_one().lower_bound_mechanism()


def test_the_sum_over_batches_is_offered_where_its_lattice_fits():
    assert len(plda.Shuffled(plda.Gaussian(1.0), 195).lower_bound_mechanisms()) == 2
    assert len(plda.Shuffled(plda.Laplace(3.0), 195).lower_bound_mechanisms()) == 2
    assert len(plda.Shuffled(plda.Gaussian(2.0), 10**5).lower_bound_mechanisms()) == 3
    with pytest.raises(ValueError, match="sensitivity / sigma"):
        ShuffledOppositeSumLowerBound(plda.Gaussian(1.0), 195)
    with pytest.raises(ValueError, match="num_steps"):
        ShuffledOppositeSumLowerBound(plda.Gaussian(3.0), 1)
    with pytest.raises(TypeError, match="Gaussian or plda.Laplace"):
        ShuffledOppositeSumLowerBound(plda.DiscreteGaussian(3.0), 4)


def test_long_laplace_epochs_keep_finite_cdfs():
    """Laplace scale 0.05, 1000 steps: the largest coordinate's cdf above its atom, F(y0)
    e^(log F(y) - log F(y0)) with F(y0) = 2^-1000 e^-20, overflowed to inf (a non-finite mass
    in the discretized law); now F(y) (1 - e^-d)."""
    epoch = plda.Shuffled(plda.Laplace(0.05), 1000)
    for mechanism in epoch.lower_bound_mechanisms():
        bounds = PLD.from_mechanism(mechanism).epsilon_bounds(1e-5)
        assert 16 < bounds.lower <= bounds.upper <= 20 * (1 + 1e-6)


@pytest.mark.parametrize("ratio", [1e-300, 1e-10])
def test_laplace_base_with_a_tiny_ratio_is_bracketed(ratio):
    """The random-allocation lower pair divided by a zero-width lattice (1e-300) or asked for
    billions of points (1e-10); RandomAllocation refuses such ratios now, and the lower pair
    falls back to the largest coordinate: a bracket below one use of the base."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.PLDAWarning)
        bounds = PLD.from_mechanism(plda.Shuffled(plda.Laplace(1.0, ratio), 100)).delta_bounds(
            [0.0, ratio / 4])
        base = PLD.from_mechanism(plda.Laplace(1.0, ratio)).delta_bounds([0.0, ratio / 4])
    assert np.all(0 <= bounds.lower) and np.all(bounds.lower <= bounds.upper)
    assert np.all(bounds.upper <= base.upper)


@pytest.mark.parametrize("z", [-1e10, -1e5, -300.0, -40.0, -5.0, -1.0, 0.0, 1.0, 5.0, 8.0, 30.0])
def test_the_normal_reversed_hazard_keeps_its_accuracy_far_in_the_tails(z):
    # phi(z) / Phi(z) from log phi - log Phi lost z^2 ulps: at z = -1e10 both are -5e19 and
    # their difference came out NaN, which sent the max-shift law's Newton steps to bisection
    # (a shuffled Gaussian epoch at noise multiplier 1e-10: two minutes a query)
    from plda.epochs.max_shift import normal_reversed_hazard

    with mpmath.workdps(50):
        exact = mpmath.npdf(z) / mpmath.ncdf(z)
        assert float(abs(normal_reversed_hazard(z) - exact) / exact) < 1e-13


def test_a_shuffled_gaussian_at_a_tiny_noise_multiplier_brackets_its_upper_pair():
    # each record once per epoch: the upper pair is Gaussian with mu^2 summed over the epochs,
    # whose exact epsilon the bracket must hold from above; the lower one sits just below it
    mu = math.sqrt(3) * 1e9
    bounds = PLD.from_mechanism(plda.Shuffled(plda.Gaussian(1e-9), 100), 3).epsilon_bounds(1e-5)
    with mpmath.workdps(60):
        def delta(eps):
            eps = mpmath.mpf(eps)
            return (mpmath.ncdf(-eps / mu + mu / 2)
                    - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2))

        assert delta(bounds.upper) <= 1e-5
    assert 0.9999 * bounds.upper < bounds.lower <= bounds.upper
