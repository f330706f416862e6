"""Figures and the ipywidgets view of the real-pendulum and shaken-box chapter.

The figures take the book's style (:func:`physid.book.display.use_book_style`); no font size or dpi
is set here.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from physid.book.display import explorer
from physid.core.validate import check_count
from physid.inference.box import PHASE2_LIMITS, TRUE_WEIGHTS
from physid.inference.chapters.inference_real_box import (
    MODE_RADIUS,
    MODE_REACH,
    WeightRun,
    mode_shares,
)
from physid.inference.chapters.inference_real_pendulum import (
    RealProblem,
    RealRun,
    prediction_rows,
    predictive,
)
from physid.inference.chapters.inference_synthetic_figures import COLOURS

__all__ = [
    "ANGLE_LABELS",
    "plot_convergence",
    "plot_data",
    "plot_predictive",
    "plot_weight_traces",
    "plot_weights",
    "predictive_explorer",
]

#: The joint angles' axis labels.
ANGLE_LABELS = ("q0 (rad)", "q1 (rad)")


def _times(n: int, dt: float) -> np.ndarray:
    return np.arange(n) * dt


def plot_data(problem: RealProblem) -> Figure:
    """The reference trajectory (black) and the held-out test trajectories (grey): both joint
    angles over time, each start wrapped into (−π, π]."""
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 2.8), sharex=True)
    t = _times(problem.reference.shape[1], problem.model.dt)
    for joint, ax in enumerate(axes):
        for test in problem.tests:
            ax.plot(t, test[:, joint], color="0.6", lw=0.8)
        ax.plot(t, problem.reference[0, :, joint], color="k", lw=1.5)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(ANGLE_LABELS[joint])
    axes[0].plot([], [], color="k", label="reference")
    axes[0].plot([], [], color="0.6", label="held-out tests")
    fig.legend(frameon=False, loc="outside upper center", ncols=2)
    return fig


def _band(ax: plt.Axes, t: np.ndarray, values: np.ndarray, colour: str) -> None:
    """The 5–95 % band and the median of rollouts (N, T) that stayed finite."""
    finite = values[np.isfinite(values).all(1)]
    if len(finite) == 0:
        ax.text(0.5, 0.5, "every rollout unstable", transform=ax.transAxes, ha="center")
        return
    low, mid, high = np.percentile(finite, (5, 50, 95), axis=0)
    ax.fill_between(t, low, high, color=colour, alpha=0.3, lw=0)
    ax.plot(t, mid, color=colour, lw=1.0)


def _panels(count: int, row_height: float, margin: float) -> tuple[Figure, np.ndarray]:
    """A grid of up to three shared-axis panels per row for ``count`` runs (the unused ones
    hidden), ``row_height`` inches per row plus ``margin``."""
    if count < 1:
        raise ValueError("runs must hold at least one run")
    cols = min(3, count)
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(7.0, row_height * rows + margin), sharex=True, sharey=True,
        squeeze=False,
    )
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    return fig, axes


def _colour(run: RealRun) -> str:
    return COLOURS.get(run.estimator, "C7")


def plot_predictive(
    problem: RealProblem, runs: list[RealRun], test: int = 0, joint: int = 0
) -> Figure:
    """Posterior-predictive rollouts of each run from held-out trajectory ``test``'s start,
    joint ``joint``: the 5–95 % band and median of the particles' rollouts against the
    recorded trajectory (black), one panel per run (the paper's Figs. 8–9)."""
    test = check_count("test", test, 0, len(problem.tests) - 1)
    joint = check_count("joint", joint, 0, 1)
    fig, axes = _panels(len(runs), 1.9, 0.4)
    t = _times(problem.tests.shape[1], problem.model.dt)
    recorded = problem.tests[test, :, joint]
    for ax, run in zip(axes.flat, runs, strict=False):
        rollouts = predictive(problem, run.theta)[:, test, :, joint]
        _band(ax, t, rollouts, _colour(run))
        ax.plot(t, recorded, color="k", lw=1.0)
        label = run.family if run.family.startswith("BayesSim") else run.estimator
        ax.set_title(f"{label}, {run.shooting} shooting" if label != "BayesSim" else label)
    low, high = np.nanmin(recorded), np.nanmax(recorded)
    pad = 0.5 * (high - low) + 0.5
    for ax in axes.flat:
        ax.set_ylim(low - pad, high + pad)
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    for ax in axes[:, 0]:
        ax.set_ylabel(ANGLE_LABELS[joint])
    return fig


def predictive_explorer(problem: RealProblem, runs: list[RealRun]):
    """Dropdowns over the held-out trajectory, the joint and the run, drawing that run's
    posterior-predictive rollouts against the recorded trajectory."""
    import ipywidgets as widgets

    labels = {f"{r.family}, {r.shooting} shooting": r for r in runs}
    test = widgets.Dropdown(
        options=[(f"test {i + 1} (run {problem.runs[i + 1]})"
                  if len(problem.runs) > i + 1 else f"test {i + 1}", i)
                 for i in range(len(problem.tests))],
        value=0,
        description="held out",
    )
    joint = widgets.Dropdown(options=[("q0", 0), ("q1", 1)], value=0, description="joint")
    run = widgets.Dropdown(options=list(labels), value=next(iter(labels)), description="run")

    def draw(test: int, joint: int, run: str) -> Figure:
        return plot_predictive(problem, [labels[run]], test, joint)

    return explorer(draw, test=test, joint=joint, run=run)


def plot_weights(runs: list[WeightRun]) -> Figure:
    """Where each estimator's particles put the two weights on the box's floor (the paper's
    Fig. 16): weight 1 (filled) and weight 2 (open) of every particle, the true positions as
    black stars, with the shares of particles in the two symmetric modes (weight 1 at +x, at
    −x; :func:`~physid.inference.chapters.inference_real_box.mode_shares`)."""
    fig, axes = _panels(len(runs), 1.25, 0.6)
    (x_low, x_high), (y_low, y_high) = PHASE2_LIMITS["w1x"], PHASE2_LIMITS["w1y"]
    truth = [(TRUE_WEIGHTS["w1x"], TRUE_WEIGHTS["w1y"]), (TRUE_WEIGHTS["w2x"], TRUE_WEIGHTS["w2y"])]
    for ax, run in zip(axes.flat, runs, strict=False):
        colour = COLOURS.get(run.estimator, "C7")
        ax.add_patch(plt.Rectangle((x_low, y_low), x_high - x_low, y_high - y_low,
                                   fill=False, color="0.5", lw=0.8))
        ax.scatter(run.theta[:, 0], run.theta[:, 1], s=10, color=colour, alpha=0.7)
        ax.scatter(run.theta[:, 2], run.theta[:, 3], s=10, facecolors="none",
                   edgecolors=colour, alpha=0.7)
        ax.scatter(*zip(*truth, strict=True), marker="*", s=80, color="k", zorder=3)
        right, left = mode_shares(run.theta)
        ax.set_title(f"{run.estimator}: {100 * right:.0f} % / {100 * left:.0f} %")
        ax.set_aspect("equal")
    for ax in axes[-1]:
        ax.set_xlabel("x (m)")
    for ax in axes[:, 0]:
        ax.set_ylabel("y (m)")
    return fig


def plot_weight_traces(runs: list[WeightRun]) -> Figure:
    """How each estimator's phase-II particles move during its run (``WeightRun.trace``): the
    share in either mode, the median ``‖w1 + w2‖`` (against the modes' radius) and the median
    ``|w1x|`` (against their reach and the truth). A curve still moving at its end has not
    converged."""
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.2), constrained_layout=True)
    for run in runs:
        trace, colour = run.trace, COLOURS.get(run.estimator, "C7")
        for ax, key, scale in zip(axes, ("in_modes", "balance", "reach"), (100, 100, 100),
                                  strict=True):
            ax.plot(trace["iterations"], scale * np.asarray(trace[key]), color=colour,
                    label=run.estimator, marker=".", ms=3)
    axes[1].axhline(100 * MODE_RADIUS, color="0.5", ls="--", lw=0.8)
    axes[2].axhline(100 * MODE_REACH, color="0.5", ls="--", lw=0.8)
    axes[2].axhline(100 * abs(TRUE_WEIGHTS["w1x"]), color="k", ls=":", lw=0.8)
    labels = ("in either mode (%)", "median ‖w1 + w2‖ (cm)", "median |w1x| (cm)")
    for ax, label in zip(axes, labels, strict=True):
        ax.set_xlabel("iteration")
        ax.set_ylabel(label)
    axes[0].legend(fontsize="small")
    return fig


def plot_convergence(runs: list[RealRun]) -> Figure:
    """Each run's trace (``diagnostics["trace"]``): the reference's per-observation
    log-likelihood by single shooting, and, for multiple shooting, the median RMS defect in
    units of σ_def (log scale). A run whose curves still move, or whose defects grow, has not
    converged."""
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.4), constrained_layout=True)
    for run in runs:
        trace = run.diagnostics["trace"]
        colour = COLOURS.get(run.estimator, "C7")
        row = prediction_rows([run])[0]
        style = "--" if run.ablated else "-" if run.shooting == "multiple" else ":"
        axes[0].plot(trace["iterations"], trace["loglik"], color=colour, marker=".", ms=3,
                     label=f"{row['particles']} ({row['shooting']})", ls=style)
        if run.shooting == "multiple":
            axes[1].plot(trace["iterations"], trace["defect_rms"], color=colour, marker=".",
                         ms=3, ls=style)
    axes[0].set_ylabel("log-likelihood / observation")
    axes[1].set_ylabel("median RMS defect (σ_def)")
    axes[1].set_yscale("log")
    for ax in axes:
        ax.set_xlabel("iteration")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=5,
               fontsize="small", frameon=False)
    return fig
