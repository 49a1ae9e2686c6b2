"""Make docs/figures/fft_error_floor.png (docs/concepts/fft-composition.md): certified epsilon
bounds of a DP-SGD run (q = 0.01, sigma = 1, 1000 steps) for delta from 1e-1 down to 1e-320, and
the relative gap between them.

Run from the repository root: ``python docs/figures/make_fft_figure.py``.
"""

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import plda  # noqa: E402

# PLDA_FIGURES_DIR: the docs build draws into its own folder (tracked files stay untouched)
FIGURES_DIR = Path(os.environ.get("PLDA_FIGURES_DIR", Path(__file__).resolve().parent))
OUTPUT = FIGURES_DIR / "fft_error_floor.png"


def main() -> None:
    run = plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.01)
    pld = plda.PrivacyLossDistribution.from_mechanism(run, count=1000)
    digits = np.linspace(1, 320, 320)  # delta = 10^-digits
    lower, upper = pld.epsilon_bounds(10.0**-digits)
    with np.errstate(invalid="ignore"):  # (an infinite upper bound would not be drawn)
        gap = np.where(upper > 0, (upper - lower) / upper, 0.0)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(digits, upper, color="C3", label="certified upper bound")
    left.plot(digits, lower, color="C0", label="certified lower bound")
    left.set_yscale("log")
    left.set_xlabel("log10(1 / delta)")
    left.set_ylabel("epsilon(delta)")
    left.set_title("certified bounds")
    left.legend(fontsize=8, loc="upper left")
    right.semilogy(digits, np.maximum(gap, 1e-8), color="k")
    right.axhline(pld.accuracy, color="0.5", ls="--", lw=1)
    right.text(320, pld.accuracy * 1.3, f"accuracy target {pld.accuracy:g}", ha="right",
               va="bottom", fontsize=8, color="0.3")
    right.set_ylim(1e-6, 2)
    right.set_xlabel("log10(1 / delta)")
    right.set_ylabel("(upper - lower) / upper")
    right.set_title("relative gap")
    for ax in (left, right):
        ax.set_xlim(0, 320)
    fig.suptitle("DP-SGD, q = 0.01, sigma = 1, 1000 steps", fontsize=10)
    fig.tight_layout()
    fig.savefig(OUTPUT, dpi=130)
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
