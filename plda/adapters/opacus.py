"""An Opacus accountant backed by :class:`~plda.PLDAccountant`, registered as ``"plda"``.

``PLDOpacusAccountant`` has the interface of Opacus's accountants (``step(*, noise_multiplier,
sample_rate)``, ``get_epsilon(delta)``, ``__len__``, ``mechanism()``, ``history``,
``state_dict``/``load_state_dict``, ``get_optimizer_hook_fn(sample_rate)``). Importing this
module registers it in Opacus's accountant registry under ``"plda"`` when Opacus is installed
(``pip install torch opacus``; without them the class still works on its own)::

    import plda.adapters.opacus  # registers "plda"
    engine = opacus.PrivacyEngine(accountant="plda")
    model, optimizer, loader = engine.make_private_with_epsilon(
        module=..., optimizer=..., data_loader=..., target_epsilon=1.0, target_delta=1e-5,
        epochs=5, max_grad_norm=1.0)
    ...
    engine.get_epsilon(1e-5)                          # certified upper bound
    engine.accountant.get_epsilon_bounds(1e-5)        # Bounds(lower=..., upper=...)

The accountant assumes Poisson subsampling (Opacus's ``DPDataLoader``). When Opacus's
``make_private`` attaches it to an optimizer, it inspects the data loader actually used
(:func:`plda.adapters.loaders.describe_loader`):

- Poisson batches: accounted as Poisson-subsampled Gaussian steps;
- fixed-size batches that use every record once per epoch (``poisson_sampling=False`` with
  ``shuffle=True`` or ``False``): under ``relation="replace_one"`` each epoch is accounted as a
  :class:`~plda.Shuffled` epoch (:class:`plda.adapters.epochs.OnePassEpochs`); under
  add/remove (the default) there is no sound analysis of a chunked permutation, and the
  accountant warns with :class:`~plda.SamplerMismatchWarning` saying to set
  ``engine.accountant = PLDOpacusAccountant(relation="replace_one")`` before ``make_private``
  (or to use ``poisson_sampling=True``);
- sampling with replacement, ``WeightedRandomSampler`` or an unknown sampler: warns (no sound
  analysis), the steps are still recorded as Poisson so that training runs.

Call :func:`check_sampler` yourself on any other loader.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections import OrderedDict

from plda._internal import validation as check
from plda._internal.errors import SamplerMismatchWarning
from plda.accountant import PLDAccountant
from plda.adapters import certified
from plda.adapters.epochs import OnePassEpochs
from plda.adapters.loaders import ONE_PASS_KINDS, describe_loader, mismatch_message
from plda.mechanisms import Gaussian, PoissonSampled
from plda.pld import DEFAULT_ACCURACY, Bounds

try:  # optional: register in Opacus's registry when it is installed
    from opacus.accountants import IAccountant as OpacusAccountant
    from opacus.accountants import register_accountant
except ImportError:  # Opacus (or torch) missing: the class works on its own
    OpacusAccountant = register_accountant = None

__all__ = ["MECHANISM", "PLDOpacusAccountant", "check_sampler"]

#: the name under which the accountant is registered in Opacus (``PrivacyEngine(accountant=...)``)
MECHANISM = "plda"
#: names of earlier versions' state dicts, still loadable
_OLD_MECHANISMS = ("plda-pld",)
#: how many frames up the optimizer-hook request looks for Opacus's ``make_private``
_FRAME_DEPTH = 4
#: Opacus's ``make_private`` caller that calibrates the noise first (for Poisson batches)
CALIBRATING_CALLER = "make_private_with_epsilon"


def check_sampler(data_loader, relation: str = "add_remove") -> str:
    """Name the sampling scheme of a PyTorch data loader; warn unless it is Poisson.

    Poisson subsampling (Opacus's ``DPDataLoader``, whose batch sampler is
    ``UniformWithReplacementSampler``) is what DP-SGD accounting with a ``sample_rate`` assumes.
    Fixed-size batches from a shuffled or sequential loader are a different mechanism, for which
    the Poisson epsilon can be far too small (Lebeda, Regehr, Kamath & Steinke 2024; Chua et al.
    2024).

    Parameters
    ----------
    data_loader
        A ``torch.utils.data.DataLoader`` (read duck-typed: ``batch_sampler`` and its
        ``sampler``).
    relation
        The relation you account under: the warning's advice depends on it.

    Returns
    -------
    str
        ``"poisson"``, ``"shuffled"`` (``shuffle=True``), ``"sequential"``,
        ``"with_replacement"`` (``RandomSampler(replacement=True)``), ``"weighted"``
        (``WeightedRandomSampler``) or ``"unknown"``.

    Warns
    -----
    SamplerMismatchWarning
        For every result but ``"poisson"``, saying what to do.
    """
    found = describe_loader(data_loader)
    if found.kind != "poisson":
        warnings.warn(mismatch_message(found, relation), SamplerMismatchWarning, stacklevel=2)
    return found.kind


def _caller_loader():
    """``(loader, depth, calibrated)`` if Opacus's ``PrivacyEngine.make_private`` is asking for
    the optimizer hook (best effort: reads its local ``data_loader``, the loader it prepared;
    ``calibrated``: called by ``make_private_with_epsilon``), else ``(None, 0, False)``."""
    frame = sys._getframe(3)  # 0: here, 1: _adopt_caller_loader, 2: get_optimizer_hook_fn
    for depth in range(_FRAME_DEPTH):
        if frame is None:
            break
        code = frame.f_code
        if code.co_name == "make_private" and "opacus" in code.co_filename:
            caller = frame.f_back
            calibrated = caller is not None and caller.f_code.co_name == CALIBRATING_CALLER
            return frame.f_locals.get("data_loader"), depth, calibrated
        frame = frame.f_back
    return None, 0, False


class PLDOpacusAccountant:
    """Opacus accountant: certified PLD bounds for DP-SGD steps.

    Steps are accounted as Poisson-subsampled Gaussian steps, unless Opacus's ``make_private``
    attaches the accountant to a loader that uses every record once per epoch and the relation
    is ``"replace_one"``: then each epoch is accounted as a :class:`~plda.Shuffled` epoch
    (:attr:`sampler` is ``"shuffled"``; see the module docstring and
    :meth:`account_one_pass`).

    Parameters
    ----------
    relation, accuracy
        As for :class:`~plda.PLDAccountant`.

    Examples
    --------
    >>> from plda.adapters.opacus import PLDOpacusAccountant
    >>> acct = PLDOpacusAccountant()
    >>> for _ in range(10):
    ...     acct.step(noise_multiplier=1.1, sample_rate=0.01)
    >>> acct.history, acct.get_epsilon(1e-5) < 1, acct.sampler
    ([(1.1, 0.01, 10)], True, 'poisson')
    """

    def __init__(self, relation: str = "add_remove", accuracy: float = DEFAULT_ACCURACY):
        self.accountant = PLDAccountant(relation=relation, accuracy=accuracy)
        #: the epochs of a one-pass loader, when the steps are accounted that way
        self.epochs: OnePassEpochs | None = None

    @classmethod
    def mechanism(cls) -> str:
        """Accounting mechanism name (the key in Opacus's registry)."""
        return MECHANISM

    @property
    def sampler(self) -> str:
        """``"poisson"``, or ``"shuffled"`` when steps are accounted as one-pass epochs."""
        return "poisson" if self.epochs is None else "shuffled"

    def account_one_pass(self, num_batches: int) -> None:
        """Account the coming steps as epochs of a loader that puts every record in exactly one
        of its ``num_batches`` batches per pass (``DataLoader(shuffle=True)`` or
        ``shuffle=False``, without a dropped partial batch): one :class:`~plda.Shuffled` epoch
        per ``num_batches`` batches (:class:`plda.adapters.epochs.OnePassEpochs`).

        ``make_private`` calls it when it finds such a loader. Needs ``relation="replace_one"``
        and no step recorded yet (``ValueError`` otherwise, nothing changed).
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
        """Record one DP-SGD step (noise multiplier sigma, Poisson sample rate q; for one-pass
        epochs, ``sample_rate`` is the fraction of the epoch's batches the step used).
        ``accumulation_steps=m``: the step summed ``m`` Poisson micro-batches of rate q before
        adding the noise (:meth:`plda.PLDAccountant.step`); Poisson steps only."""
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
        """Certified upper bound on epsilon at ``delta``; 0 before the first step."""
        if kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)} (plda takes only delta)")
        if self.epochs is not None:
            return self.epochs.epsilon(delta)
        return float(self.accountant.epsilon(delta))

    def get_epsilon_bounds(self, delta: float) -> Bounds:
        """Certified ``Bounds(lower=..., upper=...)`` on epsilon at ``delta``."""
        if self.epochs is not None:
            return self.epochs.epsilon_bounds(delta)
        return certified.epsilon_bounds(self.accountant, delta)

    def __len__(self) -> int:
        return len(self.accountant) if self.epochs is None else self.epochs.steps

    def __repr__(self) -> str:
        return (
            f"PLDOpacusAccountant(relation={self.accountant.relation!r}, "
            f"accuracy={self.accountant.accuracy!r}, steps={len(self)})"
        )

    @property
    def history(self) -> list[tuple[float, float, int]]:
        """Opacus-style history ``[(noise_multiplier, sample_rate, steps), ...]`` of the DP-SGD
        steps (other mechanisms composed on :attr:`accountant`, and steps with gradient
        accumulation, which no such triple describes, are not listed: see
        ``accountant.history``; for one-pass epochs ``sample_rate`` is ``1 / steps per
        epoch``).

        Assigning a list of such triples replaces everything recorded by Poisson steps
        (Opacus's ``get_noise_multiplier`` does this); on a bad entry nothing changes.
        """
        if self.epochs is not None:
            return self.epochs.history()
        out = []
        for mechanism, count in self.accountant.history:
            if isinstance(mechanism, PoissonSampled) and type(mechanism.mechanism) is Gaussian:
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

    def _adopt_caller_loader(self) -> None:
        """Called from Opacus's ``make_private``: account for the loader it prepared, or warn
        with :class:`~plda.SamplerMismatchWarning` saying what to do."""
        loader, depth, calibrated = _caller_loader()
        if loader is None:
            return
        found = describe_loader(loader)
        relation = self.accountant.relation
        stacklevel = 4 + depth  # the user's call of make_private
        one_pass = found.kind in ONE_PASS_KINDS and found.every_record_once
        if found.kind == "poisson" and self.epochs is None:
            return
        if one_pass and relation == "replace_one" and found.num_batches:
            if self.epochs is not None and self.epochs.num_batches == found.num_batches:
                return  # the same kind of loader again: its epochs go on
            if not len(self):
                self.account_one_pass(found.num_batches)
                if calibrated:
                    warnings.warn(
                        "make_private_with_epsilon calibrated the noise for Poisson batches "
                        "(Opacus's get_noise_multiplier), but this loader's epochs are "
                        f"accounted as shuffled epochs ({found.description}): the epsilon "
                        "will exceed target_epsilon. Choose the noise multiplier for the "
                        "shuffled epochs (under replace-one, each epoch's upper bound is one "
                        "Gaussian of sensitivity 2) and call make_private, or use "
                        "poisson_sampling=True.",
                        SamplerMismatchWarning,
                        stacklevel=stacklevel + 1,  # the user's make_private_with_epsilon
                    )
                return
        if len(self) and (found.kind == "poisson" or one_pass):
            message = (
                f"the accountant already holds {len(self)} steps accounted as {self.sampler}, "
                f"and make_private now prepared {found.kind} batches ({found.description}): "
                "use a new PrivacyEngine for the new loader"
            )
        elif found.kind == "poisson":  # one-pass accounting set by hand, nothing recorded
            self.accountant = PLDAccountant(relation=relation, accuracy=self.accountant.accuracy)
            self.epochs = None
            return
        else:
            message = mismatch_message(found, relation)
        warnings.warn(message, SamplerMismatchWarning, stacklevel=stacklevel)

    def get_optimizer_hook_fn(self, sample_rate: float):
        """Callback for Opacus's ``DPOptimizer.attach_step_hook``: records a step with the
        optimizer's noise multiplier.

        Opacus passes the rate of one batch, and the optimizer's ``accumulated_iterations``
        says how many batches' clipped gradients the step summed (``m > 1``: gradient
        accumulation, ``optimizer.step()`` called every ``m`` batches). Each Poisson batch is
        sampled anew, so a record can be in several of them: the step is recorded as
        ``accumulation_steps=m`` at the batch's rate (:meth:`plda.PLDAccountant.step`), not as
        one step at rate ``m q`` (which Opacus's own accountants do, and which under-reports).
        Opacus's ``BatchMemoryManager`` is not affected: its physical batches split one
        sampled logical batch, each skipped step clears the per-sample gradients, and the
        recorded step sees ``accumulated_iterations = 1``. For one-pass epochs the step used
        ``m`` of the epoch's batches (rate ``m q``).

        Called from Opacus's ``make_private``, it first reads the data loader that
        ``make_private`` prepared and accounts for it (see the module docstring)."""
        self._adopt_caller_loader()

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
        """Opacus-style state: ``history`` and ``mechanism`` plus the full plda state under
        ``"plda"`` (and ``"one_pass"`` for one-pass epochs); JSON-serializable, saved by
        Opacus's ``PrivacyEngine.save_checkpoint``."""
        if destination is None:
            destination = OrderedDict()
        destination["history"] = self.history
        destination["mechanism"] = self.mechanism()
        destination["plda"] = self.accountant.state_dict()
        if self.epochs is not None:
            destination["one_pass"] = self.epochs.state_dict()
        return destination

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore from :meth:`state_dict` (``ValueError`` and no change on a bad state)."""
        if not isinstance(state_dict, dict) or not state_dict:
            raise ValueError("state_dict must be a non-empty dict from state_dict()")
        name = state_dict.get("mechanism")
        if name != self.mechanism() and name not in _OLD_MECHANISMS:
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
    register_accountant(MECHANISM, PLDOpacusAccountant, force=True)
