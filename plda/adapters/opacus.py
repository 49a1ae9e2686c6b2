"""An Opacus accountant backed by :class:`~plda.PLDAccountant`, registered as ``"plda"``.

:class:`PLDOpacusAccountant` has the interface of Opacus's accountants, and plda's spelling for
what Opacus does not name (``epsilon_bounds``, ``accountant``). Importing this module registers
it in Opacus's registry (when Opacus is installed), so ``PrivacyEngine(accountant="plda")``
uses it; ``make_private`` then accounts for the loader it prepared, and
``make_private_with_epsilon`` calibrates for that accounting. Which loaders are certified, and
how: ``docs/howto/opacus-and-dp-accounting.md``.
"""

from __future__ import annotations

import math
import sys
from collections import OrderedDict
from functools import partial

from plda._internal import validation as check
from plda._internal.errors import SamplerMismatchWarning, public_entries, warn
from plda.accounting.accountant import PLDAccountant
from plda.adapters import certified
from plda.adapters.epochs import OnePassEpochs
from plda.adapters.loaders import (
    ONE_PASS_KINDS,
    LoaderSampler,
    check_sampler,
    describe_loader,
    not_certified_message,
    refusal_message,
)
from plda.adapters.opacus_calibration import meet_target, planned_run
from plda.adapters.opacus_calls import calibration_loader, make_private_call
from plda.mechanisms import Gaussian, PoissonSampled
from plda.pld import DEFAULT_ACCURACY, Bounds

try:  # optional: register in Opacus's registry when it is installed
    from opacus.accountants import IAccountant as OpacusAccountant
    from opacus.accountants import register_accountant
except ImportError:  # Opacus (or torch) missing: the class works on its own
    OpacusAccountant = register_accountant = None

__all__ = ["MECHANISM", "REGISTRY_NAMES", "PLDOpacusAccountant", "check_sampler"]

#: the name under which the accountant is registered in Opacus (``PrivacyEngine(accountant=...)``)
MECHANISM = "plda"
#: the registry entry of each relation: what :meth:`PLDOpacusAccountant.mechanism` names, so that
#: Opacus's ``get_noise_multiplier`` (which builds a new accountant from that name) calibrates
#: under the relation of the accountant that will report the run
REGISTRY_NAMES = {"add_remove": MECHANISM, "replace_one": f"{MECHANISM}-replace_one"}
#: names of earlier versions' state dicts, still loadable
_OLD_MECHANISMS = ("plda-pld",)


class _MechanismName:
    """``PLDOpacusAccountant.mechanism()``: ``"plda"`` on the class (Opacus's interface declares
    a class method); on an instance, the registry name of its relation (see
    :meth:`PLDOpacusAccountant.mechanism`)."""

    def __get__(self, instance, owner):
        if instance is None:
            return lambda: MECHANISM
        return instance.registry_name


