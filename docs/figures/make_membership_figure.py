"""Make docs/figures/membership_inference.png (docs/tutorials/tradeoff-curves.md).

A DP-SGD run (q = 0.01, sigma = 1, 1000 steps): its certified tradeoff curve, and the same curve
read as the best membership-inference attack (true- against false-positive rate, log-log), each
next to what the single guarantee (epsilon(1e-5), 1e-5)-DP alone would allow.

Run from the repository root: ``python docs/figures/make_membership_figure.py``.
"""

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import plda  # noqa: E402
import plda.plot  # noqa: E402

# PLDA_FIGURES_DIR: the docs build draws into its own folder (tracked files stay untouched)
FIGURES_DIR = Path(os.environ.get("PLDA_FIGURES_DIR", Path(__file__).resolve().parent))
OUTPUT = FIGURES_DIR / "membership_inference.png"
DELTA = 1e-5


def main() -> None:
    run = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.01), count=1000
    )
    epsilon = run.epsilon(DELTA)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5))

    plda.plot.tradeoff(run, ax=left, label="DP-SGD run")
    alpha = np.linspace(0, 1, 601)
    # tradeoff function of (epsilon, delta)-DP (Kairouz, Oh & Viswanath 2015)
    approx = np.maximum.reduce(
        [np.zeros_like(alpha), 1 - DELTA - np.exp(epsilon) * alpha,
         np.exp(-epsilon) * (1 - DELTA - alpha)]
    )
    left.plot(alpha, approx, "-.", color="C3",
              label=f"({epsilon:.2f}, {DELTA:g})-DP alone")
    left.legend(fontsize="small")

    plda.plot.tradeoff(run, ax=right, log_scale=True, label="DP-SGD run")
    fpr = np.geomspace(1e-10, 1, 600)
    right.plot(fpr, np.minimum(1, np.exp(epsilon) * fpr + DELTA), "-.", color="C3",
               label=f"({epsilon:.2f}, {DELTA:g})-DP alone")
    right.set_ylim(1e-10, 1.5)
    right.legend(fontsize="small", loc="lower right")

    fig.suptitle("DP-SGD, q = 0.01, sigma = 1, 1000 steps", fontsize=10)
    fig.tight_layout()
    fig.savefig(OUTPUT, dpi=130)
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
