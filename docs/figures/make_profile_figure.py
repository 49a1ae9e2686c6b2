"""Make docs/figures/privacy_profile.png (docs/tradeoff.md, "Plots"): the privacy profile as
``plda.plot.privacy_profile`` draws it, over ranges wide enough to reach the numerics' floors.

Left: a DP-SGD run (q = 0.01, sigma = 1, 1000 steps), epsilon from 0 to 12: below the FFT's
rounding floor (delta ~ 1e-11) the bounds come from the engine's tilted composition, down to
the truncated tails' mass (~1e-29), which is marked as a floor. Right: one Gaussian mechanism
(mu = 1), epsilon from 0 to 40, with ``refine=True``: resolved down to ~1e-30, then a floor.

Run from the repository root: ``python docs/figures/make_profile_figure.py``.
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
OUTPUT = FIGURES_DIR / "privacy_profile.png"


def main() -> None:
    run = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.01), count=1000
    )
    gaussian = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=1.0))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    plda.plot.privacy_profile(run, left, epsilon=np.linspace(0, 12, 400), label="DP-SGD run")
    left.set_title("DP-SGD, q = 0.01, σ = 1, 1000 steps")
    plda.plot.privacy_profile(gaussian, right, epsilon=np.linspace(0, 40, 400),
                              label="Gaussian, μ = 1", refine=True)
    right.set_title("One Gaussian mechanism, μ = 1 (refine=True)")
    fig.tight_layout()
    fig.savefig(OUTPUT, dpi=130)
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
