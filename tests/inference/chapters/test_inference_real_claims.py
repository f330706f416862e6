"""The real-data chapter's claims as functions: each holds on results that meet its criterion
and fails, with a reason, on results that do not."""

from __future__ import annotations

import math

import numpy as np
import pytest

from physid.inference.chapters import inference_real_claims as claims
from physid.inference.chapters import inference_real_pendulum as rp

LIMITS = rp.real_limits()
STATISTICS = tuple(rp.PAPER_BAYESSIM)


def _valid(verdict):
    verdict.claim("quick", "real-estimators")
    return verdict


def _run(family: str, shooting: str, metrics=(1.0, 1.0, 1.0), theta=None) -> rp.RealRun:
    estimator = rp.FAMILIES.get(family, ("BayesSim", "BayesSim"))[rp.SHOOTINGS.index(shooting)]
    theta = np.tile(LIMITS.lower + 0.5 * LIMITS.width, (8, 1)) if theta is None else theta
    return rp.RealRun(family, estimator, shooting, 0, 1.0, 8, theta,
                      rp.Metrics(*metrics, unstable=0, distinct=8), -1.0)


def _runs(**metrics) -> dict[tuple[str, str], rp.RealRun]:
    """Table II where CSVGD is best (0.1 on every metric, the others 1.0); ``metrics`` replaces
    the metrics of a run named ``<family>_<shooting>`` (with ``CSVGD`` for ``(C)SVGD``)."""
    runs = {}
    for family in rp.FAMILIES:
        for shooting in rp.SHOOTINGS:
            key = f"{family.replace('(C)', 'C')}_{shooting}"
            default = (0.1, 0.1, 0.1) if key == "CSVGD_multiple" else (1.0, 1.0, 1.0)
            runs[(family, shooting)] = _run(family, shooting, metrics.get(key, default))
    return runs


def _bayessim(**metrics) -> list[rp.RealRun]:
    return [_run(f"BayesSim ({st})", "single", metrics.get(st, (1.0, 1.0, 1.0)))
            for st in STATISTICS]


def test_show_metric_writes_na_for_missing_values():
    assert claims.show_metric(0.0366) == "0.0366"
    assert claims.show_metric(math.nan) == claims.show_metric(math.inf) == "N/A"


def test_csvgd_best_needs_every_metric_strictly_lowest():
    best = _valid(claims.csvgd_best_claim(_runs(), _bayessim()))
    assert best.holds and best.ours == "CSVGD 0.1 / 0.1 / 0.1, below all"
    assert best.numbers == {"paper_csvgd_kl_rs": 5204.5336, "paper_csvgd_kl_sr": 2773.1751,
                            "paper_csvgd_mmd": 0.0366}
    fails = _valid(claims.csvgd_best_claim(_runs(CSVGD_single=(0.1, 1.0, 1.0)),
                                           _bayessim(summary=(1.0, 0.05, 1.0))))
    assert not fails.holds
    assert "lower or equal KL(real‖sim): SVGD (single)" in fails.ours
    assert "BayesSim (summary) reach as low a KL(sim‖real)" in fails.why


def test_csvgd_best_counts_na_against_csvgd():
    fails = _valid(claims.csvgd_best_claim(_runs(CSVGD_multiple=(0.1, math.nan, 0.1)),
                                           _bayessim()))
    assert not fails.holds and fails.ours.startswith("CSVGD 0.1 / N/A / 0.1;")


def test_csvgd_beats_bayessim_names_the_best_variant():
    beats = _valid(claims.csvgd_beats_bayessim_claim(_runs(), _bayessim(signature=(1, 1, 0.5))))
    assert beats.holds and beats.ours == "CSVGD MMD 0.1; best BayesSim BayesSim (signature) 0.5"
    fails = _valid(claims.csvgd_beats_bayessim_claim(_runs(), _bayessim(difference=(1, 1, 0.1))))
    assert not fails.holds
    assert fails.why.startswith("BayesSim (difference) reach as low a MMD: the density network")


def test_sgld_gain_needs_a_tenfold_fall():
    helps, gain = claims.sgld_gain_claim(_runs(SGLD_multiple=(1.0, 1.0, 0.05)), 4)
    assert _valid(helps).holds and gain == 20.0 and helps.ours == "MMD 1 → 0.05 (20×)"
    rises, gain = claims.sgld_gain_claim(_runs(SGLD_multiple=(1.0, 1.0, 2.0)), 4)
    assert not _valid(rises).holds and gain == 0.5
    assert "MMD rises from 1 to 2" in rises.why and "23-dimensional" in rises.why
    missing, gain = claims.sgld_gain_claim(_runs(SGLD_multiple=(1.0, 1.0, math.nan)), 4)
    assert not _valid(missing).holds and math.isnan(gain) and "(N/A×)" in missing.ours


