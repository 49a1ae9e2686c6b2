"""Exact tradeoff curves of finite privacy-loss laws in mpmath (shared by the tradeoff tests;
not a test module).

A finite law (atoms ``l_i`` with ``P``-masses ``p_i``, ``P``-mass ``inf`` at ``+inf``) has the
profile ``delta(x) = max_k (A_k - x B_k)`` in ``x = e^eps``, one line per threshold set
``{L >= l_k}`` (``A_k`` its ``P``-mass, ``B_k`` its ``Q``-mass): the maximum over the lines of
several laws is their common profile ``max_d delta_d``. The symmetric tradeoff curve
``f(alpha) = sup_(eps >= 0) max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha))``
(Dong, Roth & Su 2019, Prop. 2.12) is then a supremum of a concave piecewise-linear function
(in ``x`` for the steep part, in ``y = 1/x`` for the flat part), attained at ``x = 1`` or at a
vertex of the lines' upper envelope: computed exactly from the envelope.
"""

from __future__ import annotations

import itertools
import math

import mpmath

import plda

#: working precision of every computation here (the module leaves mpmath's global one alone)
PRECISION = mpmath.workdps(40)


class Law:
    """A finite privacy-loss law in mpmath: ``(loss, P-mass)`` atoms and ``P``-mass at ``+inf``."""

    def __init__(self, atoms, infinity=0):
        self.atoms = sorted((mpmath.mpf(loss), mpmath.mpf(p)) for loss, p in atoms)
        self.infinity = mpmath.mpf(infinity)

    @PRECISION
    def composed(self, count: int) -> Law:
        """The law of ``count`` independent runs (multinomial over the atoms' counts)."""
        finite = 1 - self.infinity
        atoms = []
        for counts in itertools.product(range(count + 1), repeat=len(self.atoms)):
            if sum(counts) != count:
                continue
            ways = math.factorial(count) // math.prod(math.factorial(c) for c in counts)
            loss = mpmath.fsum(c * a[0] for c, a in zip(counts, self.atoms, strict=True))
            p = ways * mpmath.fprod(a[1] ** c for c, a in zip(counts, self.atoms, strict=True))
            atoms.append((loss, p))
        return Law(atoms, 1 - finite**count)

    @PRECISION
    def lines(self):
        """``(A_k, B_k)`` of every threshold set, the empty one (``A = inf``, ``B = 0``) too."""
        out = [(self.infinity, mpmath.mpf(0))]
        a, b = self.infinity, mpmath.mpf(0)
        for loss, p in reversed(self.atoms):
            a += p
            b += p * mpmath.exp(-loss)
            out.append((a, b))
        return out

    @PRECISION
    def delta(self, eps) -> mpmath.mpf:
        """``delta(eps) = sum p_i (1 - e^(eps - l_i))_+ + inf``."""
        e = mpmath.mpf(eps)
        return self.infinity + mpmath.fsum(p * (1 - mpmath.exp(e - loss))
                                           for loss, p in self.atoms if loss > e)


@PRECISION
def two_point(high, low) -> Law:
    """The pair with losses ``high > 0 > low`` (``E_Q[e^L] = 1`` fixes the masses)."""
    high, low = mpmath.mpf(high), mpmath.mpf(low)
    up, down = mpmath.expm1(-low), -mpmath.expm1(-high)
    return Law([(low, down / (up + down)), (high, up / (up + down))])


@PRECISION
def randomized_response(epsilon, delta=0) -> Law:
    """``RR_(eps, delta)``: ``+-eps`` with ``(1 - delta) e^(+-eps) / (1 + e^(+-eps))``."""
    e, d = mpmath.mpf(epsilon), mpmath.mpf(delta)
    if e == 0:
        return Law([(0, 1 - d)], d)
    return Law([(-e, (1 - d) / (1 + mpmath.exp(e))), (e, (1 - d) / (1 + mpmath.exp(-e)))], d)


def from_atom_law(law) -> Law:
    """A plda ``AtomLaw`` read exactly as the floats it holds (a pair defined by its losses
    is better read with :func:`two_point`)."""
    atoms = [(float(loss), float(p)) for loss, p in zip(law.atom_losses, law.atom_probs,
                                                         strict=True)]
    return Law(atoms, float(law.infinity_mass))


