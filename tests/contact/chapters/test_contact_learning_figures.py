"""The learning chapter's figures and explorer draw synthetic fit results (no training)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from physid.contact.chapters import contact_learning_figures as lf  # noqa: E402
from physid.contact.models import MODELS  # noqa: E402
from physid.contact.tasks import TASK_NAMES, make_task  # noqa: E402

INF = math.inf
MODEL_NAMES = ("CM-CD-CLNN", "CMr-CD-CHNN", "IN-CP-SP")
TASKS = ("Gyro-e", "BP5-e", "CP3-e")  # deliberately not in TASK_NAMES order


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _result(task, model, error=0.1, ci=0.02, n_test=4, steps=10, diverged=0, energy=1.0,
            evaluated=True):
    """A fit result with the keys the figures read; the first ``diverged`` test rollouts
    are inf, and so are the errors when any rollout diverged."""
    job = {"task": task, "model": model, "n_train": 8, "noise": 0.0, "data_model": "CM"}
    if not evaluated:
        return {"job": job, "learned": {}, "evaluation": None}
    rng = np.random.default_rng(len(task) + len(model))
    e0 = energy + 0.1 * rng.random(n_test)
    energy_true = e0[:, None] * np.ones((n_test, steps + 1))
    drift = 1.0 + 0.01 * np.arange(steps + 1) * (MODEL_NAMES.index(model) + 1)
    energy_pred = energy_true * drift
    energy_pred[:diverged, 3:] = INF
    error = INF if diverged else error
    return {
        "job": job,
        "learned": {"mu": np.zeros(3), "cor": np.ones(3)},
        "evaluation": {
            "traj_rel_error": error,
            "traj_rel_error_ci": INF if diverged else ci,
            "traj_rel_errors": np.full(n_test, error),
            "rel_error_50": 2 * error,
            "rel_error_50_ci": INF if diverged else ci,
            "rel_error_t": np.zeros(steps + 1),
            "energy_pred": energy_pred,
            "energy_true": energy_true,
            "diverged": diverged,
            "steps": steps,
        },
    }


@pytest.fixture
def results():
    """3 tasks x 3 models: two with inf errors (every rollout diverged in BP5-e, one of four
    in Gyro-e), one not evaluated, the others finite."""
    out = []
    for i, task in enumerate(TASKS):
        for j, model in enumerate(MODEL_NAMES):
            if (task, model) == ("BP5-e", "IN-CP-SP"):
                out.append(_result(task, model, diverged=4))  # every rollout diverged
            elif (task, model) == ("CP3-e", "CMr-CD-CHNN"):
                out.append(_result(task, model, evaluated=False))
            elif (task, model) == ("Gyro-e", "IN-CP-SP"):
                out.append(_result(task, model, diverged=1))  # 1 of 4 diverged
            else:
                out.append(_result(task, model, error=0.01 * (1 + i + 3 * j)))
    return out


def _texts(fig: Figure) -> list[str]:
    """Every text in the axes, and the titles of the figure's legends."""
    titles = [legend.get_title().get_text() for legend in fig.legends]
    return [t.get_text() for ax in fig.axes for t in ax.texts] + titles


def _legend_labels(fig: Figure) -> list[str]:
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    return [t.get_text() for legend in legends for t in legend.get_texts()]


# -- colours ------------------------------------------------------------------------------------


def test_every_model_has_its_own_colour_in_two_families():
    assert list(lf.COLOURS) == list(MODELS)
    assert len(set(lf.COLOURS.values())) == len(MODELS)
    # contact networks: blue dominates red; baselines: red dominates blue
    for model, colour in lf.COLOURS.items():
        r, _, b = matplotlib.colors.to_rgb(colour)
        assert (b > r) == model.startswith("CM"), model


# -- Figs. 3 and 4 -----------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["traj_rel_error", "rel_error_50"])
def test_error_bars_group_tasks_and_mark_inf_and_missing(results, key):
    fig = lf.error_bars(results, key=key)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        t for t in TASK_NAMES if t in TASKS
    ]
    containers = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert [c.get_label() for c in containers] == list(MODEL_NAMES)
    # 9 results: 2 diverged, 1 not evaluated, 6 bars
    assert sum(len(c.patches) for c in containers) == 6
    assert ax.get_yscale() == "log"
    assert _texts(fig).count("∞") == 2 and _texts(fig).count("n/a") == 1
    labels = _legend_labels(fig)
    assert any("diverged (inf)" in label for label in labels)
    assert any("not evaluated" in label for label in labels)
    assert ax.get_ylabel() == lf.ERROR_KEYS[key]
    # the tallest bar is the CP3-e IN-CP-SP result (i = 2, j = 2), the error read from key
    heights = [p.get_height() for c in containers for p in c.patches]
    factor = 1 if key == "traj_rel_error" else 2
    assert max(heights) == pytest.approx(factor * 0.01 * 9)
    # the diverged markers sit above every bar and its interval, inside the axis
    tops = [line.get_ydata()[0] for line in ax.lines if line.get_marker() == "^"]
    assert len(tops) == 2 and tops[0] == tops[1]
    assert 1.2 * max(heights) < tops[0] < ax.get_ylim()[1]


