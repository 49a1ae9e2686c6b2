"""Atoms of a law inside its cells, for the optimistic version: merged with their own cell and
the nearest cells on one side onto a grid point (:func:`atom_groups`) instead of being rounded
down alone. The derivation: docs/concepts/discretization.md, "Atoms off the
grid".
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal.floats import UNIT_ROUNDOFF, dot
from plda.discretization.cells import MARGIN
from plda.mechanisms.law import PrivacyLossLaw


def atom_cells(losses: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
    """The cell of each atom on a grid, and whether it is taken to be on a grid point.

    An atom within 1e-9 steps of a grid point is on it (float inputs): the optimistic version
    puts it there and charges the move as a loss error; the others lie inside their cell.

    Parameters
    ----------
    losses
        The atoms' losses.
    step
        The grid step.

    Returns
    -------
    tuple of numpy.ndarray
        ``(index, near)``: the grid index of each atom's cell (of its grid point where
        ``near``), and the mask of the atoms on a grid point.
    """
    ratio = losses / step
    near = np.abs(ratio - np.round(ratio)) <= 1e-9
    index = np.where(near, np.round(ratio), np.floor(ratio)).astype(np.int64)
    return index, near


def atoms_in_cells(law: PrivacyLossLaw, step: float, lo: int, mid: int):
    """The atoms inside the fine cells ``lo..mid-1``, with their moments about their cells.

    What :func:`~plda.discretization.optimistic.continuous_lower` merges (:func:`atom_groups`),
    and the mask of the other atoms.

    Rounded down alone, an atom at ``l`` in cell ``[l_j, l_{j+1})`` costs ``e^{eps - l} p
    (l - l_j)`` of delta, first order in the step (a subsampled Laplace step's atom at its top
    loss held the lower bound 4% low over 5000 steps); as more content of its cell, with
    ``u = p (1 - e^{-(l - l_j)})`` and ``v = p (e^{l_{j+1} - l} - 1)``, it is merged onto a grid
    point. ``l - l_j`` is taken a few ulps of ``|l|`` low, so ``u`` is rounded down and ``v``
    up, as the balances need; an atom on a grid point (:func:`atom_cells`) is left where it is.

    Parameters
    ----------
    law
        The privacy-loss law.
    step
        The grid step.
    lo
        The grid index of the first fine cell.
    mid
        The grid index past the last fine cell.

    Returns
    -------
    tuple
        ``((cells, p, u, v) or None, mask of the atoms left to be rounded down alone)``, the
        cells counted from ``lo``.
    """
    losses, probs = law.atom_losses, law.atom_probs
    index, near = atom_cells(losses, step)
    inside = (probs > 0) & ~near & (index >= lo) & (index < mid)
    if not inside.any():
        return None, probs > 0
    j, mass = index[inside], probs[inside]
    slack = 8 * UNIT_ROUNDOFF * (np.abs(losses[inside]) + np.abs(j * step) + step)
    offset = np.clip(losses[inside] - j * step - slack, 0.0, step)
    with np.errstate(over="ignore"):
        v = mass * np.expm1(step - offset) * (1 + 8 * UNIT_ROUNDOFF)
    u = mass * -np.expm1(-offset) * (1 - 8 * UNIT_ROUNDOFF)
    return (j - lo, mass, u, v), (probs > 0) & ~inside


#: the largest gap, in loss units, between an atom and the cells merged with it (their factors
#: e^{gap} stay far from overflow)
ATOM_REACH = 50.0
#: atoms grouped per law, the heaviest first (each costs a pass over the cells); any others are
#: rounded down alone
MAX_GROUPED_ATOMS = 16


def atom_groups(step, atoms, p_low, p_high, u_low, v_high):
    """Atoms merged with their own cell and the nearest cells on one side, onto a grid point.

    An atom at ``l`` inside cell ``[l_j, l_{j+1})`` rounded down alone costs ``e^{eps - l} p
    (l - l_j)`` of delta, first order in the step; an atom holding much of a law's mass (a
    subsampled Laplace step puts 80% of its mass on two) cannot be balanced by its neighbours'
    pairing alone. Instead it is merged with the content of its own cell and of the cells
    above ``l_{j+1}``, the nearest first (whole cells, then a fraction of the last), until
    their surplus pays the deficit ``v`` of the atom and its cell (the group's loss is then at
    least ``l_{j+1}``); or with its own cell and the cells below ``l_j``, the nearest first,
    until their deficit uses up the surplus ``u`` of the atom and its cell (loss at least
    ``l_j``): whichever loses less of the mean loss, estimated. A group balanced this way loses
    only its spread, second order in its width; the nearest cells keep it narrow (a slice of
    *every* cell, as before, lost about ``p h D``, ``D`` the law's width, and held
    ``PoissonSampled(Laplace(1), 0.01, group_size=4)`` to a 5x finer grid). The own cell goes
    with the atom: with its neighbours taken, it would have nothing left to pair with. A
    fraction of a cell is a randomized post-processing whose moments are the cell's times the
    fraction; the rest of each cell goes on to pairing. Surpluses are rounded down and
    deficits up; an atom that neither side can balance is rounded down alone.

    Parameters
    ----------
    step
        The grid step.
    atoms
        ``(cells, p, u, v)``: each atom's cell (counted from the first), its P-mass and its
        ``u`` (rounded down) and ``v`` (rounded up) moments about its cell.
    p_low, p_high, u_low, v_high
        The cells' moments (see :func:`continuous_lower`).

    Returns
    -------
    tuple
        The atoms' masses on the ``n + 1`` grid points, the four moment arrays of what is left
        of the cells, and the fraction of each cell left.
    """
    n = len(p_low)
    p_low, p_high, u_low, v_high = (np.array(x, dtype=float) for x in (p_low, p_high, u_low,
                                                                        v_high))
    out = np.zeros(n + 1)
    kept = np.ones(n)
    cells, mass, atom_u, atom_v = atoms
    for rank, k in enumerate(np.argsort(-mass, kind="stable")):
        j, p_a = int(cells[k]), float(mass[k]) * (1 - 8 * UNIT_ROUNDOFF)
        if rank >= MAX_GROUPED_ATOMS:
            out[j] += p_a  # rounded down alone
            continue
        options = []
        # up: the atom's own cell (its deficit about l_{j+1} is v_j), then cells m > j (d = m -
        # j - 1 steps above l_{j+1}), the nearest first; a cell's surplus about l_{j+1} is
        # p (1 - e^{-dh}) + e^{-dh} u. The own cell goes with the atom: left alone, with its
        # neighbours taken, it would have nothing to pair with
        d = np.arange(n - j - 1) * step
        reach = d <= ATOM_REACH
        surplus = (p_low[j + 1 :] * -np.expm1(-d) + u_low[j + 1 :] * np.exp(-d)) * reach
        surplus *= 1 - MARGIN
        taken = _nearest_first(surplus, (float(atom_v[k]) + float(v_high[j])) * (1 + MARGIN))
        if taken is not None:
            taken = np.concatenate(([1.0], taken))
            # E_P[L] lost, about: the atom and its cell move up (a gain), the cells above down
            own = p_low[j] * step - _offsets(p_low[j : j + 1], u_low[j : j + 1])[0]
            above = p_low[j + 1 :] * d + _offsets(p_low[j + 1 :], u_low[j + 1 :])
            lost = dot(taken[1:], above) - float(atom_v[k]) - own
            options.append((lost, j + 1, slice(j, n), taken))
        # down: the atom's own cell (its surplus about l_j is u_j), then cells m < j (d = j - m -
        # 1 steps below l_j), the nearest first; a cell's deficit about l_j is e^{dh} v +
        # (e^{dh} - 1) p, paid by the surpluses
        d = np.arange(j - 1, -1, -1) * step
        reach = d <= ATOM_REACH
        deficit = (v_high[:j] * np.exp(np.minimum(d, ATOM_REACH))
                   + p_high[:j] * np.expm1(np.minimum(d, ATOM_REACH))) * reach
        deficit *= 1 + MARGIN
        paid = (float(atom_u[k]) + float(u_low[j])) * (1 - MARGIN)
        if paid > 0 and np.all(np.isfinite(deficit)) and j > 0:
            taken = _nearest_first(deficit[::-1], paid, exact=False)
            if taken is not None:
                taken = np.concatenate((taken[::-1], [1.0]))
                # E_P[L] lost, about: the atom and its cell move down, the cells below up
                own = _offsets(p_low[j : j + 1], u_low[j : j + 1])[0]
                below = p_low[:j] * (d + step) - _offsets(p_low[:j], u_low[:j])
                lost = float(atom_u[k]) + own - dot(taken[:-1], below)
                options.append((lost, j, slice(0, j + 1), taken))
        if not options:
            out[j] += p_a  # rounded down alone
            continue
        _, point, part, taken = min(options, key=lambda option: option[0])
        out[point] += p_a + dot(taken, p_low[part])
        for x in (p_low, p_high, u_low, v_high, kept):
            x[part] *= 1 - taken
    return out, (p_low, p_high, u_low, v_high), kept


def _nearest_first(balance: np.ndarray, need: float, exact: bool = True) -> np.ndarray | None:
    """Fractions of the cells, the nearest first, whose ``balance`` sums to ``need``: whole
    cells while the running sum stays below it, a fraction of the next. With ``exact`` the sum
    must reach ``need`` (None if all of them fall short); otherwise whatever they hold, up to
    it, is taken."""
    if not (need > 0 and math.isfinite(need)):
        return None
    running = np.cumsum(balance)
    if running.size == 0 or (exact and not running[-1] >= need):
        return None
    before = running - balance
    with np.errstate(divide="ignore", invalid="ignore"):
        taken = np.where(balance > 0, (need - before) / balance, 0.0)
    taken = np.clip(np.nan_to_num(taken, nan=0.0), 0.0, 1.0)
    taken[before >= need] = 0.0
    if exact:  # the fraction of the last cell rounded up: the balance must hold
        last = int(np.argmax(running >= need))
        taken[last] = min(1.0, taken[last] * (1 + 4 * UNIT_ROUNDOFF))
    else:  # rounded down: the surplus must not be exceeded
        taken *= 1 - 4 * UNIT_ROUNDOFF
    return taken


def _offsets(p: np.ndarray, u: np.ndarray) -> np.ndarray:
    """About ``sum p (l - l_j)`` of each cell from its mass and surplus (``u = sum p (1 -
    e^{-(l - l_j)})``): an estimate, used only to choose between the two merges."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(p > 0, np.minimum(u / p, 1 - 1e-12), 0.0)
    return -p * np.log1p(-ratio)
