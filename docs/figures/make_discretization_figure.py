"""Make docs/figures/discretization.png (docs/concepts/discretization.md).

Left: the privacy profile of one Gaussian mechanism (mu = 1) and its pessimistic and optimistic
grid versions on a deliberately coarse grid (step 0.5). Right: certified epsilon bounds of a
DP-SGD run (q = 0.01, sigma = 1, 1000 steps, delta = 1e-5) against the grid step.

Run from the repository root: ``python docs/figures/make_discretization_figure.py``.
"""

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.stats import norm  # noqa: E402

import plda  # noqa: E402

# PLDA_FIGURES_DIR: the docs build draws into its own folder (tracked files stay untouched)
FIGURES_DIR = Path(os.environ.get("PLDA_FIGURES_DIR", Path(__file__).resolve().parent))
OUTPUT = FIGURES_DIR / "discretization.png"


def main() -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))

    epsilon = np.linspace(0, 3, 301)
    exact = norm.cdf(-epsilon + 0.5) - np.exp(epsilon) * norm.cdf(-epsilon - 0.5)
    coarse = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=1.0), step=0.5)
    lower, upper = coarse.delta_bounds(epsilon)
    left.semilogy(epsilon, upper, color="C3", label="pessimistic (connect the dots)")
    left.semilogy(epsilon, exact, color="k", lw=1, label="exact")
    left.semilogy(epsilon, lower, color="C0", label="optimistic (merge, round down)")
    for loss in np.arange(0, 3.01, 0.5):
        left.axvline(loss, color="0.85", lw=0.8, zorder=0)
    left.set_xlabel("epsilon (grey lines: grid losses, step 0.5)")
    left.set_ylabel("delta(epsilon)")
    left.set_title("One Gaussian, mu = 1, coarse grid")
    left.legend(fontsize=8)

    run = plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.01)
    steps = np.geomspace(2e-4, 2e-2, 9)
    fixed = [plda.PrivacyLossDistribution.from_mechanism(run, 1000, step=h) for h in steps]
    bounds = np.array([pld.epsilon_bounds(1e-5) for pld in fixed])
    default = plda.PrivacyLossDistribution.from_mechanism(run, count=1000)
    low, high = default.epsilon_bounds(1e-5)
    right.semilogx(steps, bounds[:, 1], "o-", color="C3", label="upper bound")
    right.semilogx(steps, bounds[:, 0], "o-", color="C0", label="lower bound")
    right.axvline(default.grid_step, color="0.5", ls="--", lw=1)
    right.annotate(
        f"default (accuracy 1e-3):\n[{low:.4f}, {high:.4f}]",
        (default.grid_step, high),
        xytext=(12, 30),
        textcoords="offset points",
        fontsize=8,
        arrowprops={"arrowstyle": "->", "color": "0.4"},
    )
    right.set_ylim(1.2, 2.4)
    right.set_xlabel("grid step h (loss units)")
    right.set_ylabel("epsilon at delta = 1e-5")
    right.set_title("DP-SGD: q = 0.01, sigma = 1, 1000 steps")
    right.legend(fontsize=8, loc="lower left")

    fig.tight_layout()
    fig.savefig(OUTPUT, dpi=130)
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
