"""A history that grows by appending runs (:mod:`plda.accounting.history`,
:mod:`plda.accounting.composer`): its coarsened history and its laws per direction are extended
from the earlier history's, and are exactly what the whole history gives."""

from __future__ import annotations

import pytest

import plda
from plda.accounting import composer as composer_module
from plda.accounting.composer import HistoryComposer
from plda.accounting.history import MANY_MECHANISMS, coarsened
from plda.engine.composer import Composer


def _schedule(count, start=0):
    return tuple((plda.PoissonSampled(plda.Gaussian(0.8 + 0.01 * (start + i)), 0.01), 1)
                 for i in range(count))


def _history(kind):
    """``(earlier, grown)``: a history and the one it grows into by appending runs."""
    schedule = _schedule(6)
    laplace, gauss = ((plda.Laplace(1.0 + i), 1) for i in range(3)), plda.Gaussian(2.0)
    return {
        "schedule": (schedule[:4], schedule),
        "gaussian before": (((gauss, 3),) + schedule[:4], ((gauss, 3),) + schedule),
        "gaussian after": (schedule[:4], schedule[:4] + ((gauss, 2),) + schedule[4:]),
        "gaussian dp after": (schedule[:4], schedule + ((plda.GaussianDP(0.5), 1),)),
        "symmetric then not": ((next(laplace),), ((plda.Laplace(1.0), 1),) + schedule[:2]),
        "not then symmetric": (schedule[:3], schedule[:3] + (next(laplace), next(laplace))),
        "symmetric": (((plda.Laplace(1.0), 1),), ((plda.Laplace(1.0), 1), (plda.Laplace(3.0), 2))),
        "zero counts": (schedule[:3], schedule[:3] + ((schedule[3][0], 0),) + schedule[4:]),
    }[kind]


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
@pytest.mark.parametrize("kind", ["schedule", "gaussian before", "gaussian after",
                                  "gaussian dp after", "symmetric then not",
                                  "not then symmetric", "symmetric", "zero counts"])
def test_grown_history_laws_are_the_whole_history_laws(monkeypatch, relation, kind):
    earlier, grown = _history(kind)
    read = []
    original = composer_module.laws_by_direction
    monkeypatch.setattr(composer_module, "laws_by_direction",
                        lambda steps: read.append(len(steps)) or original(steps))
    store = HistoryComposer(relation, Composer(keep=True), Composer(keep=True))
    store.laws(earlier)
    read.clear()
    extended = store.laws(grown)
    if kind in ("schedule", "symmetric"):
        # only the appended runs were read
        assert read == [len(grown) - len(earlier)]
    whole = HistoryComposer(relation, Composer(keep=True), Composer(keep=True)).laws(grown)
    assert list(extended) == list(whole)  # the same directions, in the same order
    for direction in whole:
        assert extended[direction] == whole[direction]


@pytest.mark.parametrize("split", [MANY_MECHANISMS - 1, MANY_MECHANISMS + 1, 60])
def test_grown_history_coarsens_its_new_runs_into_the_same_history(split):
    # sigma rounded down on a 2^(1/16) grid: many runs share a coarse mechanism, and the grown
    # history both adds to coarse mechanisms seen before and brings new ones
    grown = _schedule(90)
    earlier = grown[:split]
    assert coarsened(grown, (earlier, coarsened(earlier))) == coarsened(grown)
    assert len(coarsened(grown)) < len(grown)
