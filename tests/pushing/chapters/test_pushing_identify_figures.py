"""The identification chapter's figures, table and explorer, on synthetic results (no
simulation)."""

from __future__ import annotations

from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from physid.pushing import load_object
from physid.pushing.chapters.pushing_identify import (
    CostPoint,
    Directions,
    MethodRun,
    PushCountRun,
    UncertaintyMap,
)
from physid.pushing.chapters.pushing_identify_figures import (
    draw_run,
    error_curve,
    method_rows,
    plot_directions,
    plot_gradient_cost,
    plot_maps,
    plot_protocol,
    plot_push_counts,
    plot_run,
    plot_train_test,
    plot_uncertainty,
    run_explorer,
    simulations_per_step,
)
from physid.pushing.identify import METHODS

CRIMP = load_object("crimp")
K = len(CRIMP)


def make_run(method="algorithm1", obj="crimp", experiment=0, sims=(0, 4, 8),
             seconds=(0.0, 1.0, 2.0), evaluated=(0, 2), errors=(0.05, 0.03), floor=0.01,
             used=(8, 2.5)):
    rng = np.random.default_rng(len(method) + experiment)
    k = len(load_object(obj))
    n = len(evaluated)
    maps = rng.uniform(0.5, 1.5, size=(n, k))
    maps /= maps.sum(1, keepdims=True)
    start = rng.normal(size=(k, 2)) * 0.05
    return MethodRun(
        obj, experiment, method, np.array(sims), np.array(seconds),
        np.linspace(0.02, 0.01, len(sims)), np.array(evaluated), np.array(errors), maps,
        start + 0.1 + rng.normal(size=(n, k, 2)) * 0.005, start + 0.1, start, maps[-1],
        np.full(k, 1 / k), floor, "the simulation budget is spent", used[0], used[1],
    )


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_error_curve_is_the_best_so_far_step_function():
    runs = [make_run(), make_run(experiment=1, sims=(0, 2, 6), evaluated=(0, 1, 2),
                                 errors=(0.05, 0.04, 0.02), used=(6, 2.0))]
    x, mean, low, high = error_curve(runs, "algorithm1", "simulations")
    np.testing.assert_array_equal(x, [0, 2, 6, 8])
    # Run 0: 0.05 until 8; run 1: 0.05, 0.04 from 2, 0.02 from 6 (and after its end).
    np.testing.assert_allclose(mean, [0.05, 0.045, 0.035, 0.025])
    np.testing.assert_allclose(low, [0.05, 0.04, 0.02, 0.02])
    np.testing.assert_allclose(high, [0.05, 0.05, 0.05, 0.03])
    x, mean, _, _ = error_curve(runs, "algorithm1", "seconds")
    assert x[-1] == 2.5 and mean[-1] == pytest.approx(0.025)


def test_train_and_test_curves_follow_the_same_improvements():
    run = replace(make_run(), train_error=np.array([0.04, 0.01]), train_floor=0.02)
    x, mean, _, _ = error_curve([run], "algorithm1", "simulations", "train")
    np.testing.assert_array_equal(x, [0, 8])
    np.testing.assert_allclose(mean, [0.04, 0.01])
    with pytest.raises(ValueError, match="pushes"):
        error_curve([run], "algorithm1", "simulations", "validation")
    with pytest.raises(ValueError, match="no training error"):
        error_curve([make_run()], "algorithm1", "simulations", "train")
    other = replace(make_run("random", errors=(0.05, 0.05)), train_error=np.array([0.04, 0.04]),
                    train_floor=0.02)
    fig = plot_train_test([run, other])
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    with pytest.raises(ValueError, match="^runs"):
        plot_train_test([run], objects=("hammer",))


def test_error_curve_rejects_a_missing_method_and_an_unknown_axis():
    with pytest.raises(ValueError, match="random"):
        error_curve([make_run()], "random")
    with pytest.raises(ValueError, match="axis"):
        error_curve([make_run()], "algorithm1", "steps")


def test_method_rows_list_every_method_with_its_cost():
    rows = method_rows(K, 4)
    assert [r["method"] for r in rows] == [spec.label for spec in METHODS.values()]
    assert simulations_per_step("fd-authors", K, 4).startswith(f"(2k + 1) n = {(2 * K + 1) * 4}")
    assert simulations_per_step("algorithm1", K, 4) == "n = 4"
    with pytest.raises(ValueError, match="name"):
        simulations_per_step("newton", K, 4)


def test_figures_of_synthetic_results():
    directions = [Directions("crimp", np.array([[0.9, 0.8], [0.1, 0.2]]),
                             np.array([[0.5, 0.6], [0.3, 0.4]]), np.array([True, False]),
                             np.array([False, True]), np.array([False, False]))]
    costs = [CostPoint(10, 0.01, 0.03, 0.3), CostPoint(24, 0.02, 0.1, float("nan"))]
    counts = [PushCountRun(1, np.array([0.05, 0.04, 0.04]), 0.2),
              PushCountRun(4, np.array([0.05, 0.03, 0.02]), 0.8)]
    runs = [make_run(), make_run("random", errors=(0.05, 0.05))]
    for fig in (plot_directions(directions), plot_gradient_cost(costs),
                plot_protocol(runs), plot_maps(runs), plot_push_counts(counts),
                plot_run(runs[0], -1)):
        assert isinstance(fig, Figure)
    with pytest.raises(ValueError, match="improvement"):
        plot_run(runs[0], 2)
    with pytest.raises(ValueError, match="experiment 3"):
        plot_maps(runs, experiment=3)


def test_draw_run_clips_the_improvement_and_says_when_there_is_no_run():
    runs = [make_run()]
    fig = draw_run(runs, "crimp", "algorithm1", 99)
    assert "improvement 2 of 2" in fig.axes[0].get_title()
    missing = draw_run(runs, "hammer", "algorithm1", 0)
    assert "No run" in missing.axes[0].texts[0].get_text()


def test_explorer_starts_at_the_last_improvement_and_redraws():
    runs = [make_run(), make_run("random", evaluated=(0,), errors=(0.05,))]
    view = run_explorer(runs, name="hammer", method="algorithm1")  # hammer: not in the runs
    name, method, improvement, output = view.children
    assert name.value == "crimp" and method.value == "algorithm1"
    assert improvement.value == improvement.max == 2
    method.value = "random"  # one improvement only: the slider's value is clipped
    assert output.outputs and "image/png" in output.outputs[0]["data"]


def test_plot_uncertainty_draws_the_mean_the_spread_and_the_travel():
    k = K
    rng = np.random.default_rng(0)
    maps = [UncertaintyMap("crimp", p, np.full(k, 1 / k), rng.uniform(0.1, 0.3, k),
                           np.full(k, 0.1), rng.uniform(0, 0.05, k), np.full(k, 1 / k), 2e-4,
                           1.0, rng.uniform(0.1, 0.3, k), 3) for p in (1, 4)]
    fig = plot_uncertainty(maps)
    assert isinstance(fig, Figure)
    assert [ax.get_title() for ax in fig.axes[:3]] == ["crimp: mean", "crimp: spread",
                                                         "crimp: travel"]
    with pytest.raises(ValueError, match="3 training pushes"):
        plot_uncertainty(maps, 3)


def test_every_registered_method_has_its_own_colour():
    from physid.pushing.chapters.pushing_identify_figures import _color

    assert len({_color(m) for m in METHODS}) == len(METHODS)
