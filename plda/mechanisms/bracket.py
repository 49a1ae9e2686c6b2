"""Samplers whose worst case is not known exactly: an upper pair and a realized lower pair.

For :class:`~plda.TruncatedPoisson` and :class:`~plda.Shuffled` no single pair of output
distributions is known to be both a dominating pair and realized by actual datasets. Such a
mechanism supplies two mechanisms:

- itself: its privacy-loss laws are those of a *dominating* pair, so a PLD built on it gives a
  certified **upper** bound (its PLD lower bound brackets that pair, not the mechanism);
- :meth:`lower_bound_mechanism`: a mechanism whose laws are those of a pair *realized* by two
  neighbouring datasets (or a post-processing of such a pair), so the **lower** bound of a PLD
  built on it is a certified lower bound on the true privacy loss of the sampler.

``tight`` says whether the two coincide (then the PLD's own bracket is the mechanism's).
"""

from __future__ import annotations

from plda._internal.errors import PLDAWarning, warn
from plda.mechanisms.base import Mechanism


def public_name(mechanism: Mechanism) -> str:
    """The name of ``mechanism``'s class for messages: its first public class (a sampler read
    under replace-one is an internal subclass, ``Shuffled`` for instance, and a message names
    what the user wrote), with ``" under replace-one"`` when an internal class was passed."""
    own = type(mechanism).__name__
    mixins = ("BracketedMechanism", "Mechanism", "object")
    names = [c.__name__ for c in type(mechanism).__mro__
             if not c.__name__.startswith("_") and c.__name__ not in mixins]
    if not names:
        return own
    return names[0] if names[0] == own else f"{names[0]} under replace-one"


class NotTightWarning(PLDAWarning):
    """A PLD was built on a sampler whose dominating pair is not known to be realized by
    datasets: its upper bound holds; ``epsilon_bounds`` and ``delta_bounds`` (of a PLD and of
    an accountant, and every conversion) take their lower bound from the sampler's realized
    pairs (``lower_bound_mechanisms()``), so the interval also holds the gap between the two
    analyses."""


class SamplerAssumptionWarning(PLDAWarning):
    """A sampler's analysis rests on an assumption about the data loader that plda cannot
    check: :class:`~plda.Shuffled` under add/remove assumes that removing a record leaves its
    slot empty (the other batches unchanged). A loader that re-chunks a permutation shifts every
    later batch instead; account it under ``relation="replace_one"``."""


class BracketedMechanism(Mechanism):
    """Mixin for samplers analysed by an upper pair and a separate realized lower pair."""

    @property
    def tight(self) -> bool:
        """Whether this mechanism's own laws are also realized by datasets."""
        return False

    def lower_bound_mechanism(self) -> Mechanism:  # pragma: no cover - abstract
        """A mechanism whose PLD *lower* bound is a certified lower bound for this sampler."""
        raise NotImplementedError

    def privacy_loss(self, direction: str = "remove"):
        """As :meth:`Mechanism.privacy_loss`; warns with :class:`NotTightWarning` (and what else
        the analysis assumes, see :meth:`_warn_about_analysis`) at every request, not only when
        the law is first computed, so that each public call using the sampler says so once
        whatever the caches hold (the calls dedupe their internal requests)."""
        self._warn_about_analysis()
        return super().privacy_loss(direction)

    def _warn_about_analysis(self) -> None:
        self._warn_not_tight()

    def _warn_not_tight(self) -> None:
        if not self.tight:
            warn(
                f"{public_name(self)}: no pair of datasets is known to realize this "
                "sampler's dominating pair, so epsilon_bounds and delta_bounds take the upper "
                "bound from it and the lower bound from its realized pairs "
                "(m.lower_bound_mechanisms()); the interval "
                "includes that analysis gap (the discretized laws themselves, as in "
                "PrivacyLossDistribution.discrete('lower'), bracket the dominating pair only)",
                NotTightWarning,
            )
