"""Queries on a composition beyond ``epsilon(delta)``: privacy profiles, f-DP tradeoff curves,
Gaussian DP, Rényi DP and zCDP.

The modules here read a composition as :class:`~plda.conversions.composed.ComposedLaws` — its
steps (mechanisms and counts, for closed forms and per-step Rényi cumulants) and its composed
grid laws per direction, upper and lower — and never a
:class:`~plda.PrivacyLossDistribution`, so imports point one way: mechanisms → discretization →
composition → conversions → ``plda.pld``. The doors that accept a composition are the methods
of :class:`~plda.PrivacyLossDistribution` and :class:`~plda.PLDAccountant`
(:mod:`~plda.conversions.queries`).

- :mod:`~plda.conversions.composed`: the input value;
- :mod:`~plda.conversions.queries`: the doors, inherited by the PLD and the accountant;
- :mod:`~plda.conversions.profile`: certified samples of the privacy profile;
- :mod:`~plda.conversions.envelope`: lower envelopes of lines (conjugates of the profile);
- :mod:`~plda.conversions.tradeoff`: tradeoff curves and membership inference;
- :mod:`~plda.conversions.gdp`: Gaussian DP;
- :mod:`~plda.conversions.cumulants` and :mod:`~plda.conversions.sampled_gaussian`: per-step
  Rényi cumulants;
- :mod:`~plda.conversions.renyi` and :mod:`~plda.conversions.zcdp`: Rényi DP and zCDP of the
  composition, and RDP to ``(epsilon, delta)``.
"""
