"""Inverting increasing functions (plda._internal.roots)."""

from __future__ import annotations

import numpy as np

from plda._internal.roots import increasing_inverse


def test_inverts_an_increasing_function_far_from_the_first_bracket():
    target = np.array([-1e6, -3.0, 0.0, 2.5, 1e9])
    y = increasing_inverse(lambda x: x**3 + x, lambda x: 3 * x**2 + 1, target)
    assert np.allclose(y**3 + y, target, rtol=1e-14, atol=1e-12)


def test_a_useless_slope_still_converges_by_bisection():
    target = np.array([0.3, 7.0])
    y = increasing_inverse(np.expm1, lambda x: np.full_like(x, 1e-300), target)
    assert np.allclose(np.expm1(y), target, rtol=1e-12)
