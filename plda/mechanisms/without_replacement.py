"""Fixed-size batches drawn uniformly without replacement ("sampling without replacement")."""

from __future__ import annotations

from dataclasses import dataclass

from plda._internal.validation import MIN_SAMPLE_RATE, count, in_range
from plda.mechanisms.base import Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.laplace import Laplace
from plda.mechanisms.subsampled import PoissonSampled

#: base mechanisms whose fixed-size-batch analysis plda certifies on both sides
SUPPORTED_BASES = (Gaussian, Laplace)


def check_base(name: str, mechanism) -> Mechanism:
    """``mechanism`` if it is a Gaussian or Laplace mechanism, else a TypeError saying so."""
    if type(mechanism) not in SUPPORTED_BASES:
        raise TypeError(
            f"mechanism must be plda.Gaussian or plda.Laplace for {name} (the bases whose "
            f"worst case plda certifies on both sides), got {type(mechanism).__name__}"
        )
    return mechanism


@dataclass(frozen=True)
class SampledWithoutReplacement(Mechanism):
    r"""Runs ``mechanism`` on a batch of exactly ``batch_size`` records drawn uniformly without
    replacement from a dataset of ``dataset_size`` records (``torch``'s ``RandomSampler`` with a
    fixed batch size, ``tf.data`` ``shuffle().batch()`` re-drawn every step).

    Pass the base mechanism with its *add/remove* sensitivity (for DP-SGD: the clipping norm
    ``C``); plda doubles it where the analysis requires, never the caller.

    **The analysis.** With ``q = batch_size / dataset_size``, let ``(P, Q)`` be the base's
    dominating pair under *replace-one* (for ``Gaussian(sigma, C)``: ``N(2C, sigma^2)`` vs
    ``N(0, sigma^2)``; for ``Laplace(b, C)``: ``Lap(2C, b)`` vs ``Lap(0, b)``). The step's
    privacy loss is that of ``(q P + (1-q) Q, Q)`` and of the reversed pair, the worse of the two
    reported — the law of :class:`PoissonSampled` of the base with *doubled* sensitivity:

    - *upper bound*, both relations: couple the batches of the two neighbouring datasets so that
      they are equal except, with probability ``q``, one record of the batch is *substituted* (a
      removed record's slot is taken by another record, since the batch size is fixed); advanced
      joint convexity then gives ``delta'(log(1 + q(e^eps - 1))) <= q delta_sub(eps)``
      (Balle, Barthe & Gaboardi 2018, sampling without replacement under substitution; Zhu,
      Dong & Wang 2022 for the dominating pair and its reversed direction);
    - *lower bound* (tightness): the pair is realized by actual datasets. For a sum query, let
      every record contribute ``-C`` except the differing one, ``+C`` (replace-one: ``-C`` in the
      neighbour; add/remove: absent from it). Then one dataset's batch sum is always ``-bC``
      and the other's is ``-bC + 2C`` exactly when the differing record is drawn (probability
      ``q``): the output pair *is* ``((1-q) N(0) + q N(2C), N(0))`` shifted. Composing the same
      pair ``T`` times is realized by keeping the datasets fixed, so the composed bounds are
      tight too (Lebeda, Regehr, Kamath & Steinke 2024 discuss why per-step worst cases need
      not compose in general; here one pair of datasets is worst for every step).

    So the two bounds meet: plda's ``[lower, upper]`` brackets the true ``epsilon`` under
    **both** relations. In particular fixed-size batches are *not* Poisson sampling: under
    replace-one the Poisson-sampled Gaussian has the narrower mixture pair
    ``((1-q) N(0) + q N(C), (1-q) N(0) + q N(-C))`` (:meth:`PoissonSampled.under_replace_one`),
    whose ``epsilon`` is smaller, and under add/remove Poisson sampling has sensitivity ``C``,
    not ``2C``. Reporting either for a fixed-size sampler under-reports the privacy loss.

    **Dataset size under add/remove.** A neighbour has one record more or one fewer, so its
    sampling rate is ``b/(n+1)`` or ``b/n``; the analysis uses ``q = b / dataset_size``, the
    larger, which covers every neighbouring pair whose larger dataset holds at least
    ``dataset_size`` records (``delta`` grows with ``q``), in particular both neighbours of the
    dataset you trained on. Under replace-one both datasets hold ``dataset_size`` records.

    Parameters
    ----------
    mechanism
        ``plda.Gaussian`` or ``plda.Laplace`` with its add/remove sensitivity.
    batch_size
        Records per batch, an integer in ``[1, dataset_size]``.
    dataset_size
        Records in the dataset, an integer ``>= 1``.

    Examples
    --------
    >>> import plda
    >>> wor = plda.SampledWithoutReplacement(plda.Gaussian(sigma=1.0), 256, 60000)
    >>> wor.sample_rate
    0.004266666666666667
    >>> wor.equivalent_poisson()
    PoissonSampled(mechanism=Gaussian(sigma=1.0, sensitivity=2.0), sample_rate=0.004266666666666667)
    """

    mechanism: Mechanism
    batch_size: int
    dataset_size: int

    def __post_init__(self):
        check_base("SampledWithoutReplacement", self.mechanism)
        size = count("dataset_size", self.dataset_size, minimum=1)
        object.__setattr__(self, "dataset_size", size)
        size = count("batch_size", self.batch_size, minimum=1)
        if size > self.dataset_size:
            raise ValueError(
                f"batch_size must be an integer in [1, dataset_size={self.dataset_size}], "
                f"got {self.batch_size!r}"
            )
        object.__setattr__(self, "batch_size", size)
        in_range("batch_size / dataset_size", self.sample_rate, MIN_SAMPLE_RATE, 1.0,
                 "smaller rates give only loose bounds on the grid")

    @property
    def sample_rate(self) -> float:
        """``batch_size / dataset_size``: the probability that a given record is in a batch."""
        return self.batch_size / self.dataset_size

    def equivalent_poisson(self) -> PoissonSampled:
        """The :class:`PoissonSampled` mechanism with the same privacy-loss laws (under
        add/remove): the base with its replace-one (doubled) sensitivity, at rate ``q``."""
        return PoissonSampled(self.mechanism.under_replace_one(), self.sample_rate)

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        return self.equivalent_poisson().symmetric

    def _remove_law(self):
        return self.equivalent_poisson().privacy_loss("remove")

    def _add_law(self):
        return self.equivalent_poisson().privacy_loss("add")

    def _coarsened(self) -> Mechanism:
        return self.equivalent_poisson()._coarsened()

    def under_replace_one(self) -> Mechanism:
        """This mechanism itself: its laws already are the replace-one laws (a fixed batch
        size turns a removal into a substitution), so nothing is doubled a second time."""
        return self
