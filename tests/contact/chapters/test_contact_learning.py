"""The learning chapter's experiments: sizes, jobs, one tiny study end to end, the tables."""

import dataclasses
import math

import numpy as np
import pytest

from physid.contact import learned, models, training
from physid.contact.chapters import contact_learning as study

pytestmark = pytest.mark.usefixtures("float64_default")


def tiny(**changes) -> study.LearnSizes:
    base = dataclasses.replace(
        study.SIZES["quick"],
        n_train=4,
        n_val=2,
        n_test=2,
        epochs=1,
        batch_size=4,
        tasks=("BP5",),
        models=("CM-CD-CLNN", "IN-CP-SP"),
        efficiency_sizes=(3, 4),
        efficiency_models=("CM-CD-CLNN",),
        lcp_tasks=("CP3-e",),
        noise_tasks=("CP3-e",),
        noise_levels=(0.01,),
        ablations=(("BP5", "CM-CD-CLNN", {"n_train": 8}),),
    )
    return dataclasses.replace(base, **changes)


def test_every_scale_has_valid_sizes_and_paper_is_the_authors():
    for scale in ("quick", "default", "paper"):
        assert isinstance(study.SIZES[scale], study.LearnSizes)
    paper = study.SIZES["paper"]
    assert (paper.n_train, paper.n_val, paper.n_test) == (800, 100, 100)
    assert (paper.epochs, paper.batch_size) == (1000, 200)
    # The paper's 4,000 steps under the book's schedule: a restitution can move 3.7, not 0.67.
    assert (paper.lr, paper.lr_final, paper.checkpoint) == (1e-2, 1e-3, "last")
    assert paper.rope == "Rope" and set(paper.chnn_tasks) == set(paper.tasks)
    every = {j["model"] for j in study.grid_jobs(paper, 0)}
    assert every == set(models.MODELS)
    assert paper.device == "auto" and study.SIZES["default"].device == "cpu"
    # Beyond the quick scale the contact networks' potential runs in float32; the baselines and
    # the quick scale stay in float64.
    for scale in ("default", "paper"):
        dtypes = {(j["model"] in study.CM_MODELS, j["network_dtype"]) for j in study.grid_jobs(
            study.SIZES[scale], 0)}
        assert dtypes == {(True, "float32"), (False, "float64")}
    assert {j["network_dtype"] for j in study.grid_jobs(study.SIZES["quick"], 0)} == {
        "float64"}
    # The default trains every model by the plateau rule; the paper's scale every epoch.
    default = study.SIZES["default"]
    assert (default.epochs, default.lr, default.lr_final, default.checkpoint,
            default.patience) == (200, 1e-2, 1e-3, "best", 30)
    assert {j["patience"] for j in study.grid_jobs(default, 0)} == {30}
    # The baselines' schedule is their own length; the contact models take the grid's.
    epochs = {(j["model"] in study.CM_MODELS, j["epochs"]) for j in study.grid_jobs(default, 0)}
    assert epochs == {(True, 200), (False, study.BASELINE_EPOCHS)}
    assert paper.patience is None


@pytest.mark.parametrize(
    "changes, name",
    [
        ({"n_train": 0}, "n_train"),
        ({"lr": -1.0}, "lr"),
        ({"models": ("CM-CD-XYZ",)}, "models"),
        ({"tasks": ("BP7",)}, "tasks"),
        ({"efficiency_sizes": (1,)}, "efficiency_sizes"),
        ({"noise_levels": ()}, "noise_levels"),
        ({"rope": "Rope1"}, "n_nodes"),
        ({"device": "tpu"}, "device"),
        ({"network_dtype": "float16"}, "network_dtype"),
        ({"schedule_tasks": ("BP7",)}, "schedule_tasks"),
        ({"chnn_tasks": ("BP7",)}, "chnn_tasks"),
        ({"chnn_tasks": "BP5"}, "chnn_tasks"),
        ({"lr_final": 1.0}, "lr_final"),
        ({"checkpoint": "smoothed"}, "checkpoint"),
        ({"patience": 0}, "patience"),
        ({"baseline_epochs": 0}, "baseline_epochs"),
        ({"schedule_rule": {"patience": -2}}, "patience"),
        ({"schedule_rule": {}}, "schedule_rule"),
        ({"schedule_rule": {"steps": 3}}, "schedule_rule"),
        ({"schedule_rule": {"lr_final": -1.0}}, "lr_final"),
        ({"ablations": ("BP5", "CM-CD-CLNN", {"n_train": 8})}, "ablations"),
        ({"ablations": (("BP5", "CM-CD-CLNN", {}),)}, "ablations"),
        ({"ablations": (("BP5", "CM-CD-CLNN", {"noise": 0.1}),)}, "ablations"),
        ({"ablations": (("BP5", "CMr-CD-CLNN", {"n_train": 8}),)}, "ablations"),
        ({"ablations": (("BP5", "CM-CD-CLNN", {"n_train": 1}),)}, "n_train"),
        ({"ablations": (("BP5", "CM-CD-CLNN", {"patience": 0}),)}, "patience"),
    ],
)
def test_bad_sizes_are_refused_by_name(changes, name):
    with pytest.raises(ValueError, match=name):
        tiny(**changes)


