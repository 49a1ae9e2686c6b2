"""The mechanism interface: a mechanism is known to plda through the privacy-loss laws of its
dominating pair(s) under the add/remove neighbouring relation. Samplers whose dominating pair is
not known to be realized by datasets add a realized lower pair (:class:`BracketedMechanism`) and
say so (:class:`NotTightWarning`)."""

from __future__ import annotations

from dataclasses import dataclass

from plda._internal.caches import cached, remembered
from plda._internal.errors import PLDAWarning, warn
from plda.mechanisms.law import PrivacyLossLaw

DIRECTIONS = ("remove", "add")


class Mechanism:
    """Base class of all mechanisms (frozen dataclasses in subclasses).

    ``privacy_loss("remove")`` is the law of the pair ``(M(D), M(D'))`` where ``D'`` is ``D`` with
    one record removed; ``privacy_loss("add")`` the law of ``(M(D'), M(D))``. A mechanism whose two
    laws coincide is ``symmetric`` and plda computes one direction only.
    """

    symmetric: bool = True
    #: the relation the family's pair is stated under: ``"add_remove"`` (the mechanism's laws;
    #: replace-one through :meth:`under_replace_one`), or ``"replace_one"`` for a pair given as
    #: a substitution's (:class:`~plda.GaussianDoubleMixture`), refused under add/remove
    defined_under: str = "add_remove"
    #: the currency a guarantee imported as a step is stated in (``"gdp"``, ``"zcdp"``,
    #: ``"renyi"``), or None for a mechanism: a composition holding such a step is also read
    #: in that currency, which may be tighter than its grid (:mod:`plda.conversions.capped`)
    stated_currency: str | None = None

    def _remove_law(self) -> PrivacyLossLaw:  # pragma: no cover - abstract
        raise NotImplementedError

    def _add_law(self) -> PrivacyLossLaw:
        return self._remove_law() if self.symmetric else self._remove_law().reversed()

    def privacy_loss(self, direction: str = "remove") -> PrivacyLossLaw:
        """The privacy-loss law of one direction of the relation.

        Parameters
        ----------
        direction
            ``"remove"`` or ``"add"``.

        Returns
        -------
        PrivacyLossLaw
            The law, computed once per mechanism value; it exposes ``cdf``/``sf``/``ppf``/
            ``isf`` under either hypothesis, like a ``scipy.stats`` law.

        Raises
        ------
        ValueError
            For another ``direction``.
        """
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
        # remembered on the instance: the shared cache keys on the mechanism's value, whose hash
        # walks every field (a long history asks for each of its laws at every query), and a
        # history longer than that cache must not lose its laws' identity (discretizations key
        # on it); equal mechanisms still share one law through the shared cache
        return remembered(self, direction, lambda: _cached_law(self, direction))

    def coarsened(self) -> Mechanism:
        """A mechanism that dominates this one, with its parameters on a coarse grid.

        Many nearby mechanisms share one (the family's ``_coarsened`` hook: for Poisson-sampled
        Gaussians ``sigma`` rounded down and ``q`` up to powers of ``2^(1/16)``). Used to pick
        grids for long, varied histories, never to report a bound.

        Returns
        -------
        Mechanism
            Its privacy loss dominates this one's in both directions; the mechanism itself
            when its family has no such grid.
        """
        return remembered(self, "coarsened", lambda: _cached_coarsened(self))

    def __getstate__(self) -> dict:
        # pickles (a sweep's worker processes) carry the fields, not what was remembered
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}

    def _coarsened(self) -> Mechanism:
        """A mechanism whose privacy loss dominates this one's in both directions, with its
        parameters on a coarse grid (so that many nearby mechanisms share one); the mechanism
        itself when its family has no such grid. Used to pick grids for long, varied
        histories, never to report a bound."""
        return self

    #: whether this mechanism's laws are those of a pair realized by two neighbouring datasets,
    #: so that the lower bound of its PLD is a lower bound on the mechanism itself (samplers
    #: without a known tight pair, such as :class:`~plda.Shuffled`, set it False)
    tight: bool = True

    def lower_bound_mechanism(self) -> Mechanism:
        """A mechanism whose PLD *lower* bound is a certified lower bound for this one.

        Returns
        -------
        Mechanism
            The mechanism itself when it is ``tight``.
        """
        return self

    def lower_bound_mechanisms(self) -> tuple[Mechanism, ...]:
        """Every mechanism whose PLD *lower* bound is a certified lower bound for this one.

        Each is realized by a pair of neighbouring datasets, or a post-processing of one; a
        composition reports the largest of their lower bounds.

        Returns
        -------
        tuple of Mechanism
            By default ``(lower_bound_mechanism(),)``; a sampler with several realized
            worst-case inputs, none of which is worst at every ``epsilon``, returns them all.
        """
        return (self.lower_bound_mechanism(),)

    def lower_bound_recipes(self, count: int) -> tuple[tuple[tuple[Mechanism, int], ...], ...]:
        """Realized compositions of ``count`` runs of this mechanism.

        Parameters
        ----------
        count
            The number of runs.

        Returns
        -------
        tuple
            Recipes ``((mechanism, count), ...)``, the lower bound of each certified for the
            ``count`` runs. By default each of :meth:`lower_bound_mechanisms` run ``count``
            times; a sampler whose realized pairs may change orientation from step to step
            adds compositions that mix them.
        """
        return tuple(((mechanism, count),) for mechanism in self.lower_bound_mechanisms())

    def reversed(self) -> Mechanism:
        """The mechanism whose two directions are this one's swapped.

        Returns
        -------
        Mechanism
            The same pair of datasets read in the other order (the mechanism itself when it
            is symmetric).
        """
        return self if self.symmetric else Reversed(self)

    def under_replace_one(self) -> Mechanism:
        """The equivalent mechanism whose add/remove laws are this one's replace-one laws.

        Families that support the replace-one relation override it (for an additive-noise
        mechanism a replaced record moves the output by up to twice the add/remove
        sensitivity, so the sensitivity doubles).

        Returns
        -------
        Mechanism
            The mechanism to account under add/remove.

        Raises
        ------
        ValueError
            For a family without replace-one support (this default).
        """
        raise ValueError(f"the replace_one relation is not supported for {type(self).__name__}")


