"""Queries on a composition beyond ``epsilon(delta)``: privacy profiles, f-DP tradeoff curves,
Gaussian DP, Rényi DP and zCDP.

The modules read a composition as :class:`~plda.conversions.composed.ComposedLaws` (its steps and
its composed grid laws), never as a :class:`~plda.PrivacyLossDistribution`, whose queries are the
public entry points. The mathematics: ``docs/tradeoff.md`` and
``docs/concepts/privacy-definitions.md``. The doors that accept a composition are the methods of
:class:`~plda.PrivacyLossDistribution` and :class:`~plda.PLDAccountant`, defined once in
:mod:`~plda.conversions.queries`.
"""
