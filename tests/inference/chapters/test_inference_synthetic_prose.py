"""The synthetic-data chapter's prose: what it says about each result, each way it can come
out."""

from __future__ import annotations

import numpy as np
import pytest

from physid.book.display import Bounded, glue_all
from physid.inference.chapters import inference_synthetic as ex
from physid.inference.chapters import inference_synthetic_prose as prose

TINY = ex.with_sizes(ex.SIZES["quick"], n_references=1, n_steps=10, truth_samples=10)
NAMES = ("CSVGD", "SVGD", "SGLD", "CEM", "Emcee", "NUTS", "BayesSim")


def final(kl, ll):
    """Summaries of the seven estimators with these KLs and log-likelihoods (in NAMES' order)."""
    return {
        name: {"parameter KL": k, "MMD": 0.5, "log-likelihood": v}
        for name, k, v in zip(NAMES, kl, ll, strict=True)
    }


KL = (2.5, 1.9, 3.9, 3.9, 1.3, 2.6, 3.2)
LL = (-10.0, -8.0, -11.0, -0.7, -4.0, -7.8, -48.0)


def glue(monkeypatch, values):
    """What :func:`glue_all` glues of ``values`` (each number checked against its range)."""
    import myst_nb

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda n, v, display=True: glued.update({n: v}))
    glue_all(values)
    return glued


def test_setup_prose_states_the_sizes_and_constants(monkeypatch):
    setup = prose.setup_prose(ex.SIZES["quick"])
    assert setup["truth_l1"] == Bounded(1.5, *ex.PRIOR) and setup["dt_ms"].value == 10
    assert setup["n_refs"] == "4 parameter settings" and setup["n_walkers"] == "16 walkers"
    assert setup["windows_many"] == "5 shooting windows" and setup["windows_count"].value == 5
    assert setup["mode1_l2"] == Bounded(3.9, *ex.PRIOR)
    assert setup["paper_kl_CEM"] == Bounded(14.0, 0, 100)
    assert setup["csvgd_shown"].value == 16
    assert prose.setup_prose(ex.SIZES["default"])["csvgd_shown"].value == 20
    assert glue(monkeypatch, setup)["cem_components"] == 3.0


def test_gradient_error_is_small_and_simulator_prose_states_the_horizon():
    target = ex.synthetic_problem(TINY).target()
    assert 0 <= prose.gradient_error(target) < 1e-6
    assert prose.gradient_error(target, step=0.5) > prose.gradient_error(target)
    model = ex.point_mass_model(compiled=False)
    simulator = prose.simulator_prose(model, TINY, target)
    assert simulator["horizon_s"] == Bounded(pytest.approx(0.1), 0, 1000)
    assert 0 <= simulator["energy_drift_pct"].value < 100


@pytest.mark.parametrize("smoother", [True, False])
def test_landscape_prose_counts_maxima_and_reads_the_verdict(smoother):
    landscape = prose.landscape_prose({1: 1, 2: 3, 5: 2}, 5, smoother)
    assert landscape["maxima_ss"] == "1 local maximum"
    assert landscape["maxima_ms"] == "2 local maxima"
    assert landscape["landscape_verdict"].startswith(
        "multiple shooting removes" if smoother else "at this horizon"
    )


def test_metric_picks_one_summary_key():
    assert prose.metric(final(KL, LL), "parameter KL")["Emcee"] == 1.3


def test_comparison_prose_ranks_and_compares():
    one = prose.comparison_prose(final(KL, LL), 1)
    assert one["kl_CSVGD"] == Bounded(2.5, -100, 1e4) and one["mmd_CEM"] == Bounded(0.5, 0, 2)
    assert one["seed_phrase"] == "one seed per estimator"
    assert one["kl_ranking"].startswith("Emcee (1.30), SVGD (1.90), CSVGD (2.50)")
    assert one["kl_first"] == "Emcee" and one["cem_ll_rank"] == "highest"
    assert (one["svgd_ll_relation"], one["emcee_vs_paper"], one["bayessim_vs_csvgd"]) == (
        "above",
        "lower",
        "above",
    )
    # CEM second-lowest and then lowest by log-likelihood; SVGD below CSVGD; Emcee above the
    # paper; BayesSim below CSVGD.
    other = prose.comparison_prose(
        final((2.5, 1.9, 3.9, 3.9, 2.0, 2.6, 1.0), (-1, -9, -2, -20, -3, -4, -5)), 3
    )
    assert other["seed_phrase"] == "the mean over 3 seeds"
    assert other["cem_ll_rank"] == "lowest"
    assert (other["svgd_ll_relation"], other["emcee_vs_paper"], other["bayessim_vs_csvgd"]) == (
        "below",
        "higher",
        "below",
    )
    third = prose.comparison_prose(final(KL, (-1, -9, -2, -3, -20, -4, -5)), 1)
    assert third["cem_ll_rank"] == "third highest"


def test_comparison_prose_refuses_more_estimators_than_it_can_rank():
    many = {**final(KL, LL), "A": final(KL, LL)["CEM"], "B": final(KL, LL)["CEM"]}
    with pytest.raises(ValueError, match="at most 7 estimators"):
        prose.comparison_prose(many, 1)


def shares(sum_, small, ref, product=(0.5, 0.5)):
    return {
        "sum": np.array(sum_),
        "sum, h × 0.1": np.array(small),
        "product": np.array(product),
        "sum, started on reference 1": np.array(ref),
    }


def test_multimodal_prose_when_both_modes_survive_and_the_start_picks(monkeypatch):
    mm = prose.multimodal_prose(shares((0.5, 0.4), (0.3, 0.6), (0.9, 0.0)), np.array([2, 3]), 0.4)
    assert mm["sum_share_a"] == Bounded(50, 0, 100) and mm["small_share_b"].value == 60
    assert mm["product_l1"] == Bounded(2, *ex.PRIOR) and mm["mm_radius"].value == 0.4
    assert mm["sum_verdict"] == "both modes survive"
    assert mm["bandwidth_verdict"] == "the bandwidth changes little"
    assert mm["ref_verdict"] == "the start, not the likelihood, picks the mode"
    assert glue(monkeypatch, mm)["ref_share_a"] == 90.0


def test_multimodal_prose_when_modes_are_lost():
    mm = prose.multimodal_prose(shares((0.1, 0.0), (0.5, 0.5), (0.1, 0.0)), np.array([2, 3]), 0.4)
    assert mm["sum_verdict"].startswith("the particles do not gather")
    assert mm["bandwidth_verdict"] == "here the bandwidth decides whether both modes survive"
    assert mm["ref_verdict"] == "at this scale the start alone does not pick the mode"
    lost_both = prose.multimodal_prose(
        shares((0.1, 0.0), (0.1, 0.0), (0.9, 0.2)), np.array([2, 3]), 0.4
    )
    assert lost_both["bandwidth_verdict"] == "the bandwidth changes little"
    assert lost_both["ref_verdict"].startswith("at this scale")