def test_mcmc_no_gain_fails_on_a_twofold_fall():
    assert _valid(claims.mcmc_no_gain_claim(_runs(Emcee_multiple=(1, 1, 0.6)))).holds
    unstable = _valid(claims.mcmc_no_gain_claim(_runs(Emcee_multiple=(1, math.nan, math.nan))))
    assert unstable.holds and "Emcee MMD 1 → N/A" in unstable.ours
    fails = _valid(claims.mcmc_no_gain_claim(_runs(NUTS_multiple=(1, 1, 0.25))))
    assert not fails.holds and fails.why.startswith("NUTS (4.0×) lowers its MMD at least twofold")


def test_cem_collapse_is_judged_on_both_shootings():
    runs = _runs()
    assert _valid(claims.cem_collapse_claim(runs, LIMITS)).holds
    spread = LIMITS.lower + LIMITS.width * np.linspace(0.2, 0.8, 8)[:, None]
    runs[("CEM", "multiple")] = _run("CEM", "multiple", theta=spread)
    fails = _valid(claims.cem_collapse_claim(runs, LIMITS))
    assert not fails.holds
    assert fails.why == ("CEM's final particles still spread over 0 % (single) and 20 % "
                         "(multiple) of the limits' width.")


def test_box_modes_need_a_tenth_in_each():
    pair = np.array([0.1, 0.0, -0.1, 0.0])
    both = _valid(claims.box_modes_claim(np.stack([pair, pair[[2, 3, 0, 1]]] * 4), 5))
    assert both.holds and both.ours.startswith("50 % of the particles in the mode")
    centre = _valid(claims.box_modes_claim(np.zeros((8, 4)), 5))
    assert not centre.holds
    assert centre.why == ("after 5 iterations only 0 % of CSVGD's particles are in a mode; "
                          "100 % balance the box, the others of those with the weights nearer "
                          "the centre.")


def test_box_nuts_collapse_below_a_centimetre():
    still = np.zeros((8, 4)) + 1e-4 * np.arange(8)[:, None]
    assert _valid(claims.box_nuts_claim(still)).holds
    spread = _valid(claims.box_nuts_claim(0.05 * np.arange(8)[:, None] * np.ones((1, 4))))
    assert not spread.holds and spread.why.startswith("NUTS' last samples spread over 11 cm")


def _predicting(family: str, rmse: float, energy: float) -> rp.RealRun:
    run = _run(family, "multiple") if family in rp.FAMILIES else _run("(C)SVGD", "multiple")
    metrics = rp.Metrics(1.0, 1.0, 1.0, 0, 8, (0.1, rmse, 5.0), (0.1, energy, 5.0))
    return rp.RealRun(family, "prior", "none", 0, 0.0, 0, run.theta, metrics, -1.0)


def test_predicts_better_than_prior_needs_both_scores_below_every_baseline():
    baselines = [_predicting("prior mean", 1.2, 1.2), _predicting("prior draws", 1.3, 1.0)]
    runs = _runs()
    runs[("(C)SVGD", "multiple")] = _predicting("(C)SVGD", 1.1, 0.9)
    holds = _valid(claims.predicts_better_than_prior_claim(runs, baselines))
    assert holds.holds and holds.id.startswith("physid-")
    assert "(C)SVGD 1.1 / 0.9 rad" in holds.ours
    runs[("(C)SVGD", "multiple")] = _predicting("(C)SVGD", 1.1, 1.05)  # draws score lower
    fails = _valid(claims.predicts_better_than_prior_claim(runs, baselines))
    assert not fails.holds and fails.why.startswith("prior draws scores as well")
    runs[("(C)SVGD", "multiple")] = _predicting("(C)SVGD", math.nan, 0.5)  # N/A: not better
    assert not claims.predicts_better_than_prior_claim(runs, baselines).holds


def test_predicts_better_than_prior_takes_one_of_the_horizons():
    with pytest.raises(ValueError, match="horizon"):
        claims.predicts_better_than_prior_claim(_runs(), [], horizon=0.5)