def test_jobs_cover_the_grid_and_the_studies():
    s = study.SIZES["default"]
    grid = study.grid_jobs(s, 0)
    assert len(grid) == len(s.tasks) * len(s.models) + 2 * len(s.chnn_tasks)
    assert {j["task"] for j in grid if j["model"] in study.CHNN_MODELS} == set(s.chnn_tasks)
    assert {j["task"] for j in grid if j["task"].startswith("Rope")} == {s.rope}
    assert all(j["lr"] == s.lr for j in grid)
    assert all(j["epochs"] == s.epochs for j in grid if j["model"] in study.CM_MODELS)
    assert all((j["lr_final"], j["checkpoint"]) == (s.lr_final, s.checkpoint) for j in grid)
    assert {j["n_train"] for j in study.efficiency_jobs(s, 0)} == set(s.efficiency_sizes)
    assert {j["data_model"] for j in study.lcp_jobs(s, 0)} == {"LCP"}
    assert {j["noise"] for j in study.noise_jobs(s, 0)} == set(s.noise_levels)
    ablation = study.schedule_jobs(s, 0)
    assert [(j["task"], j["model"]) for j in ablation] == [
        (t, m) for t in s.schedule_tasks for m in study.SCHEDULE_MODELS]
    # At the default the ablation is the authors' rule at the grid's budget, every epoch.
    assert all(j["epochs"] == s.epochs and j["lr"] == 1e-3 and j["lr_final"] is None
               and j["checkpoint"] == "best" and j["patience"] is None for j in ablation)
    assert not any(j in grid for j in ablation)
    # Under the grid's own rule, the ablation repeats the grid's runs.
    same = dataclasses.replace(s, schedule_rule={"epochs": s.epochs})
    assert all(j in study.grid_jobs(same, 0) for j in study.schedule_jobs(same, 0))
    # The paper's scale sets the authors' rule beside its own.
    paper = study.SIZES["paper"]
    assert all((j["lr"], j["lr_final"], j["checkpoint"]) == (1e-3, None, "best")
               for j in study.schedule_jobs(paper, 0))
    # The single ablations: the CMr models on BP5 with the paper's 800 trajectories, for the
    # grid's 800 planned steps (25 epochs of 32 minibatches), and CMr-CD-CLNN on the rope
    # without the plateau stop; otherwise the grid's jobs.
    single = study.ablation_jobs(s, 0)
    assert [(j["task"], j["model"]) for j in single] == [
        ("BP5", "CMr-CD-CLNN"), ("BP5", "CMr-CD-CHNN"), (s.rope, "CMr-CD-CLNN")]
    assert all(j["n_train"] == 800 and j["epochs"] == 25 for j in single[:2])
    assert all(training.planned_steps(j) == 800 for j in single)
    for job, changed in zip(single, ({"n_train", "epochs"}, {"n_train", "epochs"},
                                     {"patience"}), strict=True):
        twin = next(j for j in grid if (j["task"], j["model"]) == (job["task"], job["model"]))
        assert {k for k in twin if twin[k] != job[k]} == changed
    assert single[2]["patience"] is None
    assert study.ablation_jobs(paper, 0) == []
    with pytest.raises(TypeError, match="s must be a LearnSizes"):
        study.grid_jobs({"n_train": 3}, 0)


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory):
    import os

    os.environ["PHYSID_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    try:
        return study.run_all(tiny(), seed=0)
    finally:
        del os.environ["PHYSID_CACHE"]


def test_run_all_trains_each_distinct_job_once_and_returns_every_part(tiny_results):
    r = tiny_results
    assert len(r.grid) == 2 and len(r.efficiency) == 2 and len(r.lcp) == 1
    assert len(r.noise) == 1 and len(r.schedule) == 1 and len(r.ablations) == 1
    # The ablation on 8 trajectories keeps the grid's one planned step: an epoch of two.
    assert r.ablations[0]["job"]["n_train"] == 8 and r.ablations[0]["steps"] == 2
    assert r.schedule[0]["steps"] == 3 * r.find("grid", model="CM-CD-CLNN")["steps"]
    assert r.schedule[0]["job"]["checkpoint"] == "last"
    # The efficiency run with the grid's size is the grid's own run (the same job).
    same = r.find("efficiency", n_train=4)
    assert same is r.find("grid", model="CM-CD-CLNN")
    assert r.find("lcp", task="CP3-e")["job"]["data_model"] == "LCP"
    for result in r.grid:
        assert math.isfinite(result["evaluation"]["traj_rel_error"])


def test_tables_from_results(tiny_results):
    grid = tiny_results.grid
    rows = study.error_rows(grid)
    assert rows[0]["task"] == "BP5" and set(rows[0]) == {"task", "CM-CD-CLNN", "IN-CP-SP"}
    (best,) = study.best_cm_and_baseline(grid)
    assert best["best CM model"] == "CM-CD-CLNN" and best["best baseline"] == "IN-CP-SP"
    assert best["ratio"] == pytest.approx(best["its error "] / best["its error"])
    assert study.coefficient_rows(grid) == []  # BP5 has coefficients per contact pair
    (coef,) = study.coefficient_rows(tiny_results.noise)  # CP3-e
    assert coef["true μ"] == 0.0 and coef["true e"] == 1.0 and coef["authors' e"] == 1.0
    start = training.initial_parameters(tiny_results.noise[0]["job"])["cor"]
    assert coef["start e"] == pytest.approx(float(np.mean(start))) and 0 <= coef["start e"] <= 1
    cm_schedule = [tiny_results.find("schedule", model="CM-CD-CLNN")]
    book, other = study.ablation_rows(grid, cm_schedule)
    other_job = cm_schedule[0]["job"]
    assert (book["rule"], other["rule"]) == ("grid", "ablation")
    assert book["schedule"] == "constant 0.001, best validation"
    assert other["schedule"] == "cosine 0.001 → 0.0001, last state"
    assert study.rule_label({**other_job, "patience": 30}).endswith("last state, plateau stop")
    assert other["e reach"] == pytest.approx(learned.restitution_reach(3, 1e-3, 1e-4))
    assert other["steps"] == 3 * book["steps"] and other["energy drift (%)"] is None
    assert other["trajectories"] == book["trajectories"] == 4
    assert other["largest mass-ratio error (%)"] == pytest.approx(
        100 * study.mass_ratio_rows(cm_schedule, "BP5")[0]["largest error"])
    with pytest.raises(ValueError, match="^grid must hold one run"):
        study.ablation_rows(grid[1:], tiny_results.schedule)
    (ratios,) = study.mass_ratio_rows(grid, "BP5")
    assert ratios["model"] == "CM-CD-CLNN" and ratios["ratios"][0] == 1.0
    assert ratios["authors' ratios"][1] == pytest.approx(2.0001)
    drift = study.energy_drift(grid[0])
    assert drift["truth"] >= 0 and drift["predicted"] >= 0
    assert [r["n_train"] for r in study.efficiency_rows(tiny_results.efficiency)] == [3, 4]
    with pytest.raises(ValueError, match="key"):
        study.error_rows(grid, key="nope")
    with pytest.raises(ValueError, match="task"):
        study.mass_ratio_rows(grid, "CP3")


def test_restored_model_reproduces_its_evaluation(tiny_results):
    result = tiny_results.find("grid", model="CM-CD-CLNN")
    model = training.restore(result)
    data = training.job_data(
        **{k: result["job"][k] for k in ("task", "n_train", "n_val", "n_test", "data_seed",
                                         "data_model", "noise")}
    )
    again = training.evaluate(model, data)
    np.testing.assert_allclose(again["traj_rel_errors"], result["evaluation"]["traj_rel_errors"])


def test_loglog_slope_and_iteration_timing():
    assert study.loglog_slope([1, 2, 4], [3, 6, 12]) == pytest.approx(1.0)
    assert study.loglog_slope([10, 100], [1, 100]) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="positive"):
        study.loglog_slope([1, 2], [0, 1])
    timings = study.iteration_seconds((8, 16), batch=2, repeats=5)
    assert list(timings) == [8, 16]
    assert all(len(t.samples) == 5 and t.median > 0 for t in timings.values())
    with pytest.raises(ValueError, match="nodes"):
        study.iteration_seconds((1, 8), batch=2, repeats=5)
    with pytest.raises(ValueError, match="nodes"):
        study.iteration_seconds(8, batch=2, repeats=5)
    with pytest.raises(ValueError, match="repeat"):
        study.iteration_seconds((8,), batch=2, repeats=2)
    with pytest.raises(ValueError, match="device"):
        study.iteration_seconds((8,), batch=2, repeats=5, device="gpu")


