"""RandomAllocation (balls-in-bins): certified bracket against an exact mpmath reference."""

import math
import warnings

import mpmath as mp
import numpy as np
import pytest

import plda
from plda.epochs.allocation import RandomAllocation, allocation_supported
from plda.epochs.sums import (
    delta_bracket,
    laplace_cells,
    lognormal_cells,
    offset_positions,
    sum_cells,
)


def _exact_two_steps(mu: float, eps: float) -> float:
    """delta(eps), remove direction, t = 2: E_Q[(S/2 - e^eps)_+] with S = W1 + W2,
    W = exp(mu Z - mu^2/2); the inner expectation over W2 in closed form
    (E[(W - c)_+] = Phi((mu^2/2 - log c)/mu) - c Phi(-(log c + mu^2/2)/mu))."""
    mp.mp.dps = 30
    mu, e = mp.mpf(mu), mp.e ** mp.mpf(eps)

    def inner(z1):
        w1 = mp.e ** (mu * z1 - mu**2 / 2)
        c = 2 * e - w1
        if c <= 0:
            return (w1 + 1) / 2 - e
        lc = mp.log(c)
        return (mp.ncdf((mu**2 / 2 - lc) / mu) - c * mp.ncdf(-(lc + mu**2 / 2) / mu)) / 2

    return float(mp.quad(lambda z: inner(z) * mp.npdf(z), [-mp.inf, -2, 0, 2, 6, mp.inf]))


@pytest.mark.parametrize("eps", [0.0, 0.5, 1.0])
def test_lattice_bracket_contains_exact_two_steps(eps):
    lo, hi = delta_bracket(1.0, 2, eps, 0.01, math.exp(7.5 + 0.5))
    exact = _exact_two_steps(1.0, eps)
    assert lo <= exact <= hi
    assert hi - exact < 1e-4 * exact  # both sides are second order in the lattice step
    assert exact - lo < 1e-4 * exact


def test_lattice_bracket_is_second_order_in_the_step():
    exact = _exact_two_steps(1.0, 0.5)
    cap = math.exp(7.5 + 0.5)
    fine, coarse = (delta_bracket(1.0, 2, 0.5, w, cap) for w in (0.01, 0.05))
    for side in (0, 1):  # five times the step: about 25 times the error (10 allows for noise)
        assert abs(coarse[side] - exact) > 10 * abs(fine[side] - exact)


@pytest.mark.parametrize("mu", [0.7, 1.0, 1.4])
def test_lower_positions_straddle_exact_conditional_means(mu):
    """Each cell's remove position is at most E[W | cell] and its add position at least (the
    conditional means from mpmath at 40 digits)."""
    w, cells = 0.05, 4000
    cell_data = lognormal_cells(mu, w, cells)
    mass, moment, _, _, mass_err, moment_err = cell_data
    q, j_rem, off_rem, j_add, off_add = offset_positions(mass, moment, mass_err, moment_err, w)
    mp.mp.dps = 40
    m = mp.mpf(mu)

    def cdf(x, shift):
        return mp.ncdf((mp.log(x) + shift) / m) if x > 0 else mp.mpf(0)

    for k in [0, 1, 2, 3, 5, 10, 20, 50, 100, 300, 1000, 3999]:
        if q[k] == 0:
            continue
        a, b = mp.mpf(k) * mp.mpf(w), mp.mpf(k + 1) * mp.mpf(w)
        p_cell = cdf(b, m * m / 2) - cdf(a, m * m / 2)
        mean = (cdf(b, -m * m / 2) - cdf(a, -m * m / 2)) / p_cell
        assert q[k] <= p_cell
        assert j_rem[k] * w + off_rem <= mean <= j_add[k] * w + off_add


def test_engine_bracket_contains_exact_two_steps():
    epoch = RandomAllocation(plda.Gaussian(1.0), num_steps=2)
    bounds = plda.PrivacyLossDistribution.from_mechanism(epoch).delta_bounds(1.0)
    exact = _exact_two_steps(1.0, 1.0)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper - bounds.lower < 0.01 * exact


