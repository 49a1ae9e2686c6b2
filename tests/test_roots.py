"""Inverting increasing functions (plda._internal.roots)."""

from __future__ import annotations

import warnings

import numpy as np

from plda._internal.roots import convex_increasing_inverse, increasing_inverse


def test_inverts_an_increasing_function_far_from_the_first_bracket():
    target = np.array([-1e6, -3.0, 0.0, 2.5, 1e9])
    y = increasing_inverse(lambda x: x**3 + x, lambda x: 3 * x**2 + 1, target)
    assert np.allclose(y**3 + y, target, rtol=1e-14, atol=1e-12)


def test_a_useless_slope_still_converges_by_bisection():
    target = np.array([0.3, 7.0])
    y = increasing_inverse(np.expm1, lambda x: np.full_like(x, 1e-300), target)
    assert np.allclose(np.expm1(y), target, rtol=1e-12)


def test_rounding_noise_at_the_root_does_not_restart_the_bisection():
    # a log-sum-exp whose value carries a few ulps of noise: once the Newton step is below the
    # tolerance the point is converged, even when the noise puts the step on the bracket's end
    # (it used to bisect again from the far end, and ran all 100 iterations)
    shifts = np.array([1.25, 2.5, 3.75, 5.0])
    offsets = np.log([0.17, 0.014, 0.0005, 6e-6]) - shifts**2 / 2
    calls = []

    def function(x):
        calls.append(1)
        return np.log(np.exp(offsets + np.multiply.outer(x, shifts)).sum(axis=-1))

    def slope(x):
        e = np.exp(offsets + np.multiply.outer(x, shifts))
        return (e * shifts).sum(axis=-1) / e.sum(axis=-1)

    target = np.linspace(-5.0, 60.0, 20001)
    y = increasing_inverse(function, slope, target)
    assert np.allclose(function(y), target, rtol=4e-15, atol=4e-15)
    assert len(calls) < 40


def test_convex_inverse_from_the_right_needs_no_bracket():
    # softplus-like log-sum-exps with slopes from 1e-100 to 3: flat for a very long way on the
    # left; Newton from the right never overshoots a convex function, so it needs no bracket
    shifts = np.array([1e-100, 1.0, 3.0])
    offsets = np.log([0.5, 0.3, 0.2])

    def function(x):
        return np.logaddexp.reduce(offsets + np.multiply.outer(x, shifts), axis=-1)

    def slope(x):
        t = offsets + np.multiply.outer(x, shifts)
        e = np.exp(t - t.max(axis=-1, keepdims=True))
        return (e * shifts).sum(axis=-1) / e.sum(axis=-1)

    target = np.array([-0.69, -0.6, 0.0, 2.0, 50.0, -0.7])
    start = ((target[:, None] - offsets) / shifts).min(axis=1)  # the largest line's inverse
    y = convex_increasing_inverse(function, slope, target, start)
    assert np.allclose(function(y[:-1]), target[:-1], rtol=1e-14, atol=1e-14)
    assert y[-1] < -1e97  # below the flat line's level log 0.5: the root is ~ -1e98


def test_a_table_gives_the_same_roots_inside_and_outside_its_range():
    from plda._internal.roots import tabulated_inverse

    def cube(x):
        return x**3 + x

    def slope(x):
        return 3 * x**2 + 1

    grid = np.linspace(-2.0, 2.0, 33)
    target = np.array([[-1e6, -3.0, 0.0], [cube(0.5), 2.5, 1e9]])  # a grid point, and beyond
    y = tabulated_inverse(cube, slope, target, grid, cube(grid))
    assert y.shape == target.shape
    assert np.allclose(cube(y), target, rtol=1e-14, atol=1e-12)
    assert np.allclose(y, increasing_inverse(cube, slope, target), rtol=1e-14, atol=1e-15)
    assert float(tabulated_inverse(cube, slope, np.float64(2.0), grid, cube(grid))) == 1.0


