"""Checking an accountant's saved state (``PLDAccountant.state_dict()``) before loading it."""

from __future__ import annotations

from plda._internal import validation as check
from plda.bounds import check_relation
from plda.serialization import check_header, mechanism_from_dict

#: the format tag and version of a saved accountant state
FORMAT = "plda.accountant"
VERSION = 1


def parse_state(state) -> tuple[str, float, list]:
    """The relation, accuracy and history of a saved accountant state, checked.

    Parameters
    ----------
    state : dict
        A state from ``PLDAccountant.state_dict()``.

    Returns
    -------
    tuple
        ``(relation, accuracy, history)``, the history as run-length ``(mechanism, count)``
        pairs.

    Raises
    ------
    ValueError
        Naming the bad part, if the state is corrupted or foreign (nothing is loaded).
    """
    if not isinstance(state, dict):
        raise ValueError(
            f"state must be a dict from PLDAccountant.state_dict(), got {type(state).__name__}"
        )
    check_header(
        state, format=FORMAT, version=VERSION,
        keys={"relation", "accuracy", "history"}, what="plda accountant state",
    )
    relation = check_relation(state["relation"], "state relation")
    try:
        accuracy = check.fraction("accuracy", state["accuracy"])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"state {exc}") from exc
    if not isinstance(state["history"], list):
        raise ValueError("state history must be a list of {'mechanism': ..., 'count': ...}")
    history = []
    for i, entry in enumerate(state["history"]):
        if not isinstance(entry, dict) or set(entry) != {"mechanism", "count"}:
            raise ValueError(f"state history[{i}] must be a dict with keys 'mechanism' and 'count'")
        try:
            mechanism = mechanism_from_dict(entry["mechanism"])
            count = check.count("count", entry["count"], minimum=1)
            if relation == "replace_one":
                mechanism.under_replace_one()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"state history[{i}]: {exc}") from exc
        if history and history[-1][0] == mechanism:
            history[-1] = (mechanism, history[-1][1] + count)
        else:
            history.append((mechanism, count))
    total = sum(k for _, k in history)
    if total > check.MAX_COUNT:
        raise ValueError(f"state history holds {total} steps, more than {check.MAX_COUNT:.0e}")
    return relation, accuracy, history
