"""The real-pendulum experiment: problem, metrics with their N/A cases, runs and bad input."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from physid.inference import ibm
from physid.inference.chapters import inference_real_pendulum as rp

QUICK = rp.SIZES["quick"]


@pytest.fixture(scope="module")
def problem():
    return rp.real_problem(QUICK)


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("PHYSID_CACHE", "off")


def test_problem_shapes_and_source(problem):
    assert problem.reference.shape == (1, QUICK.n_steps + 1, 4)
    assert problem.tests.shape == (QUICK.n_tests, QUICK.n_steps + 1, 4)
    assert problem.real == (ibm.data_dir() is not None)
    assert problem.runs[0] not in problem.runs[1:]
    starts = np.concatenate((problem.reference[:, 0, :2], problem.tests[:, 0, :2]))
    assert np.all(np.abs(starts) <= math.pi)
    target = problem.target(QUICK.windows, "likelihood")
    assert target.dim == 11 + 4 * (QUICK.windows - 1)


def test_truth_like_particles_fit_better_than_the_prior_corner(problem):
    lower = np.tile(problem.limits.lower, (8, 1))
    centre = np.tile(0.5 * (problem.limits.lower + problem.limits.upper), (8, 1))
    spread = np.random.default_rng(0).uniform(-0.02, 0.02, centre.shape) * problem.limits.width
    a, b = rp.evaluate(problem, centre + spread), rp.evaluate(problem, lower + 1e-6)
    assert a.unstable == 0 and a.distinct == 8
    assert np.isfinite(a.as_row()).all()
    assert b.distinct == 1 and math.isnan(b.kl_sim_real)  # collapsed: N/A
    assert np.isfinite([b.kl_real_sim, b.mmd]).all()


def test_unstable_rollouts_are_dropped_and_counted(problem, monkeypatch):
    theta = np.tile(0.5 * (problem.limits.lower + problem.limits.upper), (6, 1))
    theta += np.linspace(0, 0.01, 6)[:, None] * problem.limits.width
    rollouts = rp.predictive(problem, theta)
    rollouts[:2, 3, 5, 0] = np.nan
    monkeypatch.setattr(rp, "predictive", lambda *_: rollouts)
    metrics = rp.evaluate(problem, theta)
    assert metrics.unstable == 2 and metrics.distinct == 4
    assert np.isfinite(metrics.as_row()).all()
    rollouts[:, 0, 1, 1] = np.inf
    assert math.isnan(rp.evaluate(problem, theta).mmd)


def test_runs_are_deterministic_and_cover_table_two():
    runs = rp.compare(QUICK, families=("SGLD", "(C)SVGD"))
    assert [(r.family, r.estimator, r.shooting) for r in runs] == [
        ("SGLD", "SGLD", "single"),
        ("SGLD", "SGLD", "multiple"),
        ("(C)SVGD", "SVGD", "single"),
        ("(C)SVGD", "CSVGD", "multiple"),
    ]
    again = rp.run_estimator("CSVGD", "multiple", QUICK, family="(C)SVGD")
    np.testing.assert_array_equal(again.theta, runs[3].theta)
    assert again.metrics == runs[3].metrics


def test_a_cached_run_knows_the_data_it_read(monkeypatch, tmp_path):
    """The stand-in's run, then the data's, with the cache on: the data's are computed, not
    the stand-in's returned (the cache key holds the recordings read, or that there were
    none); and editing a recording recomputes."""
    if ibm.data_dir() is None:
        pytest.skip("the IBM data are not here (make data)")
    folder = tmp_path / "runs"
    folder.mkdir()
    for path in ibm.data_files()[:13]:
        (folder / path.name).write_bytes(path.read_bytes())
    monkeypatch.setenv("PHYSID_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(ibm.ENVIRONMENT_VARIABLE, "off")
    stand_in = rp.run_estimator("SGLD", "single", QUICK, iterations=2)
    monkeypatch.setenv(ibm.ENVIRONMENT_VARIABLE, str(folder))
    data = rp.run_estimator("SGLD", "single", QUICK, iterations=2)
    assert data.loglik != stand_in.loglik
    assert not np.array_equal(data.theta, stand_in.theta)
    assert rp.run_estimator("SGLD", "single", QUICK, iterations=2).loglik == data.loglik
    reference = folder / "2.csv"
    lines = reference.read_text().splitlines()
    row = [int(v) for v in lines[ibm.START + 1].split(",")]
    row[4:] = [v + 40 for v in row[4:]]  # the tip moves: link 2's angle changes
    lines[ibm.START + 1] = ",".join(map(str, row))
    reference.write_text("\n".join(lines) + "\n")
    assert rp.run_estimator("SGLD", "single", QUICK, iterations=2).loglik != data.loglik


def test_emcee_on_multiple_shooting_starts_and_runs():
    run = rp.run_estimator("Emcee", "multiple", QUICK)
    dim = 11 + 4 * (QUICK.windows - 1)
    trace = run.diagnostics.pop("trace")
    assert run.diagnostics == {"walkers_requested": QUICK.n_particles, "walkers": 2 * dim}
    assert trace["iterations"][-1] == QUICK.iterations
    assert trace["loglik"][-1] == run.loglik and np.all(trace["defect_rms"] > 0)
    single = rp.run_estimator("SGLD", "single", QUICK).diagnostics["trace"]
    assert np.all(single["defect_rms"] == 0) and len(single["loglik"]) == len(single["iterations"])
    assert run.theta.shape == (2 * dim, 11)
    assert run.metrics.distinct == 2 * dim


def test_bayessim_variants_report_each_statistic():
    runs = rp.bayessim_variants(QUICK, statistics=("summary", "signature"))
    assert [r.family for r in runs] == ["BayesSim (summary)", "BayesSim (signature)"]
    assert all(r.iterations == QUICK.bayessim_epochs for r in runs)
    assert all(r.theta.shape == (QUICK.n_particles, 11) for r in runs)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: rp.SIZES["huge"], ValueError, "SCALE"),
        (lambda: replace(QUICK, n_steps=41), ValueError, "windows"),
        (lambda: replace(QUICK, n_tests=3), ValueError, "n_tests"),
        (lambda: replace(QUICK, n_jobs=0), ValueError, "n_jobs"),
        (lambda: rp.real_problem("quick"), TypeError, "s must be"),
        (lambda: rp.run_estimator("HMC", "single", QUICK), ValueError, "name"),
        (lambda: rp.run_estimator("SVGD", "triple", QUICK), ValueError, "shooting"),
        (lambda: rp.run_estimator("SVGD", "single", QUICK, iterations=0), ValueError,
         "iterations"),
        (lambda: rp.compare(QUICK, families=("MCMC",)), ValueError, "families"),
        (lambda: rp.compare(QUICK, families="SGLD"), ValueError, "families"),
        (lambda: rp.compare(QUICK, shootings=("both",)), ValueError, "shootings"),
        (lambda: rp.bayessim_variants(QUICK, statistics=("wavelet",)), ValueError,
         "statistics"),
        (lambda: rp.run_estimator("CSVGD", "multiple", QUICK, start="middle"), ValueError,
         "start"),
        (lambda: rp.run_estimator("CSVGD", "multiple", QUICK, form="cubed"), ValueError,
         "form"),
        (lambda: rp.start_ablation(QUICK, families=("HMC",)), ValueError, "families"),
        (lambda: rp.real_problem(QUICK).target(4, start="data"), ValueError, "start"),
        (lambda: rp.symmetries(rp.real_problem(QUICK), n_points=0), ValueError, "n_points"),
        (lambda: rp.symmetries(rp.real_problem(QUICK), tolerance=0), ValueError, "tolerance"),
        (lambda: rp.spread_test(rp.real_problem(QUICK), np.zeros((3, 11)), ()), ValueError,
         "factors"),
        (lambda: rp.spread_test(rp.real_problem(QUICK), np.zeros((3, 11)), (-1.0,)),
         ValueError, "factors"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_bad_particles(problem):
    with pytest.raises(ValueError, match="theta"):
        rp.evaluate(problem, np.zeros((4, 10)))
    theta = np.tile(problem.limits.lower, (4, 1))
    theta[0, 0] = np.nan
    with pytest.raises(ValueError, match="theta"):
        rp.evaluate(problem, theta)


def test_prediction_scores_one_particle_by_its_rms_error(problem):
    centre = (0.5 * (problem.limits.lower + problem.limits.upper))[None]
    metrics = rp.evaluate(problem, centre)
    rollout = rp.predictive(problem, centre)[0]
    for k, horizon in enumerate(rp.HORIZONS):
        frames = int(round(horizon / problem.model.dt))
        if frames > QUICK.n_steps:  # the quick trajectories are shorter: N/A there
            assert math.isnan(metrics.rmse[k]) and math.isnan(metrics.energy[k])
            continue
        error = (rollout[:, 1 : frames + 1, :2] - problem.tests[:, 1 : frames + 1, :2]) ** 2
        rmse = np.sqrt(error.mean((1, 2))).mean()
        assert metrics.rmse[k] == pytest.approx(rmse)
        assert metrics.energy[k] == pytest.approx(rmse)
    assert math.isnan(metrics.rmse[-1])  # 1 s is longer than the quick trajectories


def test_baselines_are_the_prior_mean_and_prior_draws(problem):
    mean, draws = rp.baselines(QUICK, seed=3)
    assert (mean.family, draws.family) == rp.BASELINES
    np.testing.assert_allclose(mean.theta[0], 0.5 * (problem.limits.lower + problem.limits.upper))
    assert draws.theta.shape == (QUICK.n_particles, 11)
    assert np.all((draws.theta >= problem.limits.lower) & (draws.theta <= problem.limits.upper))
    assert mean.metrics.distinct == 1 and math.isnan(mean.metrics.kl_sim_real)
    again = rp.baselines(QUICK, seed=3)[1]
    np.testing.assert_array_equal(again.theta, draws.theta)
    rows = rp.prediction_rows([mean, draws])
    assert [(r["particles"], r["shooting"]) for r in rows] == [
        ("prior mean", "—"), ("prior draws", "—")
    ]


def test_shooting_states_start_on_the_record_or_on_each_rollout(problem):
    recorded = problem.target(QUICK.windows, "likelihood")
    rollout = problem.target(QUICK.windows, "likelihood", start="rollout")
    z = np.full((3, 11), 0.5)


    on_data = recorded.on_reference(torch.as_tensor(z))[:, 11:]
    a = recorded.auxiliary(torch.as_tensor(z), seed=1)
    b = rollout.auxiliary(torch.as_tensor(z), seed=1)
    noise = a - on_data
    assert 0.05 < noise.std().item() < 0.2  # spread about the recorded states
    assert not torch.allclose(a[0], a[1])  # no two particles start on the same states
    assert not torch.allclose(a, b)
    run = rp.start_ablation(QUICK, families=("SGLD",))[0]
    assert (run.shooting, run.start) == ("multiple", "rollout")
    assert rp.prediction_rows([run])[0]["shooting"] == "multiple (rollout start)"


def test_spread_test_widens_about_the_mean(problem):
    rng = np.random.default_rng(0)
    centre = 0.5 * (problem.limits.lower + problem.limits.upper)
    theta = centre + 0.05 * problem.limits.width * rng.uniform(-1, 1, (8, 11))
    collapsed, same = rp.spread_test(problem, theta, (0.0, 1.0))
    assert collapsed.distinct == 1 and math.isnan(collapsed.kl_sim_real)
    direct = rp.evaluate(problem, theta)
    assert same.rmse == pytest.approx(direct.rmse, nan_ok=True)
    assert same.as_row() == pytest.approx(direct.as_row())


def test_symmetries_find_the_three_directions_the_motion_cannot_see(problem):
    found = rp.symmetries(problem, n_points=2, seed=4)
    assert found.rank == 8 and found.singular_values.shape == (2, 11)
    names = list(found.names)
    assert found.null_share[names.index("l1")] < 1e-8
    assert found.null_share[names.index("m1")] > 0.1  # the scale and the mass-offset trades


def test_transfer_setups_fit_other_references_windows_and_floors(problem):
    assert rp.TRANSFER_SETUPS[0] == rp.TransferSetup("the chapter's")
    windows = {setup.name: setup.windows(QUICK) for setup in rp.TRANSFER_SETUPS}
    assert windows["windows half as long"] == 2 * QUICK.windows
    assert windows["twice the reference"] == 2 * QUICK.windows
    assert rp.TRANSFER_SETUPS[4].steps(QUICK) == 2 * QUICK.n_steps
    scored, fit = rp.TRANSFER_SETUPS[4].problems(problem, QUICK, 0)
    assert fit.reference.shape == (1, 2 * QUICK.n_steps + 1, 4)
    np.testing.assert_allclose(fit.reference[0, : QUICK.n_steps + 1], problem.reference[0])
    np.testing.assert_array_equal(scored.tests, problem.tests)
    floor = rp.TRANSFER_SETUPS[-1]
    scored, fit = floor.problems(problem, QUICK, 0)
    names = list(fit.limits.names)
    assert fit.limits.lower[names.index("I1")] == floor.inertia_floor < 0.002
    runs = rp.transfer_study(QUICK, "SGLD", setups=rp.TRANSFER_SETUPS[:2])
    assert [r.family for r in runs] == ["the chapter's", "windows half as long"]
    same = rp.run_estimator("SGLD", "multiple", QUICK, family="the chapter's")
    np.testing.assert_array_equal(runs[0].theta, same.theta)
    assert not np.array_equal(runs[1].theta, same.theta)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: rp.TransferSetup(""), TypeError, "name"),
        (lambda: rp.TransferSetup("x", seconds=0), ValueError, "seconds"),
        (lambda: rp.TransferSetup("x", window_factor=-1), ValueError, "window_factor"),
        (lambda: rp.TransferSetup("x", inertia_floor=0), ValueError, "inertia_floor"),
        (lambda: rp.TransferSetup("x", window_factor=0.7).windows(QUICK), ValueError,
         "do not divide"),
        (lambda: rp.transfer_study(QUICK, setups=()), ValueError, "setups"),
        (lambda: rp.transfer_study(QUICK, setups=("the chapter's",)), TypeError, "setups"),
        (lambda: rp.run_estimator("SGLD", "multiple", QUICK, setup="x"), TypeError, "setup"),
    ],
)
def test_bad_transfer_setups(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_csvgd_runs_with_either_defect_form():
    squared = rp.run_estimator("CSVGD", "multiple", QUICK, family="(C)SVGD")
    vector = rp.run_estimator("CSVGD", "multiple", QUICK, family="(C)SVGD", form="vector")
    assert (squared.form, vector.form) == (rp.DEFECT_FORM, "vector")
    assert not np.array_equal(squared.theta, vector.theta)
    assert rp.prediction_rows([vector])[0]["shooting"] == "multiple (vector defects)"
    assert rp.run_estimator("SGLD", "multiple", QUICK).form == ""  # defects in the density