@public_entries  # each public call issues each warning once, at the user's line
class PLDOpacusAccountant:
    """Opacus accountant: certified PLD bounds for DP-SGD steps.

    Steps are accounted as Poisson-subsampled Gaussian steps, unless Opacus's ``make_private``
    attaches the accountant to a loader that uses every record once per epoch and the relation
    is ``"replace_one"``: then each epoch is accounted as a :class:`~plda.Shuffled` epoch
    (:attr:`sampler` is ``"shuffled"``; see the module docstring and
    :meth:`account_one_pass`). A loader with no sound analysis is refused in ``make_private``
    (``strict=True``) or accounted as Poisson with a warning (``strict=False``).

    Parameters
    ----------
    relation : str, optional
        ``"add_remove"`` or ``"replace_one"``, as for :class:`~plda.PLDAccountant`.
    accuracy : float, optional
        As for :class:`~plda.PLDAccountant`.
    strict : bool, optional
        ``True`` (default): ``make_private`` raises ``ValueError`` for a loader that plda has no
        sound analysis of under ``relation`` (before training starts). ``False``: such a
        loader's steps are accounted as Poisson anyway, with a
        :class:`~plda.SamplerMismatchWarning`; the epsilon is then **not certified** for the
        training that ran.

    Raises
    ------
    ValueError
        If ``relation`` or ``accuracy`` is out of range (as :class:`~plda.PLDAccountant`).
    TypeError
        If ``strict`` is not a bool.

    Examples
    --------
    >>> from plda.adapters.opacus import PLDOpacusAccountant
    >>> acct = PLDOpacusAccountant()
    >>> for _ in range(10):
    ...     acct.step(noise_multiplier=1.1, sample_rate=0.01)
    >>> acct.history, acct.get_epsilon(1e-5) < 1, acct.sampler
    ([(1.1, 0.01, 10)], True, 'poisson')
    """

    mechanism = _MechanismName()

    def __init__(
        self, relation: str = "add_remove", accuracy: float = DEFAULT_ACCURACY, *,
        strict: bool = True,
    ):
        if not isinstance(strict, bool):
            raise TypeError(f"strict must be True or False, got {strict!r}")
        self.accountant = PLDAccountant(relation=relation, accuracy=accuracy)
        #: whether a loader without a sound analysis is refused (else accounted as Poisson)
        self.strict = strict
        #: the epochs of a one-pass loader, when the steps are accounted that way
        self.epochs: OnePassEpochs | None = None

    def registry_name(self) -> str:
        """The accounting mechanism's name: what Opacus's ``mechanism()`` returns on an instance.

        ``make_private_with_epsilon`` asks for it before it calibrates and prepares anything:
        a loader that this accountant would refuse (see ``strict``) is refused here, so that
        nothing is calibrated or wrapped for it.

        Returns
        -------
        str
            The key in Opacus's registry of an accountant with this one's relation
            (``"plda"`` under add/remove, ``"plda-replace_one"``).

        Raises
        ------
        ValueError
            From ``make_private_with_epsilon``, for a loader refused under ``strict``.
        """
        request = calibration_loader(sys._getframe(1))
        if request is not None:
            loader, poisson_sampling = request
            if not poisson_sampling:  # Opacus keeps the user's loader: judge it now
                self._judge(describe_loader(loader), refuse_only=True)
        return REGISTRY_NAMES[self.accountant.relation]

    @property
    def sampler(self) -> str:
        """``"poisson"``, or ``"shuffled"`` when steps are accounted as one-pass epochs."""
        return "poisson" if self.epochs is None else "shuffled"

    def account_one_pass(self, num_batches: int) -> None:
        """Account the coming steps as one :class:`~plda.Shuffled` epoch per ``num_batches``.

        For a loader that puts every record in exactly one of its batches per pass
        (``DataLoader(shuffle=True)`` or ``shuffle=False``, without a dropped partial batch;
        :class:`plda.adapters.epochs.OnePassEpochs`). ``make_private`` calls it when it finds
        such a loader.

        Parameters
        ----------
        num_batches : int
            Batches per pass (``len(loader)``).

        Raises
        ------
        ValueError
            If the relation is not ``"replace_one"``, or steps were recorded already
            (nothing changes).
        """
        if self.accountant.relation != "replace_one":
            raise ValueError(
                "one-pass (shuffled) accounting of a chunked loader is sound under "
                "relation='replace_one' only (a removed record shifts every later batch): use "
                "PLDOpacusAccountant(relation='replace_one'), or Poisson batches"
            )
        if len(self):
            raise ValueError(
                f"the accountant already holds {len(self)} steps accounted as {self.sampler}; "
                "use a new accountant (a new PrivacyEngine) for the new loader"
            )
        epochs = OnePassEpochs(num_batches, self.accountant.accuracy)
        self.epochs, self.accountant = epochs, epochs.upper

    def step(
        self, *, noise_multiplier: float, sample_rate: float, accumulation_steps: int = 1
    ) -> None:
        """Record one DP-SGD step.

        Parameters
        ----------
        noise_multiplier : float
            The step's noise ``sigma``.
        sample_rate : float
            The Poisson rate ``q``; for one-pass epochs, the fraction of the epoch's batches
            the step used.
        accumulation_steps : int, optional
            ``m``: the step summed ``m`` Poisson micro-batches of rate ``q`` before adding the
            noise (:meth:`plda.PLDAccountant.step`); Poisson steps only.

        Raises
        ------
        ValueError
            If an argument is out of range (as :meth:`plda.PLDAccountant.step`), or, for
            one-pass epochs, ``accumulation_steps`` is not 1 or ``sample_rate`` is not a whole
            number of batches.
        """
        if self.epochs is None:
            self.accountant.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate,
                                 accumulation_steps=accumulation_steps)
            return
        if accumulation_steps != 1:
            raise ValueError("accumulation_steps applies to Poisson steps only; for one-pass "
                             "epochs pass the fraction of the epoch's batches as sample_rate")
        rate = check.probability("sample_rate", sample_rate, open_low=True)
        batches = rate * self.epochs.num_batches
        if abs(batches - round(batches)) > 1e-9 * batches:
            raise ValueError(
                f"sample_rate must be a whole number of batches over {self.epochs.num_batches} "
                f"(one-pass epochs), got {sample_rate!r}"
            )
        self.epochs.step(noise_multiplier, batches=round(batches))

    def get_epsilon(self, delta: float, **kwargs) -> float:
        """Certified upper bound on epsilon at ``delta``: Opacus's query.

        Parameters
        ----------
        delta : float
            The delta, in ``[0, 1]``.
        **kwargs
            Opacus's other arguments (``eps_error``, ...) are refused: plda takes only
            ``delta``.

        Returns
        -------
        float
            The epsilon; 0 before the first step.

        Raises
        ------
        TypeError
            If other arguments are passed.
        ValueError
            If ``delta`` is outside ``[0, 1]`` or NaN.
        """
        if kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)} (plda takes only delta)")
        if self.epochs is not None:
            return self.epochs.epsilon(delta)
        return float(self.accountant.epsilon(delta))

    def epsilon_bounds(self, delta: float) -> Bounds:
        """Certified lower and upper bounds on epsilon at ``delta`` (plda's name for the query).

        As :meth:`plda.PLDAccountant.epsilon_bounds`; Opacus has no such query.

        Parameters
        ----------
        delta : float
            The delta, in ``[0, 1]``.

        Returns
        -------
        Bounds
            ``Bounds(lower=..., upper=...)`` of floats, both certified.
        """
        if self.epochs is not None:
            return self.epochs.epsilon_bounds(delta)
        return certified.epsilon_bounds(self.accountant, delta)

    def get_epsilon_bounds(self, delta: float) -> Bounds:
        """Deprecated, removed in 0.2.0: :meth:`epsilon_bounds`.

        Parameters
        ----------
        delta : float
            The delta, in ``[0, 1]``.

        Returns
        -------
        Bounds
            ``epsilon_bounds(delta)``.

        Warns
        -----
        DeprecationWarning
            Always.
        """
        warn("PLDOpacusAccountant.get_epsilon_bounds is deprecated and will be removed in plda "
             "0.2.0: use PLDOpacusAccountant.epsilon_bounds (plda's name for the query)",
             DeprecationWarning)
        return self.epsilon_bounds(delta)

    def __len__(self) -> int:
        """Number of recorded training steps (optimizer steps), as ``len()`` of
        :class:`~plda.PLDAccountant` counts them (Opacus's meaning too)."""
        return len(self.accountant) if self.epochs is None else len(self.epochs)

    def __repr__(self) -> str:
        return (
            f"PLDOpacusAccountant(relation={self.accountant.relation!r}, "
            f"accuracy={self.accountant.accuracy!r}, steps={len(self)})"
        )

    @property
    def history(self) -> list[tuple[float, float, int]]:
        """Opacus-style history ``[(noise_multiplier, sample_rate, steps), ...]`` of the steps.

        Other mechanisms composed on :attr:`accountant`, and steps with gradient accumulation
        (which no such triple describes), are not listed: see ``accountant.history``. For
        one-pass epochs ``sample_rate`` is ``1 / steps per epoch``. Assigning a list of such
        triples replaces everything recorded by Poisson steps (Opacus's
        ``get_noise_multiplier`` does this); on a bad entry (``ValueError``) nothing changes.
        """
        if self.epochs is not None:
            return self.epochs.history()
        out = []
        for mechanism, count in self.accountant.history:
            if (isinstance(mechanism, PoissonSampled) and type(mechanism.mechanism) is Gaussian
                    and mechanism.group_size == 1):
                inner = mechanism.mechanism
                if inner.sensitivity == 1.0:
                    out.append((inner.sigma, mechanism.sample_rate, count))
        return out

    @history.setter
    def history(self, entries) -> None:
        fresh = PLDAccountant(relation=self.accountant.relation, accuracy=self.accountant.accuracy)
        for entry in entries:
            try:
                noise_multiplier, sample_rate, steps = entry
            except (TypeError, ValueError):
                raise ValueError(
                    f"history entries must be (noise_multiplier, sample_rate, steps), got {entry!r}"
                ) from None
            if isinstance(noise_multiplier, (int, float)) and math.isinf(noise_multiplier):
                continue  # infinite noise: the step reveals nothing
            if steps != 0:
                fresh.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate, count=steps)
        self.accountant, self.epochs = fresh, None

    def _judge(self, found: LoaderSampler, refuse_only: bool = False) -> str:
        """How steps on the loader ``found`` are accounted: ``"poisson"`` or ``"one_pass"``.

        Raises ``ValueError`` for a loader that the recorded steps cannot be composed with, and
        (``strict``) for one without a sound analysis; without ``strict`` such a loader is
        ``"poisson"`` and, unless ``refuse_only``, a :class:`~plda.SamplerMismatchWarning`
        says that the epsilon is not certified for it."""
        relation = self.accountant.relation
        one_pass = (found.kind in ONE_PASS_KINDS and found.every_record_once
                    and bool(found.num_batches) and relation == "replace_one")
        sound = one_pass or found.kind == "poisson"
        kind = "one_pass" if one_pass else "poisson"
        if len(self) and (
            (kind == "one_pass") != (self.epochs is not None)
            or (one_pass and self.epochs.num_batches != found.num_batches)
        ):
            raise ValueError(
                f"the accountant already holds {len(self)} steps accounted as {self.sampler}, "
                f"and make_private now prepared {found.kind} batches ({found.description}) "
                f"that would be accounted as {kind.replace('_', '-')} steps: use a new "
                "PrivacyEngine (a new accountant) for the new loader"
            )
        if not sound and self.strict:
            raise ValueError(refusal_message(found, relation))
        if not sound and not refuse_only:
            warn(not_certified_message(found, relation), SamplerMismatchWarning)
        return kind

    def _adopt(self, call, sample_rate: float) -> None:
        """Account for the loader that Opacus's ``make_private`` prepared and, called from
        ``make_private_with_epsilon``, make its noise meet the target on that accounting. On a
        refusal the hooks ``make_private`` put on the user's model are removed again (the
        user will pass the same model once more)."""
        try:
            found = describe_loader(call.data_loader)
            kind = self._judge(found)
            if kind == "one_pass":
                if self.epochs is None or self.epochs.num_batches != found.num_batches:
                    self.account_one_pass(found.num_batches)
            elif self.epochs is not None:  # one-pass accounting set by hand, nothing recorded
                relation, accuracy = self.accountant.relation, self.accountant.accuracy
                self.accountant, self.epochs = PLDAccountant(relation, accuracy), None
            if call.calibration is not None:
                run = planned_run(
                    self.accountant.relation, self.accountant.accuracy, call.calibration.epochs,
                    found.num_batches or round(1.0 / sample_rate), one_pass=kind == "one_pass",
                )
                meet_target(call.optimizer, run, call.calibration)
        except (ValueError, TypeError):
            if call.wrapped_here:
                call.module.cleanup()
            raise

    def get_optimizer_hook_fn(self, sample_rate: float):
        """The callback for Opacus's ``DPOptimizer.attach_step_hook``: it records each step.

        The optimizer's ``accumulated_iterations`` says how many batches' clipped gradients a
        step summed (``m``): the step is recorded as ``accumulation_steps=m`` at the batch's
        rate, not as one step at rate ``m q`` (which Opacus's own accountants do, and which
        under-reports); for one-pass epochs it used ``m`` of the epoch's batches. Called from
        ``make_private``, it first accounts for the loader ``make_private`` prepared and, from
        ``make_private_with_epsilon``, raises the calibrated noise where that accounting
        misses the target (``docs/howto/opacus-and-dp-accounting.md``).

        Parameters
        ----------
        sample_rate : float
            The rate of one batch, as Opacus passes it.

        Returns
        -------
        callable
            ``hook_fn(optimizer)``, recording a step with ``optimizer.noise_multiplier``.

        Raises
        ------
        ValueError
            From ``make_private``: a loader without a sound analysis (``strict``), or one that
            the steps already recorded cannot be composed with.
        CalibrationError
            From ``make_private_with_epsilon``, if no noise meets the target.
        """
        call = make_private_call(sys._getframe(1))
        if call is not None:
            self._adopt(call, sample_rate)

        def hook_fn(optimizer) -> None:
            batches = getattr(optimizer, "accumulated_iterations", 1)
            if self.epochs is not None:  # one-pass epochs: m of the epoch's batches
                self.step(noise_multiplier=optimizer.noise_multiplier,
                          sample_rate=sample_rate * batches)
                return
            self.step(noise_multiplier=optimizer.noise_multiplier, sample_rate=sample_rate,
                      accumulation_steps=batches)

        return hook_fn

    def state_dict(self, destination: dict | None = None) -> dict:
        """The state as Opacus saves it (``PrivacyEngine.save_checkpoint``), JSON-serializable.

        Parameters
        ----------
        destination : dict, optional
            A dict to fill (a new ``OrderedDict`` if None).

        Returns
        -------
        dict
            ``history`` and ``mechanism``, plus the full plda state under ``"plda"`` (and
            ``"one_pass"`` for one-pass epochs).
        """
        if destination is None:
            destination = OrderedDict()
        destination["history"] = self.history
        destination["mechanism"] = MECHANISM  # the relation is in the plda state
        destination["plda"] = self.accountant.state_dict()
        if self.epochs is not None:
            destination["one_pass"] = self.epochs.state_dict()
        return destination

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the state saved by :meth:`state_dict`.

        Parameters
        ----------
        state_dict : dict
            A saved state (of this accountant or of an earlier version's ``"plda-pld"``).

        Raises
        ------
        ValueError
            If the state is empty, another accountant's or corrupted; nothing changes.
        """
        if not isinstance(state_dict, dict) or not state_dict:
            raise ValueError("state_dict must be a non-empty dict from state_dict()")
        name = state_dict.get("mechanism")
        if name not in REGISTRY_NAMES.values() and name not in _OLD_MECHANISMS:
            raise ValueError(f"state_dict is from the accountant {name!r}, not {MECHANISM!r}")
        if "plda" not in state_dict:
            raise ValueError("state_dict has no 'plda' entry")
        if "one_pass" in state_dict:
            epochs = OnePassEpochs.from_state_dict(state_dict["one_pass"])
            self.epochs, self.accountant = epochs, epochs.upper
            return
        accountant = PLDAccountant.from_state_dict(state_dict["plda"])
        self.epochs, self.accountant = None, accountant


if OpacusAccountant is not None:
    # a virtual subclass: isinstance(acct, IAccountant) holds without Opacus at class definition
    OpacusAccountant.register(PLDOpacusAccountant)
    for _relation, _name in REGISTRY_NAMES.items():
        register_accountant(_name, partial(PLDOpacusAccountant, relation=_relation), force=True)
