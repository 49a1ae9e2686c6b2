"""Exact references for the imported guarantees (issue 29), in mpmath and independent of plda's
construction: the tradeoff function of a privacy profile built by brute force (every line and
every crossing, no envelope algorithm), its pair's atoms, their k-fold composition by exact
enumeration, the Kairouz–Oh–Viswanath optimal composition, the Gaussian profile and the
Rényi-to-(eps, delta) conversion."""

from __future__ import annotations

import mpmath


def profile_lines(epsilons, deltas):
    """The lines ``beta = c - s alpha`` whose maximum (with 0) is ``max_i f_(eps_i, delta_i)``."""
    lines = []
    for e, d in zip(epsilons, deltas, strict=True):
        e, d = mpmath.mpf(e), mpmath.mpf(d)
        lines.append((mpmath.exp(e), 1 - d))  # 1 - d - e^e alpha
        lines.append((mpmath.exp(-e), mpmath.exp(-e) * (1 - d)))  # e^-e (1 - d - alpha)
    return lines


def tradeoff_atoms(lines):
    """``(atoms, inf_p, neg_inf_q)`` of the pair whose tradeoff is ``max(0, lines)`` on [0, 1]:
    each linear piece of slope ``-s`` over a width ``w`` is the loss ``-log s`` with P-mass
    ``w``; flat pieces are P-mass at ``+inf``, ``1 - f(0)`` Q-mass at ``-inf``."""
    lines = [(s, c) for s, c in lines]

    def f(x):
        return max([mpmath.mpf(0)] + [c - s * x for s, c in lines])

    xs = {mpmath.mpf(0), mpmath.mpf(1)}
    for i, (s, c) in enumerate(lines):
        if 0 < c / s < 1:
            xs.add(c / s)
        for s2, c2 in lines[i + 1:]:
            if s != s2:
                x = (c - c2) / (s - s2)
                if 0 < x < 1:
                    xs.add(x)
    xs = sorted(xs)
    atoms, inf_p = {}, mpmath.mpf(0)
    for a, b in zip(xs[:-1], xs[1:], strict=True):
        width = b - a  # pieces narrower than the precision are crossings seen twice
        if width < mpmath.mpf(10) ** (-mpmath.mp.dps + 10):
            continue
        slope = (f(a) - f(b)) / width
        if slope <= mpmath.mpf(10) ** (-mpmath.mp.dps + 10):
            inf_p += width
            continue
        loss = -mpmath.log(slope)
        key = mpmath.nstr(loss, 25)
        atoms[key] = (loss, atoms.get(key, (loss, 0))[1] + width)
    return list(atoms.values()), inf_p, 1 - f(mpmath.mpf(0))


def composed_delta(atoms, inf_p, count, eps):
    """``delta(eps)`` of ``count`` compositions of the atom law: exact enumeration (the mass at
    infinity ``1 - (1 - inf_p)^count``, exactly ``inf_p`` for one step)."""
    law = {("0",): (mpmath.mpf(0), mpmath.mpf(1))}
    for _ in range(count):
        nxt = {}
        for (l1, p1) in law.values():
            for loss, p in atoms:
                total = l1 + loss
                key = mpmath.nstr(total, 25)
                nxt[key] = (total, nxt.get(key, (total, 0))[1] + p1 * p)
        law = nxt
    eps = mpmath.mpf(eps)
    finite = mpmath.fsum(p * -mpmath.expm1(eps - loss) for loss, p in law.values() if loss > eps)
    infinite = inf_p if count == 1 else -mpmath.expm1(count * mpmath.log1p(-inf_p))
    return infinite + finite


def profile_delta(epsilons, deltas, count, eps):
    """``delta(eps)`` of ``count`` runs of the tight pair of a privacy profile (its mass at
    ``+inf`` is ``min delta``: ``f`` reaches 0 at ``1 - min delta``, set exactly here)."""
    with mpmath.workdps(120):  # pieces as narrow as 1e-40 (a delta of 1e-38) are resolved
        atoms, _, _ = tradeoff_atoms(profile_lines(epsilons, deltas))
        return +composed_delta(atoms, mpmath.mpf(min(deltas)), count, eps)


def polyline_delta(xs, ys, count, eps, *, reverse=False):
    """``delta(eps)`` of ``count`` runs of the pair whose outcomes are the segments of the
    polyline through ``(xs, ys)`` (floats, read exactly), from ``alpha = 0`` to ``(1, 0)``;
    with ``reverse``, of the reversed pair (losses negated, read under ``Q``)."""
    xs, ys = [mpmath.mpf(float(x)) for x in xs], [mpmath.mpf(float(y)) for y in ys]
    atoms, inf_p, neg_inf_q = [], mpmath.mpf(0), 1 - ys[0]
    for x0, y0, x1, y1 in zip(xs, ys, xs[1:], ys[1:], strict=False):
        if y0 == y1:
            inf_p += x1 - x0
        elif reverse:  # P-mass of the reversed pair: the Q-mass of the segment
            atoms.append((mpmath.log((y0 - y1) / (x1 - x0)), y0 - y1))
        else:
            atoms.append((-mpmath.log((y0 - y1) / (x1 - x0)), x1 - x0))
    return composed_delta(atoms, neg_inf_q if reverse else inf_p, count, eps)


def kov_delta(e0, d0, count, eps):
    """Optimal composition of ``count`` ``(e0, d0)``-DP steps (Kairouz, Oh & Viswanath 2015,
    Thm. 3.3, as the hockey stick of the k-fold randomized response)."""
    e0, d0, eps = mpmath.mpf(e0), mpmath.mpf(d0), mpmath.mpf(eps)
    keep = (1 - d0) ** count
    total = 1 - keep
    for i in range(count + 1):
        loss = (count - 2 * i) * e0
        if loss > eps:
            weight = (mpmath.binomial(count, i) * mpmath.exp(e0 * (count - i))
                      / (1 + mpmath.exp(e0)) ** count)
            total += keep * weight * -mpmath.expm1(eps - loss)
    return total


def gaussian_delta(mu, eps):
    """``delta(eps)`` of ``mu``-GDP: ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``."""
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    if mu == 0:
        return mpmath.mpf(0)
    return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


def cks_delta(alpha, rdp_epsilon, eps):
    """One order's conversion ``exp((a-1)(eps_a - eps)) (1 - 1/a)^(a-1) / a`` (Canonne, Kamath &
    Steinke 2020, Prop. 12), at most 1."""
    a, r, e = mpmath.mpf(alpha), mpmath.mpf(rdp_epsilon), mpmath.mpf(eps)
    return min(mpmath.mpf(1), mpmath.exp((a - 1) * (r - e)) * (1 - 1 / a) ** (a - 1) / a)


def zcdp_delta(rho, eps, orders=None):
    """The zCDP conversion at the best of many orders (any order is valid: an upper bound on
    the conversion's optimum, which plda must not exceed by more than its grid of orders)."""
    rho = mpmath.mpf(rho)
    if orders is None:
        orders = [1 + mpmath.mpf(10) ** (k / mpmath.mpf(100)) for k in range(-600, 601)]
    return min(cks_delta(a, rho * a, eps) for a in orders)