@dataclass(frozen=True)
class Reversed(Mechanism):
    """A mechanism with its two directions swapped: its ``remove`` law is the other's ``add``.

    A realized pair read in the other order is realized too (by the same datasets with a query
    that negates the records), so a realized run may mix the two orders.

    Attributes
    ----------
    mechanism
        The mechanism read in the other order.
    """

    mechanism: Mechanism
    symmetric = False

    def _remove_law(self):
        return self.mechanism.privacy_loss("add")

    def _add_law(self):
        return self.mechanism.privacy_loss("remove")

    def reversed(self) -> Mechanism:
        """The mechanism in its own order.

        Returns
        -------
        Mechanism
            ``mechanism``.
        """
        return self.mechanism


class ReplaceOnePair(Mechanism):
    """Base of a pair stated under replace-one, a record's value replaced.

    Refused under add/remove, read under replace-one through the family's :meth:`law`. A
    family sets :attr:`add_remove_advice` (what to use under add/remove, if anything) and
    implements ``law()``.
    """

    defined_under = "replace_one"
    #: appended to the refusal under add/remove
    add_remove_advice = ""

    def law(self) -> PrivacyLossLaw:  # pragma: no cover - abstract
        """The loss law of the pair, the record's side against its replacement's.

        Returns
        -------
        PrivacyLossLaw
            The law.

        Raises
        ------
        NotImplementedError
            In this base class: each family implements it.
        """
        raise NotImplementedError

    def _remove_law(self):
        raise ValueError(f"{type(self).__name__} is a replace-one pair: account it with "
                         f"relation='replace_one'{self.add_remove_advice}")

    def under_replace_one(self) -> Mechanism:
        """The mechanism whose add/remove laws are this pair's two directions.

        Returns
        -------
        Mechanism
            The pair read under replace-one.
        """
        return _ReplaceOneRead(self)