@pytest.mark.parametrize("mu", [0.3, 0.05])
def test_a_narrow_base_gets_a_lattice_as_fine_as_its_spread(mu):
    """W spreads by ~mu around 1; on a lattice of step 0.02 the lower bounds' shared offset
    (up to a step) swamped it: at mu = 0.02, t = 20, 100 epochs had the lower bound 0 under an
    upper bound of 0.154 (now [0.1388, 0.1417]). The step follows mu (mu / 64) now."""
    epoch = RandomAllocation(plda.Gaussian(1.0 / mu), num_steps=2)
    eps = mu * mu / 4  # where delta is neither ~0 nor ~1
    exact = _exact_two_steps(mu, eps)
    bounds = plda.PrivacyLossDistribution.from_mechanism(epoch).delta_bounds(eps)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper - bounds.lower < 0.01 * exact  # step 0.02: 6.6% at mu = 0.05


def test_one_step_is_the_base_mechanism():
    gauss = plda.Gaussian(1.0)
    a = plda.PrivacyLossDistribution.from_mechanism(RandomAllocation(gauss, 1), 3)
    b = plda.PrivacyLossDistribution.from_mechanism(gauss, 3)
    ea, eb = a.epsilon_bounds(1e-5), b.epsilon_bounds(1e-5)
    assert ea.upper == pytest.approx(eb.upper, rel=1e-3)
    assert ea.lower == pytest.approx(eb.lower, rel=1e-3)


def test_more_steps_amplify_and_stay_below_the_base():
    gauss = plda.Gaussian(1.0)
    base = plda.PrivacyLossDistribution.from_mechanism(gauss).delta_bounds(1.0)
    two = plda.PrivacyLossDistribution.from_mechanism(RandomAllocation(gauss, 2)).delta_bounds(1.0)
    four = plda.PrivacyLossDistribution.from_mechanism(RandomAllocation(gauss, 4)).delta_bounds(1.0)
    assert four.upper < two.lower <= two.upper < base.lower


def test_add_direction_brackets_are_ordered():
    law = RandomAllocation(plda.Gaussian(1.0), 4).privacy_loss("add")
    upper, lower = law.bracket
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    assert np.all(lower.delta(eps) <= upper.delta(eps) * (1 + 1e-9))


@pytest.mark.parametrize(
    "kwargs, error, word",
    [
        ({"num_steps": 0}, ValueError, "num_steps"),
        ({"num_steps": 2.5}, ValueError, "num_steps"),
        ({"num_steps": "3"}, TypeError, "num_steps"),
        ({"num_steps": 3, "num_selected": 4}, ValueError, "num_selected"),
        ({"num_steps": 3, "num_selected": 0}, ValueError, "num_selected"),
        ({"num_steps": 3, "num_selected": 1.5}, ValueError, "num_selected"),
    ],
)
def test_bad_input(kwargs, error, word):
    with pytest.raises(error, match=word):
        RandomAllocation(plda.Gaussian(1.0), **kwargs)


def test_unsupported_bases_are_refused():
    with pytest.raises(ValueError, match="Gaussian and Laplace"):
        RandomAllocation(plda.DiscreteLaplace(1.0), 10)
    with pytest.raises(ValueError, match="sigma"):
        RandomAllocation(plda.Gaussian(0.2), 10)
    with pytest.raises(TypeError, match="mechanism"):
        RandomAllocation("gauss", 10)


def test_comparable_to_poisson_with_rate_one_over_t():
    gauss = plda.Gaussian(1.0)
    alloc = plda.PrivacyLossDistribution.from_mechanism(RandomAllocation(gauss, 8), 2)
    poisson = plda.PrivacyLossDistribution.from_mechanism(plda.PoissonSampled(gauss, 1 / 8), 16)
    a, p = alloc.epsilon_bounds(1e-5), poisson.epsilon_bounds(1e-5)
    assert a.lower <= a.upper
    assert 0.5 * p.upper < a.upper < 1.5 * p.upper