def test_error_bars_reject_bad_input(results):
    with pytest.raises(ValueError, match="key"):
        lf.error_bars(results, key="loss")
    with pytest.raises(ValueError, match="results"):
        lf.error_bars([])
    with pytest.raises(ValueError, match="results"):
        lf.error_bars(results + [results[0]])
    bad = _result("BP5-e", "CM-CD-CLNN")
    bad["job"]["model"] = "GNN"
    with pytest.raises(ValueError, match="results"):
        lf.error_bars([bad])


# -- Fig. 5 ------------------------------------------------------------------------------------


def test_energy_figure_starts_at_one_and_names_what_is_missing(results):
    fig = lf.energy_figure(results)
    assert len(fig.axes) == 3
    assert [ax.get_title() for ax in fig.axes] == ["BP5-e", "CP3-e", "Gyro-e"]
    for ax, task in zip(fig.axes, ("BP5-e", "CP3-e", "Gyro-e"), strict=True):
        lines = ax.get_lines()
        assert lines[0].get_label() == "truth" and lines[0].get_color() == "k"
        for line in lines:
            assert line.get_ydata()[0] == pytest.approx(1.0)
        # time in seconds from the task's dt
        assert lines[0].get_xdata()[-1] == pytest.approx(10 * make_task(task).dt)
    assert fig.axes[0].get_ylabel() == "E(t) / E(0) (–)"
    bp, cp, gyro = fig.axes
    # BP5-e: IN-CP-SP diverged everywhere: no line, a note
    assert len(bp.get_lines()) == 3 and any("every rollout diverged" in t for t in _texts(fig))
    # CP3-e: CMr-CD-CHNN not evaluated
    assert len(cp.get_lines()) == 3 and any("CMr-CD-CHNN: not evaluated" in t for t in _texts(fig))
    # Gyro-e: IN-CP-SP with 1 of 4 left out, drifting upwards
    assert gyro.get_lines()[-1].get_label() == "IN-CP-SP"
    assert any("Gyro-e, IN-CP-SP: 1 of 4 diverged, not in mean" in t for t in _texts(fig))
    assert _legend_labels(fig) == ["truth", *MODEL_NAMES]
    drifted = gyro.get_lines()[-1].get_ydata()
    assert drifted[-1] == pytest.approx(1.0 + 0.01 * 10 * 3)


def test_energy_figure_keeps_its_range_when_a_mean_blows_up():
    calm = _result("CP3-e", "CM-CD-CLNN")
    blown = _result("CP3-e", "IN-CP-SP")
    blown["evaluation"]["energy_pred"][0, 6:] = 1e250  # finite, so it stays in the mean
    fig = lf.energy_figure([calm, blown], tasks=("CP3-e",))
    (ax,) = fig.axes
    low, high = ax.get_ylim()
    assert low == pytest.approx(-0.1) and high == pytest.approx(2.1)
    dt = make_task("CP3-e").dt
    note = f"CP3-e, IN-CP-SP: off the axis from t = {6 * dt:.2f} s (reaches "
    assert any(note in t for t in _texts(fig))
    assert not any("CM-CD-CLNN: off the axis" in t for t in _texts(fig))


def test_energy_figure_with_an_initial_energy_near_zero_shows_the_change():
    result = _result("CP3-e", "CM-CD-CLNN", energy=-0.5)
    fig = lf.energy_figure([result], tasks=("CP3-e",))
    (ax,) = fig.axes
    assert ax.get_ylabel() == "E(t) − E(0) (J)"
    assert all(line.get_ydata()[0] == pytest.approx(0.0) for line in ax.get_lines())


def test_energy_figure_rejects_bad_input(results):
    with pytest.raises(ValueError, match="tasks"):
        lf.energy_figure(results, tasks=("Pong",))
    with pytest.raises(ValueError, match="tasks"):
        lf.energy_figure(results, tasks=("Rope",))  # a known task without results
    with pytest.raises(ValueError, match="tasks"):
        lf.energy_figure(results, tasks="BP5-e")
    bad = _result("BP5-e", "CM-CD-CLNN")
    bad["evaluation"]["energy_pred"] = bad["evaluation"]["energy_pred"][:, :5]
    with pytest.raises(ValueError, match="energy_pred"):
        lf.energy_figure([bad])


# -- Fig. 6 ------------------------------------------------------------------------------------


