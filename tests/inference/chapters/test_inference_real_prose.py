"""The real-data chapter's prose: what it says about each result, each way it can come out."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from physid.book.display import Bounded
from physid.inference import ibm
from physid.inference.box import TRUE_BOX, TRUE_WEIGHTS
from physid.inference.chapters import inference_real_box as sb
from physid.inference.chapters import inference_real_pendulum as rp
from physid.inference.chapters import inference_real_prose as prose

QUICK = rp.SIZES["quick"]
TRUTH = np.array([TRUE_WEIGHTS[n] for n in ("w1x", "w1y", "w2x", "w2y")])


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("PHYSID_CACHE", "off")


@pytest.fixture(scope="module")
def problem():
    return rp.real_problem(QUICK)


def _run(family: str, shooting: str, metrics=(1.0, 1.0, 1.0), unstable=0, seconds=1.0):
    return rp.RealRun(family, family, shooting, 0, seconds, 8, np.zeros((8, 11)),
                      rp.Metrics(*metrics, unstable=unstable, distinct=8), -1.0)


def test_setup_prose_states_the_sizes_and_constants():
    setup = prose.setup_prose(QUICK)
    assert setup["n_steps"] == f"{QUICK.n_steps} frames"
    assert setup["horizon_s"] == Bounded(QUICK.n_steps * ibm.DT, 0, 100)
    assert setup["n_tests"] == f"{QUICK.n_tests} held-out trajectories"
    assert setup["shooting_dims"] == f"{4 * (QUICK.windows - 1)} dimensions"
    assert setup["emcee_walkers"] == f"{2 * (11 + 4 * (QUICK.windows - 1))} walkers"
    assert setup["bayessim_lags"] == "5, 10, 20, 50, 100"
    assert setup["paper_particles"] == "100 particles"
    assert setup["paper_iterations"] == "2,000 iterations"
    assert setup["l1_low"].value < setup["l1"].value < setup["l1_high"].value


def test_data_prose_names_the_recordings_or_warns_of_the_stand_in(problem):
    real = prose.data_prose(replace(problem, real=True, source="IBM runs", runs=(2, 3, 4)))
    assert real == {"data_source": "the recordings (IBM runs)", "reference_run": "2",
                    "test_runs": "3, 4"}
    stand_in = prose.data_prose(replace(problem, real=False))
    assert stand_in["data_source"].startswith("a SIMULATED STAND-IN")


def test_the_reference_tells_apart_eight_combinations_of_the_eleven(problem):
    seen = prose.identifiability_prose(replace(problem, real=False))
    assert seen["jacobian_rank"].value == 8 and seen["n_symmetries"].value == 3
    assert seen["l1_null_share"].value < 1e-8  # the joint offset is identifiable
    assert seen["smallest_identified"].value > 1e-8
    assert seen["implied_l2_text"] == "The stand-in has no markers to measure it"
    assert "implied_l2" not in seen


@pytest.mark.skipif(ibm.data_dir() is None, reason="the IBM recordings are not installed")
def test_the_markers_measure_l2(problem):
    seen = prose.identifiability_prose(replace(problem, real=True))
    implied = ibm.load_run(problem.runs[0]).implied_l2
    assert seen["implied_l2"] == Bounded(implied, 0, 1)
    assert f"run {problem.runs[0]} as {implied:.3f} m" in seen["implied_l2_text"]


@pytest.mark.parametrize(
    ("unstable", "phrase"),
    [(0, "No particle's rollout blew up"), (1, "1 particle's rollout blew up and was left out"),
     (3, "3 particles' rollouts blew up and were left out")],
)
def test_table_prose_counts_blown_up_rollouts_and_held_claims(unstable, phrase):
    runs = {
        ("(C)SVGD", "multiple"): _run("(C)SVGD", "multiple", (-186.2, math.nan, 0.02846),
                                      seconds=12.4),
        ("SGLD", "single"): _run("SGLD", "single", unstable=unstable, seconds=3.0),
    }
    bayessim = [_run("BayesSim (summary)", "single", seconds=40.0)]
    verdicts = [SimpleNamespace(holds=True), SimpleNamespace(holds=False)]
    table = prose.table_prose(runs, bayessim, 0.99941, verdicts)
    assert table["unstable_text"] == phrase
    assert table["run_seconds"] == "3–40"
    assert (table["csvgd_kl_rs"], table["csvgd_kl_sr"], table["csvgd_mmd"]) == (
        "-186.2", "N/A", "0.02846")
    assert table["sgld_gain"] == "0.9994"
    assert table["real_claims_held"] == "1 of 2 hold"


def test_box_prose_converts_units():
    box = sb.SIZES["quick"]
    phase_one = sb.PhaseOne(np.zeros((1, 11)), dict(TRUE_BOX), 0.0147, 0.0084, 1.0)
    stated = prose.box_prose(box, phase_one)
    assert stated["box_error_before_mm"] == Bounded(14.7, 0, 1e4)
    assert stated["box_error_after_mm"].value == pytest.approx(8.4)
    assert stated["box_particles"] == f"{box.n_particles} particles"
    assert stated["mode_radius_cm"].value == pytest.approx(100 * sb.MODE_RADIUS)
    assert stated["box_noise_mrad"].value == pytest.approx(1000 * sb.NOISE)


@pytest.mark.parametrize("swap", [False, True])
def test_weights_prose_puts_weight_one_on_the_plus_x_side(swap):
    top = np.array([-0.1, 0.02, 0.11, -0.03]) if swap else np.array([0.11, -0.03, -0.1, 0.02])
    stated = prose.weights_prose(top)
    assert stated["best_weights"] == "(+0.110, -0.030) m and (-0.100, +0.020) m"
    assert stated["true_weights"] == "(+0.125, +0.000) m and (-0.125, +0.000) m"


def test_the_most_likely_weights_are_the_true_ones():
    runs = [
        sb.WeightRun("CEM", 1.0, np.zeros((3, 4)), 0.0),
        sb.WeightRun("CSVGD", 1.0, np.stack((TRUTH[[2, 3, 0, 1]] * 0.5, TRUTH)), 0.0),
    ]
    np.testing.assert_array_equal(prose.most_likely_weights(runs, dict(TRUE_BOX)), TRUTH)


def test_box_convergence_prose_reads_the_paper_stop_and_the_end():
    iterations = np.array([0, 250, 500, 750, 1000])
    runs = []
    for name, end in (("CSVGD", 0.9), ("SVGD", 0.6), ("CEM", 0.0)):
        share = np.linspace(0.0, end, 5)
        trace = {"iterations": iterations, "in_modes": share, "balance": share, "reach": share}
        runs.append(sb.WeightRun(name, 1.0, np.zeros((3, 4)), 0.0, {}, trace))
    text = prose.box_convergence_prose(runs)["box_convergence_text"]
    assert text.startswith("At the paper's run length (500 iterations) CSVGD has 45 % of its")
    assert "after 1,000 iterations, CSVGD has 90 % of its particles" in text
    assert "SVGD 60 % of its particles in the modes, weight 1 a median 60.0 cm" in text
    short = [sb.WeightRun(r.estimator, 1.0, r.theta, 0.0, {},
                          {k: v[:2] for k, v in r.trace.items()}) for r in runs]
    text = prose.box_convergence_prose(short)["box_convergence_text"]
    assert text.startswith("These runs stop at 250 iterations, within the paper's 500")


def _scored(family: str, shooting: str, rmse: float, l1: float = 0.2, mmd: float = 0.1,
            start: str = "") -> rp.RealRun:
    theta = np.tile(rp.real_limits().lower, (4, 1))
    theta[:, rp.real_limits().names.index("l1")] = l1
    metrics = rp.Metrics(1.0, 1.0, mmd, 0, 4, (0.1, rmse, 5.0), (0.1, rmse - 0.1, 4.0))
    estimator = rp.FAMILIES.get(family, (family, family))[shooting == "multiple"]
    return rp.RealRun(family, estimator, shooting, 0, 1.0, 8, theta, metrics, -1.0, {}, start)


def test_prediction_prose_names_the_best_and_the_baselines(problem):
    runs = {(f, sh): _scored(f, sh, 1.0 + 0.1 * i, l1=0.1 + 0.01 * i)
            for i, (f, sh) in enumerate((f, sh) for f in rp.FAMILIES for sh in rp.SHOOTINGS)}
    runs[("SGLD", "multiple")] = _scored("SGLD", "multiple", 0.6, mmd=0.05)
    baselines = [_scored("prior mean", "none", 1.24), _scored("prior draws", "none", 1.23)]
    ablation = [_scored("SGLD", "multiple", 2.3, mmd=0.4, start="rollout")]
    seen = prose.prediction_prose(runs, baselines, ablation, problem)
    assert seen["best_short"] == "SGLD on multiple shooting"
    assert seen["best_short_rmse"].value == 0.6
    assert seen["prior_mean_rmse"].value == 1.24
    assert seen["long_rmse_text"].startswith("Over a whole second every set")
    assert "off by 5.0–5.0 rad" in seen["long_rmse_text"]
    for run in [*runs.values(), *baselines]:  # a scale shorter than a second: no 1 s horizon
        run.metrics = replace(run.metrics, rmse=run.metrics.rmse[:2] + (math.nan,))
    short = prose.prediction_prose(runs, baselines, ablation, problem)["long_rmse_text"]
    assert short.startswith("The trajectories at this scale are shorter than a second")
    assert seen["start_text"] == "SGLD 0.05 from the record, 0.4 from its rollouts"
    assert seen["l1_range"] == "0.100–0.200"


def test_spread_and_transfer_prose():
    spread = [rp.Metrics(1.0, kl, mmd, 0, 4, (0.1, r, 5.0), (0.1, r, 4.0))
              for kl, mmd, r in ((math.nan, 0.12, 1.2), (3600, 0.07, 1.2), (2600, 0.05, 1.1),
                                 (2650, 0.06, 1.18))]
    seen = prose.spread_prose(spread)
    assert (seen["spread_kl_same"], seen["spread_kl_widest"]) == ("3600", "2650")
    assert seen["spread_factor"].value == rp.SPREAD_FACTORS[-1]
    runs = [_scored(name, "multiple", r) for name, r in (("the chapter's", 1.2), ("b", 1.1))]
    seen = prose.transfer_prose({"CSVGD": runs})
    assert seen == {"transfer_csvgd": "CSVGD 1.2 rad with the chapter's set-up, 1.1 at best (b)"}


@pytest.mark.parametrize(("end", "text"), [(30.0, "has not converged"), (5.5, "has settled")])
def test_convergence_prose_reads_the_trace(end, text):
    run = _scored("(C)SVGD", "multiple", 1.2)
    run.diagnostics["trace"] = {"iterations": np.array([0, 100, 200]),
                                "defect_rms": np.array([9.6, 5.3, end]),
                                "loglik": np.array([-180.0, -120.0, -130.0])}
    other = _scored("(C)SVGD", "multiple", 1.3)
    other.diagnostics["trace"] = {"iterations": np.array([0, 200]),
                                  "defect_rms": np.array([9.6, 31.0]),
                                  "loglik": np.array([-180.0, -132.0])}
    seen = prose.convergence_prose(run, other)
    assert seen["csvgd_converged_text"].startswith(text)
    assert (seen["other_defect_end"].value, seen["other_loglik_end"].value) == (31.0, -132.0)
    assert seen["csvgd_defect_min"].value == 5.3 and seen["csvgd_defect_min_at"] == "100 iterations"
    assert seen["csvgd_loglik_best"].value == -120.0