@dataclass(frozen=True)
class _ReplaceOneRead(Mechanism):
    """Internal: a replace-one pair read under the replace-one relation."""

    pair: ReplaceOnePair

    def __post_init__(self):
        object.__setattr__(self, "symmetric", self.pair.symmetric)

    def _remove_law(self) -> PrivacyLossLaw:
        return self.pair.law()


@cached(maxsize=4096)
def _cached_coarsened(mechanism: Mechanism) -> Mechanism:
    return mechanism._coarsened()


@cached(maxsize=4096)
def _cached_law(mechanism: Mechanism, direction: str) -> PrivacyLossLaw:
    if direction == "remove":
        return mechanism._remove_law()
    return mechanism._add_law()


# ------------------------------------------------------------ samplers analysed by two pairs
def public_name(mechanism: Mechanism) -> str:
    """The name of a mechanism's class for messages: its first public class.

    A sampler read under replace-one is an internal subclass (of ``Shuffled`` for instance),
    and a message names what the user wrote.

    Parameters
    ----------
    mechanism
        The mechanism.

    Returns
    -------
    str
        The class name, with ``" under replace-one"`` when an internal class was passed.
    """
    own = type(mechanism).__name__
    mixins = ("BracketedMechanism", "Mechanism", "object")
    names = [c.__name__ for c in type(mechanism).__mro__
             if not c.__name__.startswith("_") and c.__name__ not in mixins]
    if not names:
        return own
    return names[0] if names[0] == own else f"{names[0]} under replace-one"


class NotTightWarning(PLDAWarning):
    """A PLD was built on a sampler whose dominating pair is not known to be realized.

    Its upper bound holds; ``epsilon_bounds`` and ``delta_bounds`` (of a PLD and of an
    accountant, and every conversion) take their lower bound from the sampler's realized pairs
    (``lower_bound_mechanisms()``), so the interval also holds the gap between the two
    analyses."""


class SamplerAssumptionWarning(PLDAWarning):
    """A sampler's analysis rests on an assumption about the data loader that plda cannot check.

    :class:`~plda.Shuffled` under add/remove assumes that removing a record leaves its slot
    empty (the other batches unchanged). A loader that re-chunks a permutation shifts every
    later batch instead; account it under ``relation="replace_one"``."""


class BracketedMechanism(Mechanism):
    """Mixin for samplers analysed by an upper pair and a separate realized lower pair.

    For :class:`~plda.TruncatedPoisson` and :class:`~plda.Shuffled` no single pair of output
    distributions is known to be both a dominating pair and realized by actual datasets. Such a
    mechanism supplies two mechanisms:

    - itself: its privacy-loss laws are those of a *dominating* pair, so a PLD built on it gives
      a certified **upper** bound (its PLD lower bound brackets that pair, not the mechanism);
    - :meth:`lower_bound_mechanism`: a mechanism whose laws are those of a pair *realized* by
      two neighbouring datasets (or a post-processing of such a pair), so the **lower** bound of
      a PLD built on it is a certified lower bound on the true privacy loss of the sampler.

    ``tight`` says whether the two coincide (then the PLD's own bracket is the mechanism's).
    """

    @property
    def tight(self) -> bool:
        """Whether this mechanism's own laws are also realized by datasets."""
        return False

    def lower_bound_mechanism(self) -> Mechanism:  # pragma: no cover - abstract
        """A mechanism whose PLD *lower* bound is a certified lower bound for this sampler.

        Returns
        -------
        Mechanism
            Realized by two neighbouring datasets (or a post-processing of such a pair).

        Raises
        ------
        NotImplementedError
            Here; each sampler implements it.
        """
        raise NotImplementedError

    def privacy_loss(self, direction: str = "remove"):
        """As :meth:`Mechanism.privacy_loss`, warning that the sampler is not tight.

        Warns with :class:`NotTightWarning` (and what else the analysis assumes) at every
        request, not only when the law is first computed, so that each public call using the
        sampler says so once whatever the caches hold.

        Parameters
        ----------
        direction
            ``"remove"`` or ``"add"``.

        Returns
        -------
        PrivacyLossLaw
            The law of the dominating pair.
        """
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
