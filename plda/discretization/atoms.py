"""Atoms of a law inside its cells, for the optimistic version: merged with a thin
proportional slice of the cells on one side onto a grid point (:func:`atom_groups`) instead
of being rounded down alone. The derivation: docs/concepts/discretization.md, "Atoms off the
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
    """Atoms merged with a thin proportional slice of the cells on one side, onto a grid point.

    An atom at ``l`` inside cell ``[l_j, l_{j+1})`` rounded down alone costs ``e^{eps - l} p
    (l - l_j)`` of delta, first order in the step; an atom holding much of a law's mass (a
    subsampled Laplace step puts 80% of its mass on two) cannot be balanced by its neighbours.
    Instead it is merged with the fraction ``phi`` of *every* cell above ``l_{j+1}`` (within
    ``ATOM_REACH``) whose surplus pays the atom's deficit ``v`` (the group's loss is then at
    least ``l_{j+1}``), or with the fraction of every cell below ``l_j`` whose deficit its
    surplus ``u`` pays (loss at least ``l_j``), whichever collapses less mass. ``phi`` is of
    the order of the step over the law's width, so the merge loses about ``p h D`` of the mean
    loss (``D`` the distance to the cells merged) instead of ``p h / 2``: far less for a law
    narrower than a loss unit. A
    proportional slice of a cell is a randomized post-processing whose moments are the cell's
    times ``phi``; the rest of each cell goes on to pairing. Surpluses are rounded down and
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
        # up: cells m > j (d = m - j - 1 steps above l_{j+1}); surplus p (1 - e^{-dh}) + e^{-dh} u
        d = np.arange(n - j - 1) * step
        reach = d <= ATOM_REACH
        surplus = (dot(p_low[j + 1 :] * reach, -np.expm1(-d))
                   + dot(u_low[j + 1 :] * reach, np.exp(-d))) * (1 - MARGIN)
        if surplus > 0 and math.isfinite(atom_v[k]):
            phi = float(atom_v[k]) * (1 + MARGIN) / surplus
            if phi <= 1:
                options.append((phi * float(np.sum(p_low[j + 1 :] * reach)), j + 1,
                                slice(j + 1, n), phi * reach))
        # down: cells m < j (d = j - m - 1 steps below l_j); deficit e^{dh} v + (e^{dh} - 1) p
        d = np.arange(j - 1, -1, -1) * step
        reach = d <= ATOM_REACH
        deficit = (dot(v_high[:j] * reach, np.exp(np.minimum(d, ATOM_REACH)))
                   + dot(p_high[:j] * reach, np.expm1(np.minimum(d, ATOM_REACH)))) * (1 + MARGIN)
        if deficit > 0 and math.isfinite(deficit) and atom_u[k] > 0:
            psi = float(atom_u[k]) * (1 - MARGIN) / deficit
            if psi <= 1:
                options.append((psi * float(np.sum(p_low[:j] * reach)), j, slice(0, j),
                                psi * reach))
        if not options:
            out[j] += p_a  # rounded down alone
            continue
        _, point, part, taken = min(options, key=lambda option: option[0])
        out[point] += p_a + dot(taken, p_low[part])
        for x in (p_low, p_high, u_low, v_high, kept):
            x[part] *= 1 - taken
    return out, (p_low, p_high, u_low, v_high), kept
