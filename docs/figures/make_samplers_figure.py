"""Make docs/figures/samplers.png: epsilon(delta = 1e-5) against epochs for a CIFAR-10-sized
DP-SGD run (50,000 examples, batches of 256, so 195 steps per epoch, noise multiplier 1,
clipping norm 1, add/remove), under three batch samplers, each with its certified bracket:

- Poisson sampling at rate 256 / 50000 (``plda.PoissonSampled``, 195 steps per epoch);
- balls-in-bins, each record in one random step per epoch (``plda.RandomAllocation``);
- one shuffled pass per epoch (``plda.Shuffled``): the band between the certified lower bound
  (the largest over ``lower_bound_mechanisms()``, the worst-case inputs of Chua et al.: the
  other records at ``-C`` or at 0) and the certified upper bound (no amplification). The true
  epsilon of shuffling lies somewhere in the band.

Run from the repository root: ``python docs/figures/make_samplers_figure.py``.
"""

import os
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's plda

import plda  # noqa: E402
from plda import PrivacyLossDistribution as PLD  # noqa: E402

# PLDA_FIGURES_DIR: the docs build draws into its own folder (tracked files stay untouched)
FIGURES_DIR = Path(os.environ.get("PLDA_FIGURES_DIR", Path(__file__).resolve().parent))
OUTPUT = FIGURES_DIR / "samplers.png"

DATASET, BATCH, SIGMA, DELTA = 50_000, 256, 1.0, 1e-5
STEPS = DATASET // BATCH  # 195 steps per epoch
EPOCHS = list(range(1, 9))


def brackets():
    """``{name: (lowers, uppers)}`` over :data:`EPOCHS`."""
    gauss = plda.Gaussian(SIGMA)
    poisson = plda.PoissonSampled(gauss, BATCH / DATASET)
    allocation = plda.RandomAllocation(gauss, STEPS)
    shuffled = plda.Shuffled(gauss, STEPS)
    out = {"poisson": ([], []), "allocation": ([], []), "shuffled": ([], [])}
    for epochs in EPOCHS:
        for name, pld in (("poisson", PLD.from_mechanism(poisson, STEPS * epochs)),
                          ("allocation", PLD.from_mechanism(allocation, epochs))):
            bounds = pld.epsilon_bounds(DELTA)
            out[name][0].append(bounds.lower)
            out[name][1].append(bounds.upper)
        with warnings.catch_warnings():  # the two warnings say what this figure shows
            warnings.simplefilter("ignore", plda.NotTightWarning)
            warnings.simplefilter("ignore", plda.SamplerAssumptionWarning)
            upper = PLD.from_mechanism(shuffled, epochs).epsilon_bounds(DELTA).upper
        # each realized input's pair gives a certified lower bound: the band starts at the best
        lower = max(PLD.from_mechanism(mechanism, epochs).epsilon_bounds(DELTA).lower
                    for mechanism in shuffled.lower_bound_mechanisms())
        out["shuffled"][0].append(lower)
        out["shuffled"][1].append(upper)
    return out


def main() -> None:
    data = brackets()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    styles = {
        "shuffled": ("tab:red", "shuffled (one pass per epoch): certified bracket"),
        "allocation": ("tab:green", "balls-in-bins (RandomAllocation): certified bracket"),
        "poisson": ("tab:blue", "Poisson sampling, rate 256/50000: certified bracket"),
    }
    for name, (color, label) in styles.items():
        lower, upper = data[name]
        ax.fill_between(EPOCHS, lower, upper, color=color, alpha=0.25, linewidth=0)
        ax.plot(EPOCHS, upper, color=color, lw=1.5, label=label)
        ax.plot(EPOCHS, lower, color=color, lw=1.0, ls="--")
    ax.set_yscale("log")
    ax.set_xlabel("epochs (195 steps each)")
    ax.set_ylabel(r"$\varepsilon$ at $\delta = 10^{-5}$")
    ax.set_title("CIFAR-10-sized DP-SGD, noise multiplier 1: which sampler ran?", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center right")
    ax.text(0.02, 0.02, "solid: certified upper bound; dashed: certified lower bound",
            transform=ax.transAxes, fontsize=7, color="0.3")
    fig.tight_layout()
    fig.savefig(OUTPUT, dpi=150)
    print(f"wrote {OUTPUT}")
    for name in ("poisson", "allocation", "shuffled"):
        pairs = ", ".join(f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(*data[name], strict=True))
        print(f"{name}: {pairs}")


if __name__ == "__main__":
    main()