def test_exported():
    assert plda.RandomAllocation is RandomAllocation
    assert plda.epochs.RandomAllocation is RandomAllocation


def _exact_two_steps_add(mu: float, eps: float) -> float:
    """delta(eps), add direction, t = 2: E_Q[(1 - e^eps S/2)_+]; with c = 2 e^-eps - W1 the
    inner expectation is (e^eps / 2) E[(c - W2)_+] = (e^eps / 2)(c P(W2 < c) - E[W2; W2 < c])."""
    mp.mp.dps = 30
    mu, e = mp.mpf(mu), mp.e ** mp.mpf(eps)

    def inner(z1):
        c = 2 / e - mp.e ** (mu * z1 - mu**2 / 2)
        if c <= 0:
            return mp.mpf(0)
        lc = mp.log(c)
        below = c * mp.ncdf((lc + mu**2 / 2) / mu) - mp.ncdf((lc - mu**2 / 2) / mu)
        return e / 2 * below

    return float(mp.quad(lambda z: inner(z) * mp.npdf(z), [-mp.inf, -2, 0, 2, 6, mp.inf]))


def test_add_direction_bracket_contains_exact_two_steps():
    upper, lower = RandomAllocation(plda.Gaussian(1.0), 2).privacy_loss("add").bracket
    for eps in (0.0, 0.5, 1.0):
        exact = _exact_two_steps_add(1.0, eps)
        assert float(lower.delta(eps)) <= exact <= float(upper.delta(eps))
        assert float(upper.delta(eps)) - float(lower.delta(eps)) < 0.02 * exact


def test_shuffled_lower_bound_is_the_allocation_pair():
    """One shuffled epoch's input with the other records at 0 (Chua et al.) is the allocation
    pair: its lower bound is RandomAllocation's, below the exact pair (both directions, t = 2,
    mpmath) and above its maximum-coordinate post-processing."""
    from plda.epochs.shuffled import MaxShiftLaw, ShuffledLowerBound

    lower_mech = plda.Shuffled(plda.Gaussian(1.0), 2).lower_bound_mechanisms()[1]
    assert type(lower_mech) is ShuffledLowerBound  # others at 0 (the other input: -C)
    assert lower_mech.privacy_loss("remove") is RandomAllocation(
        plda.Gaussian(1.0), 2).privacy_loss("remove")
    for eps in (0.5, 1.0):
        bounds = plda.PrivacyLossDistribution.from_mechanism(lower_mech).delta_bounds(eps)
        exact = max(_exact_two_steps(1.0, eps), _exact_two_steps_add(1.0, eps))
        maximum = MaxShiftLaw(mu=1.0, num_steps=2)
        weaker = max(maximum.delta(eps), maximum.reversed().delta(eps))
        assert weaker < bounds.lower <= exact <= bounds.upper


def test_shuffled_lower_bound_falls_back_outside_the_allocation_range():
    from plda.epochs.shuffled import MaxShiftLaw

    # replace-one doubles the shift: mu = 2 / 1.0 is beyond RandomAllocation's 1.45
    lower_mech = plda.Shuffled(plda.Gaussian(1.0), 10).lower_bound_mechanism().under_replace_one()
    assert isinstance(lower_mech.privacy_loss("remove"), MaxShiftLaw)