def test_no_contact_reference_is_the_truth_without_impulses(tiny_results):
    """The no-contact predictor is evaluated once per distinct data set, on the same test
    trajectories as the runs; the tables take it as a column, and its rows are read by task
    or by the number of training trajectories."""
    rows = study.no_contact_rows(tiny_results.grid)
    assert [(r["task"], r["n_train"]) for r in rows] == [("BP5", 4)]  # two runs, one data set
    assert rows[0]["traj_rel_error"] >= 0 and rows[0]["rel_error_50"] >= 0
    by_n = study.no_contact_reference(
        study.no_contact_rows(tiny_results.efficiency), "rel_error_50", by="n_train")
    assert sorted(by_n) == [3, 4] and by_n[4] == rows[0]["rel_error_50"]
    reference = study.no_contact_reference(rows, "traj_rel_error")
    (row,) = study.error_rows(tiny_results.grid, "traj_rel_error", reference)
    assert row[study.NO_CONTACT] == rows[0]["traj_rel_error"]
    with pytest.raises(ValueError, match="two data sets"):
        study.no_contact_reference(rows + rows, "traj_rel_error")
    with pytest.raises(ValueError, match="by"):
        study.no_contact_reference(rows, "traj_rel_error", by="model")


def test_trace_figure_draws_both_rules_with_the_speed_limit(tiny_results):
    import matplotlib.pyplot as plt

    from physid.contact.chapters import contact_learning_figures as figures

    fig = figures.trace_figure(tiny_results.grid, tiny_results.schedule)
    left, right = fig.axes
    assert "not trained at this scale" in [t.get_text() for t in left.texts]  # no BP5-e here
    labels = [line.get_label() for line in right.get_lines()]
    assert "grid: constant 0.001, best validation, 1 steps" in labels
    assert "ablation: cosine 0.001 → 0.0001, last state, 3 steps" in labels
    plt.close(fig)
    with pytest.raises(ValueError, match="tolerance"):
        figures.trace_figure(tiny_results.grid, tiny_results.schedule, tolerance=0)


def test_error_rows_give_every_task_every_model_trained_anywhere(tiny_results):
    grid = tiny_results.grid
    chnn = {**grid[0], "job": {**grid[0]["job"], "model": "CM-CD-CHNN"}}
    other = {**grid[0], "job": {**grid[0]["job"], "task": "CP3"}}
    rows = study.error_rows([*grid, chnn, other])
    assert [list(r) for r in rows] == [["task", "CM-CD-CLNN", "CM-CD-CHNN", "IN-CP-SP"]] * 2
    assert math.isnan(rows[1]["CM-CD-CHNN"]) and math.isnan(rows[1]["IN-CP-SP"])
