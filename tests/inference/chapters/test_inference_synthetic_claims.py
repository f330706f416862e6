"""The synthetic-data chapter's claims as functions: each holds on results that meet its
criterion and fails, with a reason, on results that do not."""

from __future__ import annotations

import numpy as np

from physid.inference.chapters import inference_synthetic_claims as claims

KL = {"CSVGD": 0.5, "SVGD": 1.0, "Emcee": 2.0, "BayesSim": 0.8}
PAPER = {"SVGD": 1.0, "Emcee": 5.0, "SGLD": 20.0, "CEM": 50.0}


def _valid(verdict):
    verdict.claim("quick", "inf-comparison")
    return verdict


def test_landscape_needs_fewer_maxima():
    assert _valid(claims.landscape_claim({1: 5, 4: 1}, 4, 21, 1.0)).holds
    fails = _valid(claims.landscape_claim({1: 1, 4: 1}, 4, 21, 1.0))
    assert not fails.holds and "not yet become chaotic" in fails.why


def test_lowest_kl_names_the_estimator_that_beats_csvgd():
    assert _valid(claims.lowest_kl_claim(KL, PAPER)).holds
    fails = _valid(claims.lowest_kl_claim({**KL, "Emcee": 0.1}, PAPER))
    assert not fails.holds and fails.why.startswith("Emcee ends with a lower parameter KL (0.10)")
    assert "walkers cover the box" in fails.why


def test_multiple_shooting_needs_both_metrics():
    assert _valid(claims.multiple_shooting_claim(KL, {"SVGD": 0.2, "CSVGD": 0.1}, 8)).holds
    fails = _valid(claims.multiple_shooting_claim(KL, {"SVGD": 0.1, "CSVGD": 0.2}, 8))
    assert not fails.holds and "trajectory MMD²" in fails.why


def test_cem_collapse_is_judged_on_the_widest_run():
    tight = [np.full((8, 2), 0.2), np.full((8, 2), 0.2) + 1e-4 * np.arange(8)[:, None]]
    assert _valid(claims.cem_collapse_claim(tight, (0.1, 0.3), 3, 10)).holds
    wide = tight + [np.linspace(0.1, 0.3, 16).reshape(8, 2)]
    fails = _valid(claims.cem_collapse_claim(wide, (0.1, 0.3), 3, 10))
    assert not fails.holds and fails.numbers["cem_spread_mm"] > 2


def test_bayessim_within_a_kl_of_one():
    assert _valid(claims.bayessim_claim(KL, 100, 10)).holds
    fails = _valid(claims.bayessim_claim({**KL, "BayesSim": 1.5}, 100, 10))
    assert not fails.holds and fails.why == (
        "With 100 simulations and 10 training epochs the density network does not learn the "
        "posterior on average; whether more would is not measured.")
    seeds = _valid(claims.bayessim_claim({**KL, "BayesSim": 1.5}, 100, 10, [0.1, 2.9, 1.5]))
    assert "Per seed its KL is 0.10, 2.90, 1.50: where the density network's training" in seeds.why


def test_within_limits_allows_one_percent_of_the_range():
    inside = [np.array([[0.1, 0.3], [0.2, 0.2]])]
    assert _valid(claims.within_limits_claim([0.0], inside, (0.1, 0.3))).holds
    beyond = [np.array([[0.05, 0.3], [0.2, 0.2]])]
    fails = _valid(claims.within_limits_claim([0.5], beyond, (0.1, 0.3)))
    assert not fails.holds and "50 % beyond 1 % of the range" in fails.ours


def test_modes_kept_or_averaged():
    statement = "Both modes survive."
    assert _valid(claims.keeps_modes_claim("heiden2022-x", statement, np.array([0.4, 0.35]),
                                           0.02, 10)).holds
    assert not _valid(claims.keeps_modes_claim("heiden2022-x", statement,
                                               np.array([0.6, 0.1]), 0.02, 10)).holds
    mean = np.array([0.2, 0.2])
    assert _valid(claims.product_averages_claim(np.array([0.05, 0.0]), mean, 0.02, 10)).holds
    fails = _valid(claims.product_averages_claim(np.array([0.2, 0.0]), mean, 0.02, 10))
    assert not fails.holds and "still sit near a setting" in fails.why