def _exact_two_steps_laplace(eps0: float, eps: float, direction: str) -> float:
    """delta(eps) of the t = 2 allocation of a unit-scale Laplace with sensitivity eps0. Under
    Q, W = e^L has atoms 1/2 at a = e^-eps0 and a/2 at b = e^eps0 and density
    sqrt(a) x^(-3/2) / 4 between; E[(W - c)_+] = 1 - sqrt(c/b) and E[(c - W)_+] = c - sqrt(c/b)
    for a <= c <= b (1 - c below a, 0 above b; 0 below a, c - 1 above b)."""
    mp.mp.dps = 30
    a, b, e = mp.e ** (-mp.mpf(eps0)), mp.e ** mp.mpf(eps0), mp.e ** mp.mpf(eps)

    def above(c):  # E[(W - c)_+]
        return 1 - c if c < a else (mp.mpf(0) if c > b else 1 - mp.sqrt(c / b))

    def below(c):  # E[(c - W)_+]
        return mp.mpf(0) if c < a else (c - 1 if c > b else c - mp.sqrt(c / b))

    if direction == "remove":  # E_Q[(S/2 - e^eps)_+]
        inner = lambda x: above(2 * e - x) / 2  # noqa: E731
    else:  # E_Q[(1 - e^eps S/2)_+] = (e^eps / 2) E[(2 e^-eps - S)_+]
        inner = lambda x: e / 2 * below(2 / e - x)  # noqa: E731
    points = sorted({a, b, min(max(2 * e - a, a), b), min(max(2 * e - b, a), b),
                     min(max(2 / e - a, a), b), min(max(2 / e - b, a), b)})
    smooth = mp.quad(lambda x: mp.sqrt(a) * x ** mp.mpf(-1.5) / 4 * inner(x), points)
    return float(inner(a) / 2 + a / 2 * inner(b) + smooth)


@pytest.mark.parametrize("eps0", [0.5, 1.5])
def test_laplace_base_bracket_contains_exact_two_steps(eps0):
    epoch = RandomAllocation(plda.Laplace(1.0, eps0), 2)
    for direction in ("remove", "add"):
        upper, lower = epoch.privacy_loss(direction).bracket
        for eps in (0.0, 0.2, 0.5 * eps0):
            exact = _exact_two_steps_laplace(eps0, eps, direction)
            lo, hi = float(lower.delta(eps)), float(upper.delta(eps))
            assert lo <= exact <= hi
            assert hi - lo <= 2e-3 * exact + 1e-12
    bounds = plda.PrivacyLossDistribution.from_mechanism(epoch, 3).epsilon_bounds(1e-5)
    # at most the pure-DP sum (plus the engine's discretization of the losses)
    assert bounds.lower <= bounds.upper < 3 * eps0 * (1 + 1e-3)


@pytest.mark.parametrize("eps0", [7.0, 11.0])
def test_laplace_base_bracket_keeps_the_atom_at_its_smallest_ratio(eps0):
    # at eps0 = 7 the lattice's origin once rounded above e^-eps0, so that the Q-atom 1/2
    # there fell outside every cell: upper laws of mass 1/2 (remove) and 1/4 (add) whose delta
    # at eps = 6.3 was 0.054 against the exact 0.201
    epoch = RandomAllocation(plda.Laplace(1.0, eps0), 2)
    for direction in ("remove", "add"):
        law = epoch.privacy_loss(direction)
        upper, lower = law.bracket
        assert float(np.sum(law.atom_probs)) + law.infinity_mass >= 1 - 1e-9
        for eps in (0.5, eps0 - 0.7):
            exact = _exact_two_steps_laplace(eps0, eps, direction)
            assert float(lower.delta(eps)) <= exact <= float(upper.delta(eps))


@pytest.mark.parametrize("base, steps", [(plda.Laplace(1.0, 6.5), 4), (plda.Laplace(1.0, 7.0), 10),
                                         (plda.Gaussian(0.7), 10)])
def test_upper_law_keeps_every_copy_of_its_charges(base, steps):
    # a partial sum added to itself carries two far components: counted once, the charges left
    # the remove law 1.5e-4 of P-mass short of a probability at eps0 = 6.5, t = 4
    law = RandomAllocation(base, steps).privacy_loss("remove")
    assert float(np.sum(law.atom_probs)) + law.infinity_mass >= 1 - 1e-12


