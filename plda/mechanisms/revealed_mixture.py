"""A mixture of privacy-loss laws whose drawn component is revealed with the output
(:class:`RevealedMixtureLaw`): it dominates the plain mixture, and every probability is the
weighted sum of the components'."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from plda.mechanisms.law import PrivacyLossLaw


@dataclass(frozen=True, eq=False)
class RevealedMixtureLaw(PrivacyLossLaw):
    r"""Law of a mixture whose drawn component is revealed with the output.

    The pair is ``(sum_k w_k delta_k x P_k, sum_k w_k delta_k x Q_k)``: component ``k`` is
    drawn with probability ``w_k`` (the same under both hypotheses). Its loss is the loss of
    the drawn component, so every probability is the ``w``-weighted sum of the components'
    (under ``P`` and under ``Q`` alike) and ``delta(eps) = sum_k w_k delta_k(eps)``. Revealing
    ``k`` only helps an adversary, so the pair dominates the plain mixture
    ``(sum w_k P_k, sum w_k Q_k)`` (post-processing).

    Parameters
    ----------
    components
        The component laws.
    weights
        Their probabilities; they must sum to 1 (within ``1e-12``).

    Raises
    ------
    ValueError
        If ``components`` and ``weights`` are empty or of different lengths, or the weights
        are negative or do not sum to 1.
    """

    components: tuple = ()
    weights: tuple = ()

    def __post_init__(self):
        if len(self.components) != len(self.weights) or not self.components:
            raise ValueError("components and weights must be non-empty and of one length")
        w = np.asarray(self.weights, dtype=float)
        if np.any(w < 0) or abs(w.sum() - 1.0) > 1e-12:
            raise ValueError(f"weights must be >= 0 and sum to 1, got {self.weights!r}")
        pairs = list(zip(w, self.components, strict=True))
        object.__setattr__(self, "atom_losses",
                           np.concatenate([law.atom_losses for _, law in pairs]))
        object.__setattr__(self, "atom_probs",
                           np.concatenate([wk * law.atom_probs for wk, law in pairs]))
        for name in ("infinity_mass", "neg_infinity_mass", "truncated_mass"):
            total = sum(wk * getattr(law, name) for wk, law in pairs)
            object.__setattr__(self, name, float(total))

    def _continuous(self):
        return [(wk, law) for wk, law in zip(self.weights, self.components, strict=True)
                if law.has_continuous_part and wk > 0]

    @property
    def has_continuous_part(self):  # type: ignore[override]
        """Whether a component of positive weight has a continuous part."""
        return bool(self._continuous())

    @property
    def has_density(self):  # type: ignore[override]
        """Whether every such component has a density."""
        return all(law.has_density for _, law in self._continuous())

    @property
    def continuous_support(self):
        """The hull of those components' continuous supports."""
        ends = [law.continuous_support for _, law in self._continuous()] or [(0.0, 0.0)]
        return (min(lo for lo, _ in ends), max(hi for _, hi in ends))

    def _weighted(self, method: str, x, hypothesis: str):
        x = np.asarray(x, dtype=float)
        out = np.zeros(x.shape)
        for wk, law in self._continuous():
            out = out + wk * getattr(law, method)(x, hypothesis)
        return out

    def _cont_cdf(self, x, hypothesis):
        return self._weighted("_cont_cdf", x, hypothesis)

    def _cont_sf(self, x, hypothesis):
        return self._weighted("_cont_sf", x, hypothesis)

    def _cont_pdf(self, x, hypothesis):
        return self._weighted("_cont_pdf", x, hypothesis)

    def _cont_cdf_sf(self, x):
        x = np.asarray(x, dtype=float)
        total = [np.zeros(x.shape) for _ in range(4)]
        for wk, law in self._continuous():
            for i, part in enumerate(law._cont_cdf_sf(x)):
                total[i] = total[i] + wk * part
        return tuple(total)

    def _cont_tail(self, mass, hypothesis):
        # each component leaves at most `mass` of its own (weight-1) law outside its points, so
        # the weighted sum leaves at most `mass` outside the outermost points
        tails = [law._cont_tail(mass, hypothesis) for _, law in self._continuous()]
        return min(a for a, _ in tails), max(b for _, b in tails)