def test_the_stragglers_alone_keep_iterating():
    """Each element stops at its own convergence: one root found by bisection (its slope is
    useless there) costs passes over that element only, not over the 999 others."""
    calls = []

    def function(x):
        calls.append(len(x))
        return np.expm1(x)

    def slope(x):
        return np.where(np.abs(x - 4.5) < 0.3, 1e-300, np.exp(x))

    target = np.append(np.linspace(0.1, 20.0, 999), np.expm1(4.5))
    y = increasing_inverse(function, slope, target)
    assert np.allclose(np.expm1(y), target, rtol=1e-13)
    newton = calls[-40:]  # the bisected element needs some 50 passes; the others a few
    assert newton[-1] == 1 and sum(calls) < 20 * len(target)


def test_a_flat_noisy_function_stops_at_its_rounding_level():
    """Slope 1e-2 and rounding noise of 1e-16 in the values: x is known to 1e-14 at best, and
    the inverse stops there instead of iterating to its pass limit."""
    calls = []

    def flat(x):
        calls.append(len(x))
        return (0.01 * x + 1.0) - 1.0  # rounded to the ulps of 1

    target = np.linspace(0.001, 0.03, 500)
    y = increasing_inverse(flat, lambda x: np.full_like(x, 0.01), target)
    assert np.allclose(0.01 * y, target, rtol=0, atol=1e-15)
    assert sum(calls) < 20 * len(target)


def test_a_subnormal_slope_takes_a_bisection_step_without_an_overflow_warning():
    """f / slope overflowed (RuntimeWarning 'overflow encountered in divide', seen with
    GaussianDoubleMixture at shift / sigma 1e6): the infinite step leaves the bracket, so a
    bisection step is taken, and the warning only leaked."""

    def function(y):
        return np.where(np.abs(y) < 1, 1e-310 * y, y)

    def slope(y):
        return np.where(np.abs(y) < 1, 1e-310, 1.0)

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        y = increasing_inverse(function, slope, np.array([-0.5]))
    assert abs(y[0] + 1) < 1e-6  # the jump of function at -1 holds the target


def _doubling_reference(function, target):
    """The bracket the doubling loop grows: ends -(2^(k+1) - 1) and 2^(k+1) - 1."""
    lo, hi = np.full(target.shape, -1.0), np.full(target.shape, 1.0)
    for _ in range(1100):
        low, high = function(lo) > target, function(hi) < target
        if not (low.any() or high.any()):
            break
        lo, hi = np.where(low, 2 * lo - 1, lo), np.where(high, 2 * hi + 1, hi)
    return lo, hi


def test_the_bracket_is_found_in_few_passes_and_is_the_doubling_one():
    """Probing k = 0, 1, 3, 7, ... and bisecting on k gives the bracket doubling grew (so the
    same Newton start, the same roots), for roots at 1e10 in about 12 passes instead of 70."""
    rng = np.random.default_rng(5)
    target = np.concatenate([rng.normal(size=400) * 10.0 ** rng.integers(-3, 300, 400),
                             [0.0, 1.0, -1.0, 1e308, -1e308, np.inf, -np.inf]])
    functions = [lambda x: x, lambda x: 1e10 * x - 5e19, np.arctan, np.cbrt,
                 lambda x: np.sinh(x / 1e5)]
    for function in functions:
        with np.errstate(all="ignore"):
            lo, hi = _doubling_reference(function, target)
            y = increasing_inverse(function, lambda x: np.ones_like(x), target)
        inside = np.isfinite(target) & np.isfinite(lo) & np.isfinite(hi)
        assert np.all((y[inside] >= lo[inside]) & (y[inside] <= hi[inside]))
    calls = []
    root = 1e10 * np.linspace(1, 2, 1000)
    increasing_inverse(lambda x: calls.append(len(x)) or 3 * x, lambda x: np.full_like(x, 3.0),
                       3 * root)
    assert len(calls) <= 30  # 2 x 35 doublings before: (12 per end) + Newton