def test_laplace_base_amplifies():
    base = plda.PrivacyLossDistribution.from_mechanism(plda.Laplace(1.0)).epsilon_bounds(1e-5)
    epoch = plda.PrivacyLossDistribution.from_mechanism(
        RandomAllocation(plda.Laplace(1.0), 10)).epsilon_bounds(1e-5)
    assert epoch.upper < base.lower
    with pytest.raises(ValueError, match="at most about 12"):
        RandomAllocation(plda.Laplace(1.0, 30.0), 10)


def test_split_convolution_keeps_the_far_tail():
    """A heavy tail (entries down to 1e-40) convolved: every entry within its certified bound
    of direct summation (non-negative terms: relative error below n u), and the tail far below
    a plain FFT's error floor still accurate."""
    from plda._internal.convolve import convolve_sum, split_convolve

    k = np.arange(3000)
    a = np.exp(-0.5 * (k / 40.0) ** 2) + 1e-12 * np.exp(-k / 100.0)
    a /= a.sum()
    b = np.exp(-k / 30.0)
    b /= b.sum()
    for x, y in ((a, b), (a, a)):
        c, parts = split_convolve(x, y if y is not x else x, 8192)
        reference = np.convolve(x, y)
        bound = np.zeros(len(c))
        for length, _, entry in parts:
            bound[:length] += entry
        assert np.all(np.abs(c - reference) <= bound + 4e-12 * reference)
        # tail entries between 1e-19 and 1e-17: below a plain FFT's error floor (~1e-15),
        # resolved to a few percent by the split
        tail = (reference > 1e-19) & (reference < 1e-17)
        assert tail.any()
        assert np.all(bound[tail] < 0.05 * reference[tail])
        _, _, plain = convolve_sum([(x, y)], 8192)
        assert np.all(plain > reference[tail])


def test_small_delta_stays_finite():
    """The FFT error charges no longer swamp delta = 1e-8 (they sent 2e-8 to +inf per epoch)."""
    epoch = RandomAllocation(plda.Gaussian(0.9), 20)
    assert epoch.privacy_loss("remove").bracket[0].infinity_mass < 1e-9
    pld = plda.PrivacyLossDistribution.from_mechanism(epoch, 3, accuracy=1e-2)
    bounds = pld.epsilon_bounds(1e-8)
    assert bounds.lower <= bounds.upper < 1.01 * bounds.lower


@pytest.mark.parametrize("sigma", [0.7, 0.8])
def test_the_add_direction_near_the_noise_limit_is_finite(sigma):
    """Two steps near sigma = 0.7: the shared lattice (step 0.02) spread 0.76% of each term's
    mass onto ratio 0, and both terms there (5.8e-5) were add-direction loss +inf, so
    epsilon(1e-5) was [5.96, inf]. The add side's own finer lattice, its terms clipped (loss
    only moved up), keeps 7e-12 there; the exact add delta (mpmath) stays below it."""
    epoch = RandomAllocation(plda.Gaussian(sigma), 2)
    upper, lower = epoch.privacy_loss("add").bracket
    assert upper.infinity_mass < 1e-10
    for eps in (0.0, 1.0, 3.0, 5.0):
        exact = _exact_two_steps_add(1 / sigma, eps)
        assert float(lower.delta(eps)) <= exact <= float(upper.delta(eps)) * (1 + 1e-12)
    bounds = plda.PrivacyLossDistribution.from_mechanism(epoch).epsilon_bounds(1e-5)
    assert bounds.lower <= bounds.upper <= bounds.lower * (1 + 2e-3)