def _efficiency_rows():
    rows = []
    for j, model in enumerate(MODEL_NAMES):
        for n in (8, 32, 128):
            error = 0.5 / n ** (0.5 + 0.1 * j)
            if (model, n) == ("IN-CP-SP", 8):
                error = INF
            rows.append({"model": model, "n_train": n, "error": error, "ci": 0.2 * error})
    return rows


def test_efficiency_figure_draws_a_line_per_model_and_marks_inf():
    fig = lf.efficiency_figure(_efficiency_rows())
    (ax,) = fig.axes
    lines = [line for line in ax.get_lines() if line.get_label() in MODEL_NAMES]
    assert [line.get_label() for line in lines] == list(MODEL_NAMES)
    assert [len(line.get_xdata()) for line in lines] == [3, 3, 2]
    assert len(ax.collections) == 3  # one band per model
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert _texts(fig).count("∞") == 1
    assert any("diverged" in label for label in _legend_labels(fig))
    assert lines[0].get_color() == lf.COLOURS["CM-CD-CLNN"]


def test_efficiency_figure_rejects_bad_rows():
    with pytest.raises(ValueError, match="rows"):
        lf.efficiency_figure([])
    with pytest.raises(ValueError, match="rows"):
        lf.efficiency_figure([{"model": "CM-CD-CLNN", "n_train": 8, "error": 0.1}])
    with pytest.raises(ValueError, match="model"):
        lf.efficiency_figure([{"model": "GNN", "n_train": 8, "error": 0.1, "ci": 0.0}])
    rows = _efficiency_rows()
    with pytest.raises(ValueError, match="rows"):
        lf.efficiency_figure(rows + rows[:1])


# -- Table 3 -----------------------------------------------------------------------------------


def test_scaling_figure_fits_a_line_of_the_given_slope():
    rows = [{"nodes": n, "seconds": 0.01 * (n / 50) ** 1.1, "spread": 0.001}
            for n in (50, 100, 200)]
    fig = lf.scaling_figure(rows, slope=1.1)
    (ax,) = fig.axes
    (fit,) = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    x, y = fit.get_xdata(), fit.get_ydata()
    assert np.polyfit(np.log(x), np.log(y), 1)[0] == pytest.approx(1.1)
    # the line passes through the points (they lie on it exactly)
    assert np.interp(np.log(100), np.log(x), np.log(y)) == pytest.approx(np.log(0.01 * 2**1.1))
    assert any("1.10" in t for t in _texts(fig))
    with pytest.raises(ValueError, match="rows"):
        lf.scaling_figure([], slope=1.0)
    with pytest.raises(ValueError, match="slope"):
        lf.scaling_figure(rows, slope=math.nan)
    with pytest.raises(ValueError, match="seconds"):
        lf.scaling_figure([{"nodes": 50, "seconds": 0.0, "spread": 0.0}], slope=1.0)


# -- rollouts and the explorer -----------------------------------------------------------------


def _rollout(task_name, steps=6, seed=0, diverge_at=None):
    task = make_task(task_name)
    x0, v0 = task.system.sample_state(1, np.random.default_rng(seed))
    t = task.dt * np.arange(steps + 1)[:, None]
    x_true = x0.numpy() + t * v0.numpy()
    x_pred = x_true + 0.01
    if diverge_at is not None:
        x_pred[diverge_at:] = np.nan
    return x_pred, x_true, task.dt, task_name


@pytest.mark.parametrize(("task", "points"), [
    ("BP5", 5), ("BD5", 5), ("CP3", 3), ("Gyro", 1), ("Rope10", 4)
])
def test_rollout_figure_draws_every_tracked_point_and_a_snapshot(task, points):
    x_pred, x_true, dt, name = _rollout(task)
    fig = lf.rollout_figure(name, x_pred, x_true, dt, title="a title")
    assert len(fig.axes) == 3
    for ax in fig.axes[:2]:
        assert len(ax.get_lines()) == 2 * points
        assert ax.get_lines()[1].get_linestyle() == "--"
        assert ax.get_lines()[0].get_xdata()[-1] == pytest.approx(6 * dt)
    assert "last step" in fig.axes[2].get_title()
    assert fig.get_suptitle() == "a title"


def test_rollout_figure_shows_where_a_prediction_diverges():
    x_pred, x_true, dt, name = _rollout("CP3", diverge_at=4)
    fig = lf.rollout_figure(name, x_pred, x_true, dt)
    assert "diverges after t = 0.03 s" in fig.axes[0].get_title()
    assert "last finite step" in fig.axes[2].get_title()
    x_pred[:] = np.inf
    fig = lf.rollout_figure(name, x_pred, x_true, dt)
    assert "never finite" in fig.axes[2].get_title()