def _upper_vertices(lines):
    """Abscissas ``>= 1`` of the vertices of ``max_j (c_j + s_j t)`` (lines ``(s_j, c_j)``)."""
    best = {}
    for s, c in lines:  # one line per slope: the highest
        if s not in best or c > best[s]:
            best[s] = c
    hull = []
    for s, c in sorted(best.items()):
        while len(hull) >= 2:
            (s1, c1), (s2, c2) = hull[-2], hull[-1]
            # the middle line is below the other two where they cross: drop it
            if (c - c1) * (s2 - s1) >= (c2 - c1) * (s - s1):
                hull.pop()
            else:
                break
        hull.append((s, c))
    return [(c1 - c2) / (s2 - s1) for (s1, c1), (s2, c2) in itertools.pairwise(hull)]


class Curve:
    """Exact symmetric tradeoff curve of the common profile ``max_d delta_d`` of finite laws.

    Parameters
    ----------
    laws : list of Law
        Every direction (and every realized composition) whose profiles are maximized.
    """

    @PRECISION
    def __init__(self, laws, *, one_direction=False):
        lines = [line for law in laws for line in law.lines()]
        if one_direction:
            # one direction's curve: the flat form over every eps, none of the steep lines
            # (they are the other direction's flat ones)
            ys = [y for y in _upper_vertices([(a, -b) for a, b in lines]) if y > 0]
            self.steep = []
            self.flat = [(y, max(a * y - b for a, b in lines)) for y in ys]
            return
        # steep part, in x = e^eps >= 1: 1 - delta(x) - alpha x, lines c = A, s = -B
        xs = [mpmath.mpf(1)] + [x for x in _upper_vertices([(-b, a) for a, b in lines]) if x > 1]
        self.steep = [(x, max(a - x * b for a, b in lines)) for x in xs]
        # flat part, in y = e^-eps <= 1: y (1 - alpha) - y delta(1/y) = y (1 - alpha) - max(A y - B)
        ys = [mpmath.mpf(1)] + [y for y in _upper_vertices([(a, -b) for a, b in lines])
                                if 0 < y < 1]
        self.flat = [(y, max(a * y - b for a, b in lines)) for y in ys]

    @PRECISION
    def __call__(self, alpha) -> mpmath.mpf:
        """``f(alpha)``, ``alpha`` in ``[0, 1]`` (``alpha = 0``: the supremum as ``x -> inf``
        is not taken, pass a positive ``alpha``)."""
        alpha = mpmath.mpf(alpha)
        steep = [1 - d - alpha * x for x, d in self.steep]
        flat = [y * (1 - alpha) - d for y, d in self.flat]
        return max([mpmath.mpf(0), *steep, *flat])


# ---------------------------------------------------------------- plda's finite mechanisms
def _pair_law(mechanism, direction: str) -> Law:
    # a two-point pair is fixed by its losses: its masses formed here, exactly
    low, high = (float(x) for x in mechanism.privacy_loss(direction).atom_losses)
    return two_point(high, low)


def realized_laws(mechanism, count: int) -> list[Law]:
    """Both directions of every realized composition of ``count`` runs of ``mechanism``
    (:class:`plda.ApproximateDP`: its own randomized response), exactly: their common profile
    is below the mechanism's, so its curve is above the mechanism's and below every certified
    upper bound plda gives."""
    if isinstance(mechanism, plda.ApproximateDP):
        return upper_laws(mechanism, count)
    # a pair moved inward to nothing (the trivial pair) adds no line above the others
    pairs = [m for m in mechanism.lower_bound_mechanisms()
             if m.privacy_loss("remove").atom_losses.size == 2]
    return [_pair_law(m, d).composed(count) for m in pairs for d in ("remove", "add")]


def upper_laws(mechanism, count: int) -> list[Law] | None:
    """Both directions of the law plda bounds ``count`` runs of ``mechanism`` with (its curve is
    below the mechanism's and above every certified lower bound), when it is finite: the
    randomized response of an ``epsilon``-DP guarantee; None for a bounded-range law."""
    if isinstance(mechanism, plda.ApproximateDP):
        law = randomized_response(mechanism.epsilon, mechanism.delta)
    elif isinstance(mechanism, (plda.PermuteAndFlip, plda.ReportNoisyMax)) and (
            getattr(mechanism, "noise", "exponential") != "gumbel"):
        law = randomized_response(mechanism.epsilon)
    else:
        return None
    return [law.composed(count)] * 2  # randomized response reads the same both ways