@pytest.mark.parametrize("ratio, kwargs, steps", [
    (1e-300, {}, r"num_steps = 1e-07"),  # the lattice had width 0: ZeroDivisionError
    (1e-12, {}, r"num_steps = 1e-07"),  # it asked for 6e10 points: MemoryError
    (5e-8, {}, r"num_steps = 1e-07"),
    (1e-8, {"num_selected": 2}, r"ceil\(num_steps / num_selected\) = 5e-08"),
])
def test_laplace_base_below_float_resolution_is_refused(ratio, kwargs, steps):
    with pytest.raises(plda.UncoveredParametersError, match=r"sensitivity / scale .*" + steps):
        RandomAllocation(plda.Laplace(1.0, ratio), 100, **kwargs)


def test_laplace_base_with_a_small_ratio_keeps_a_small_lattice(small_transforms):
    """At eps0 = 1e-7 the partial sums were capped 12 sqrt(e^eps0 - 1) above their means (the
    term's spread is ~ eps0): transforms of 8e7 points, minutes and gigabytes. The range of one
    term caps them now, and the bracket stays tight and below one use of the base."""
    import plda.epochs.sums as sums

    small_transforms(sums)
    ratio = 1e-7
    lo, hi = math.exp(-ratio), math.exp(ratio)
    w = (hi - lo) / 64
    sum_cells(laplace_cells(ratio, w, lo, 65), 100, w, math.sqrt(math.expm1(ratio)), lo)
    epoch = RandomAllocation(plda.Laplace(1.0, ratio), 100)
    for direction in ("remove", "add"):
        law = epoch.privacy_loss(direction)
        assert len(law.atom_losses) < 10**5
        upper, lower = law.bracket
        base = plda.Laplace(1.0, ratio).privacy_loss(direction)
        for eps in (0.0, ratio / 5):
            lo, hi = float(lower.delta(eps)), float(upper.delta(eps))
            assert 0 < lo <= hi <= float(base.delta(eps))
            assert hi - lo < 0.05 * hi


def test_gaussian_base_below_the_lattice_resolution_is_refused():
    """W spreads by ~mu on a lattice of step >= 0.02: the cells' certified rounding, charged as
    mass ~ u t / mu^2, took the upper law's mass past 1 (1.99 at mu = 1e-7 over 100 steps), to
    inf, and at mu = 1e-12 to NaN (a bare "curve_epsilons ... without NaN" from the Rényi
    cap). Refused below sqrt(1e-13 t); Shuffled's lower pair falls back to the largest batch."""
    with pytest.raises(plda.UncoveredParametersError, match=r"sqrt\(1e-13 \* num_steps\)"):
        RandomAllocation(plda.Gaussian(1.0, 1e-12), 100)
    mu = 1.01 * math.sqrt(1e-13 * 100)
    law = RandomAllocation(plda.Gaussian(1.0, mu), 100).privacy_loss("remove")
    assert law.atom_probs.sum() + law.infinity_mass < 1 + 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.PLDAWarning)
        epoch = plda.PrivacyLossDistribution.from_mechanism(
            plda.Shuffled(plda.Gaussian(1.0, 1e-12), 100)).delta_bounds([0.0, 1e-12])
        base = plda.PrivacyLossDistribution.from_mechanism(
            plda.Gaussian(1.0, 1e-12)).delta_bounds([0.0, 1e-12])
    assert np.all(epoch.lower <= epoch.upper) and np.all(epoch.upper <= base.upper)


@pytest.mark.parametrize("num_steps", [2, 20, 1000])
def test_the_documented_smallest_mu_is_accepted(num_steps):
    """``sqrt(1e-13 num_steps)`` is in the range, but its square rounds below
    ``1e-13 num_steps`` at 2 and 20 steps: the check on ``mu * mu`` refused the edge."""
    mu = math.sqrt(1e-13 * num_steps)
    assert allocation_supported(mu, num_steps)
    plda.RandomAllocation(plda.Gaussian(1.0, mu), num_steps)  # no UncoveredParametersError
    with pytest.raises(plda.UncoveredParametersError, match="at least sqrt"):
        plda.RandomAllocation(plda.Gaussian(1.0, mu * (1 - 1e-12)), num_steps)