def test_rollout_figure_rejects_bad_input():
    x_pred, x_true, dt, name = _rollout("CP3")
    with pytest.raises(ValueError, match="x_pred"):
        lf.rollout_figure(name, x_pred[:-1], x_true, dt)
    with pytest.raises(ValueError, match="x_true"):
        lf.rollout_figure(name, x_pred[:, :4], x_true[:, :4], dt)
    with pytest.raises(ValueError, match="dt"):
        lf.rollout_figure(name, x_pred, x_true, -dt)
    with pytest.raises(ValueError, match="task"):
        lf.rollout_figure("Pong", x_pred, x_true, dt)


def test_rollout_explorer_draws_and_redraws(results):
    by_key = {(r["job"]["task"], r["job"]["model"]): r for r in results}
    calls = []

    def rollouts(key, index):
        calls.append((key, index))
        return _rollout(key[0].removesuffix("-e"), seed=index)

    view = lf.rollout_explorer(by_key, rollouts, n_test=3)
    task, model, test, output = view.children
    assert (task.value, model.value, test.value) == ("BP5-e", "CM-CD-CLNN", 1)
    assert list(task.options) == ["BP5-e", "CP3-e", "Gyro-e"]
    assert calls == [(("BP5-e", "CM-CD-CLNN"), 0)]
    first = output.outputs[0]["data"]["image/png"]
    model.value = "IN-CP-SP"
    assert calls[-1] == (("BP5-e", "IN-CP-SP"), 0)
    assert output.outputs[0]["data"]["image/png"] != first
    test.value = 3
    assert calls[-1] == (("BP5-e", "IN-CP-SP"), 2)
    # a pair without a result draws a note, without calling rollouts
    del by_key[("Gyro-e", "CM-CD-CLNN")]
    view = lf.rollout_explorer(by_key, rollouts, n_test=3)
    task, model, _, output = view.children
    count = len(calls)
    task.value = "Gyro-e"
    assert len(calls) == count and output.outputs


def test_rollout_explorer_rejects_bad_input(results):
    by_key = {(r["job"]["task"], r["job"]["model"]): r for r in results}
    with pytest.raises(ValueError, match="results_by_key"):
        lf.rollout_explorer({}, lambda key, index: None, n_test=3)
    with pytest.raises(ValueError, match="results_by_key"):
        lf.rollout_explorer({("BP5-e", "GNN"): results[0]}, lambda key, index: None, n_test=3)
    with pytest.raises(ValueError, match="n_test"):
        lf.rollout_explorer(by_key, lambda key, index: None, n_test=0)


def test_a_model_that_only_diverged_keeps_its_legend_entry():
    fig = lf.error_bars([_result("BP5", "IN-CP-SP", diverged=4)])
    assert _legend_labels(fig)[0] == "IN-CP-SP" and _texts(fig).count("∞") == 1
    rows = [{"model": "IN-CP-SP", "n_train": 8, "error": INF, "ci": INF},
            {"model": "IN-CP-SP", "n_train": 16, "error": math.nan, "ci": math.nan}]
    fig = lf.efficiency_figure(rows)
    assert _legend_labels(fig)[0] == "IN-CP-SP"
    assert _texts(fig).count("∞") == 1 and _texts(fig).count("n/a") == 1


def test_the_no_contact_reference_is_a_dashed_line_or_a_zero(results):
    """Figs. 3, 4: a dashed segment across each task's group at the no-contact error, "0" at
    the bottom where it is exactly zero, both named in the legend; Fig. 6: a dashed line."""
    fig = lf.error_bars(results, "traj_rel_error", {"BP5-e": 0.05, "CP3-e": 0.0})
    (ax,) = fig.axes
    (segments,) = [c for c in ax.collections if c.get_linestyle()[0][1] is not None]
    assert len(segments.get_segments()) == 1 and segments.get_segments()[0][0][1] == 0.05
    assert "0" in _texts(fig)
    labels = _legend_labels(fig)
    assert lf.NO_CONTACT in labels and lf.NO_CONTACT + ": exactly 0" in labels
    plain = lf.error_bars(results, "traj_rel_error")
    assert lf.NO_CONTACT not in _legend_labels(plain)
    fig = lf.efficiency_figure(_efficiency_rows(), reference={8: 0.3, 32: 0.3, 128: 0.3})
    (line,) = [x for x in fig.axes[0].get_lines() if x.get_label() == lf.NO_CONTACT]
    assert list(line.get_ydata()) == [0.3, 0.3, 0.3] and line.get_linestyle() == "--"
    for bad, error in (({"BP5-e": -1.0}, ValueError), ({"BP5-e": math.nan}, ValueError),
                       ([0.1], TypeError)):
        with pytest.raises(error, match="reference"):
            lf.error_bars(results, "traj_rel_error", bad)
