"""The real-data chapter's figures and explorer draw what they are given."""

from __future__ import annotations

import dataclasses

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from physid.inference.chapters import inference_real_figures as figures  # noqa: E402
from physid.inference.chapters import inference_real_pendulum as rp  # noqa: E402
from physid.inference.chapters.inference_real_box import WeightRun  # noqa: E402


@pytest.fixture(scope="module")
def problem():
    return rp.real_problem(rp.SIZES["quick"])


def _run(problem, estimator: str, shooting: str, seed: int) -> rp.RealRun:
    rng = np.random.default_rng(seed)
    theta = problem.limits.lower + problem.limits.width * rng.uniform(0.4, 0.6, (6, 11))
    metrics = rp.evaluate(problem, theta)
    return rp.RealRun(estimator, estimator, shooting, 0, 1.0, 5, theta, metrics, -1.0)


def test_data_and_predictive_figures(problem):
    fig = figures.plot_data(problem)
    # every test, the reference and the two legend handles
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == len(problem.tests) + 3
    names = ("SVGD", "CEM", "SGLD", "NUTS")
    runs = [_run(problem, name, "single", k) for k, name in enumerate(names)]
    fig = figures.plot_predictive(problem, runs, test=1, joint=1)
    assert sum(ax.get_visible() for ax in fig.axes) == 4
    titles = [ax.get_title() for ax in fig.axes[:2]]
    assert titles == ["SVGD, single shooting", "CEM, single shooting"]
    with pytest.raises(ValueError, match="test"):
        figures.plot_predictive(problem, runs, test=len(problem.tests))
    with pytest.raises(ValueError, match="joint"):
        figures.plot_predictive(problem, runs, joint=2)
    with pytest.raises(ValueError, match="runs"):
        figures.plot_predictive(problem, [])


def test_an_unstable_run_is_drawn_as_such(problem, monkeypatch):
    run = _run(problem, "Emcee", "multiple", 3)
    blown = np.full((6, len(problem.tests), problem.tests.shape[1], 4), np.nan)
    monkeypatch.setattr(figures, "predictive", lambda *_: blown)
    fig = figures.plot_predictive(problem, [run])
    assert any("unstable" in t.get_text() for t in fig.axes[0].texts)


def test_weights_figure_titles_give_the_mode_shares():
    theta = np.array([[0.12, 0.0, -0.12, 0.0]] * 3 + [[0.0, 0.0, 0.0, 0.0]])
    fig = figures.plot_weights([WeightRun("Emcee", 1.0, theta, 0.001)] * 2)
    assert fig.axes[0].get_title() == "Emcee: 75 % / 0 %"
    assert sum(ax.get_visible() for ax in fig.axes) == 2
    with pytest.raises(ValueError, match="runs"):
        figures.plot_weights([])


def test_explorer_draws_its_default(problem):
    runs = [_run(problem, "CSVGD", "multiple", 0), _run(problem, "SGLD", "single", 1)]
    view = figures.predictive_explorer(problem, runs)
    test, joint, run, output = view.children
    assert run.value == "CSVGD, multiple shooting" and test.value == 0 and joint.value == 0
    assert output.outputs and "image/png" in output.outputs[0]["data"]


def test_weight_traces_draw_every_run():
    trace = {"iterations": np.arange(0, 40, 10), "in_modes": np.linspace(0, 1, 4),
             "balance": np.full(4, 0.01), "reach": np.full(4, 0.1)}
    runs = [WeightRun(name, 1.0, np.zeros((3, 4)), 0.001, {}, trace) for name in ("SGLD", "CSVGD")]
    fig = figures.plot_weight_traces(runs)
    assert [len(ax.lines) for ax in fig.axes] == [2, 3, 4]  # the runs, then the reference lines
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["SGLD", "CSVGD"]


def test_convergence_figure_draws_every_run_and_the_defects_of_multiple_shooting(problem):
    trace = {"iterations": np.arange(3), "loglik": np.array([-3.0, -2.0, -1.0]),
             "defect_rms": np.array([3.0, 2.0, 1.0])}
    runs = [rp.RealRun("SGLD", "SGLD", sh, 0, 1.0, 2, np.zeros((2, 11)),
                       rp.Metrics(1.0, 1.0, 1.0, 0, 2), -1.0, {"trace": trace})
            for sh in ("single", "multiple")]
    fig = figures.plot_convergence(runs)
    assert [len(ax.lines) for ax in fig.axes] == [2, 1]
    # An ablation (another start or defect form than the chapter's) is dashed.
    runs[1].start, runs[1].form = rp.SHOOTING_START, rp.DEFECT_FORM
    ablation = dataclasses.replace(runs[1], start="rollout")
    assert [r.ablated for r in (*runs, ablation)] == [False, False, True]
    assert dataclasses.replace(runs[1], form="vector").ablated
    fig = figures.plot_convergence([*runs, ablation])
    assert [line.get_linestyle() for line in fig.axes[0].lines] == [":", "-", "--"]
