"""Make docs/figures/tradeoff.png: the f-DP reading of the reference DP-SGD run (Poisson-sampled
Gaussian, q = 256/60000, sigma = 1.1, 14062 steps) — tradeoff curve with a Gaussian-DP reference,
the membership-inference view at low false-positive rates, and epsilon over training by PLD,
RDP and GDP-central-limit accounting.

Run from the repository root: ``python docs/figures/make_tradeoff_figure.py``.
"""

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

import plda  # noqa: E402
from plda.plot import profiles  # noqa: E402
from plda.plot import steps as steps_plots

# PLDA_FIGURES_DIR: the docs build draws into its own folder (tracked files stay untouched)
FIGURES_DIR = Path(os.environ.get("PLDA_FIGURES_DIR", Path(__file__).resolve().parent))
OUTPUT = FIGURES_DIR / "tradeoff.png"


def main() -> None:
    step = plda.PoissonSampled(plda.Gaussian(sigma=1.1), sample_rate=256 / 60000)
    pld = plda.PrivacyLossDistribution.from_mechanism(step).self_compose(14062)
    mu = pld.gdp_mu(delta_floor=1e-9)
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    profiles.tradeoff(pld, axes[0], reference_mu=mu, label="DP-SGD")
    profiles.tradeoff(pld, axes[1], reference_mu=mu, log_scale=True, label="DP-SGD")
    steps = [50, 150, 500, 1500, 4700, 14062]
    steps_plots.accounting_comparison(step, steps, 1e-5, axes[2])
    fig.suptitle("DP-SGD, q = 256/60000, σ = 1.1, 14062 steps "
                 f"(reference: certified {mu:.3f}-GDP down to δ = 1e-9)")
    fig.tight_layout()
    fig.savefig(OUTPUT, dpi=110)
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
