"""Figures and the ipywidgets particle view of the synthetic-inference chapter.

The figures take the book's style (:func:`physid.book.display.use_book_style`): sizes are chosen
for the page's width, and no font size or dpi is set here.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from physid.book.display import explorer, plural
from physid.inference.chapters.inference_synthetic import (
    PRIOR,
    EstimatorRun,
    Landscape,
    MultimodalResult,
    SyntheticProblem,
)

COLOURS = {
    "SVGD": "C4",
    "CSVGD": "C3",
    "SGLD": "C2",
    "CEM": "C1",
    "Emcee": "C0",
    "NUTS": "C5",
    "BayesSim": "C7",
}


def _truth_contours(ax: plt.Axes, mean: np.ndarray, cov: np.ndarray) -> None:
    """The truth Gaussian's 1, 2 and 3 σ contours (black) over the prior box."""
    grid = np.linspace(PRIOR[0], PRIOR[1], 200)
    a, b = np.meshgrid(grid, grid, indexing="ij")
    d = np.stack((a - mean[0], b - mean[1]), -1)
    m = np.einsum("...i,ij,...j->...", d, np.linalg.inv(cov), d)
    ax.contour(a, b, m, levels=[1, 4, 9], colors="k", linewidths=0.8, alpha=0.6)


def _lengths_axes(ax: plt.Axes, xlabel: bool = True, ylabel: bool = True) -> None:
    ax.set_xlim(*PRIOR)
    ax.set_ylim(*PRIOR)
    if xlabel:
        ax.set_xlabel("l1 (m)")
    if ylabel:
        ax.set_ylabel("l2 (m)")


def plot_landscape(landscape: Landscape) -> Figure:
    """The per-observation log-likelihood over (l1, l2), one panel per number of windows."""
    windows = sorted(landscape.loglik)
    fig, axes = plt.subplots(1, len(windows), figsize=(3.2 * len(windows), 3.2), squeeze=False)
    for i, (ax, w) in enumerate(zip(axes[0], windows, strict=True)):
        z = landscape.loglik[w]
        floor = np.percentile(z, 5)
        mesh = ax.pcolormesh(landscape.l1, landscape.l2, np.maximum(z, floor).T, shading="auto")
        bar = fig.colorbar(mesh, ax=ax, location="bottom", shrink=0.9)
        bar.set_label("log-likelihood per observation")
        ax.plot(*landscape.truth, "r*", ms=10)
        label = "single shooting" if w == 1 else plural(w, "shooting window")
        maxima = plural(landscape.local_maxima(w), "local maximum", "local maxima")
        ax.set_title(f"{label}:\n{maxima}")
        ax.set_aspect("equal")
        _lengths_axes(ax, ylabel=i == 0)
    return fig


def plot_convergence(runs: list[EstimatorRun]) -> Figure:
    """Parameter KL, trajectory MMD and log-likelihood against the iterations."""
    fig, grid = plt.subplots(2, 2, figsize=(7.5, 5.8))
    axes = grid.ravel()[:3]
    for run in runs:
        colour = COLOURS.get(run.name, None)
        label = run.name
        first = run.seed == min(r.seed for r in runs if r.name == run.name)
        for ax, values in zip(axes, (run.kl, run.mmd, run.loglik), strict=True):
            ax.plot(
                run.iterations,
                values,
                color=colour,
                lw=1.6,
                alpha=0.9,
                label=label if first else None,
            )
    axes[0].set_ylabel("parameter KL(truth ‖ particles) (nats)")
    axes[1].set_ylabel("MMD² of the rollouts")
    axes[1].set_yscale("log")
    axes[2].set_ylabel("log-likelihood per observation")
    loglik = np.concatenate([r.loglik for r in runs])
    if np.isfinite(loglik).any():
        axes[2].set_ylim(bottom=np.nanpercentile(loglik, 10))
    for ax in axes:
        ax.set_xlabel("iteration (BayesSim: epoch)")
    handles, labels = axes[0].get_legend_handles_labels()
    grid[1, 1].axis("off")
    grid[1, 1].legend(handles, labels, loc="center", frameon=False, title="estimator")
    return fig


def plot_posteriors(runs: list[EstimatorRun], problem: SyntheticProblem) -> Figure:
    """Final particles of every estimator over the truth density (contours at 1, 2, 3 σ)."""
    seed = min(r.seed for r in runs)
    chosen = [r for r in runs if r.seed == seed]
    cols = 4
    rows = int(np.ceil(len(chosen) / cols))
    fig, axes = plt.subplots(
        rows, cols, figsize=(7.5, 2.2 * rows + 0.4), squeeze=False, sharex=True, sharey=True
    )
    for ax, run in zip(axes.ravel(), chosen, strict=False):
        _truth_contours(ax, problem.mean, problem.cov)
        theta = run.final_theta
        ax.plot(*problem.theta_refs.T, "+", color="0.45", ms=6, mew=1.0, zorder=2)
        ax.scatter(theta[:, 0], theta[:, 1], s=8, color=COLOURS.get(run.name), alpha=0.75, zorder=3)
        ax.set_title(f"{run.name}: KL {run.kl[-1]:.2f}")
        ax.set_aspect("equal")
        _lengths_axes(ax, xlabel=False, ylabel=False)
    for ax in axes.ravel()[len(chosen) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("l2 (m)")
    for ax in axes[-1]:
        ax.set_xlabel("l1 (m)")
    if rows > 1:  # the panels above an empty one carry the l1 axis
        for ax in axes[-2, len(chosen) % cols or cols :]:
            ax.xaxis.set_tick_params(labelbottom=True)
            ax.set_xlabel("l1 (m)")
    return fig


def plot_multimodal(result: MultimodalResult) -> Figure:
    """CSVGD's final particles for each run of the multimodal experiment, one panel per run."""
    labels = list(result.runs)
    cols = 2
    rows = int(np.ceil(len(labels) / cols))
    fig, axes = plt.subplots(
        rows, cols, figsize=(7.0, 3.3 * rows), sharex=True, sharey=True, squeeze=False
    )
    for ax, label in zip(axes.ravel(), labels, strict=False):
        theta = result.runs[label].final_theta
        ax.scatter(theta[:, 0], theta[:, 1], s=9, alpha=0.7, color="C3", label="particles")
        ax.plot(*result.modes.T, "k*", ms=12, label="true settings")
        for i, mode in enumerate(result.modes):
            ax.add_patch(
                plt.Circle(
                    mode,
                    result.radius,
                    fill=False,
                    ls="--",
                    color="0.4",
                    label=f"within {result.radius:g} m" if i == 0 else None,
                )
            )
        share = result.share_near(label)
        ax.set_title(f"{label}: {100 * share[0]:.0f} % / {100 * share[1]:.0f} % near")
        ax.set_aspect("equal")
        _lengths_axes(ax, xlabel=False, ylabel=False)
    for ax in axes.ravel()[len(labels) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("l2 (m)")
    for ax in axes[-1]:
        ax.set_xlabel("l1 (m)")
    axes[0, 0].legend(frameon=False, loc="upper left")
    return fig


def plot_references(problem: SyntheticProblem, run: EstimatorRun, n: int = 20) -> Figure:
    """The reference joint angles against rollouts of ``n`` of ``run``'s final particles."""
    import torch

    target = problem.target()
    theta = torch.as_tensor(np.clip(run.final_theta[:n], *PRIOR))
    rollouts = target.rollouts(theta)[:, 0].numpy()
    t = problem.model.dt * np.arange(problem.references.shape[1])
    fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.0), sharex=True)
    for i, ax in enumerate(axes):
        ax.plot(t, rollouts[..., i].T, color="C3", lw=0.6, alpha=0.4)
        ax.plot(t, problem.references[..., i].numpy().T, color="k", lw=0.9, alpha=0.7)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(f"q{i} (rad)")
    axes[0].plot([], [], color="k", label="references")
    axes[0].plot([], [], color="C3", label=f"rollouts of {run.name} particles")
    fig.legend(frameon=False, loc="outside upper center", ncols=2)
    return fig


def particle_explorer(runs: dict[str, EstimatorRun], problem: SyntheticProblem):
    """A slider over the snapshots that draws each run's particles over the truth density."""
    import ipywidgets as widgets

    names = list(runs)
    steps = min(len(runs[n].theta) for n in names)

    def draw(snapshot: int) -> Figure:
        fig, axes = plt.subplots(1, len(names), figsize=(3.5 * len(names), 3.6), squeeze=False)
        for ax, name in zip(axes[0], names, strict=True):
            run = runs[name]
            _truth_contours(ax, problem.mean, problem.cov)
            theta = run.theta[snapshot]
            ax.scatter(theta[:, 0], theta[:, 1], s=9, color=COLOURS.get(name), alpha=0.75)
            kl = run.kl[snapshot]
            ax.set_title(f"{name}, iteration {run.iterations[snapshot]}:\nKL {kl:.2f}")
            ax.set_aspect("equal")
            _lengths_axes(ax)
        return fig

    slider = widgets.IntSlider(
        value=0, min=0, max=steps - 1, step=1, description="snapshot", continuous_update=False
    )
    return explorer(draw, snapshot=slider)


def plot_snapshots(
    runs: dict[str, EstimatorRun],
    problem: SyntheticProblem,
    fractions: tuple[float, ...] = (0.0, 0.1, 1.0),
) -> Figure:
    """Each run's particles at a few points of its run (rows: runs; columns: progress)."""
    names = list(runs)
    fig, axes = plt.subplots(
        len(names),
        len(fractions),
        figsize=(7.0, 2.6 * len(names) + 0.3),
        squeeze=False,
        sharex=True,
        sharey=True,
    )
    for row, name in zip(axes, names, strict=True):
        run = runs[name]
        for ax, fraction in zip(row, fractions, strict=True):
            index = int(round(fraction * (len(run.theta) - 1)))
            _truth_contours(ax, problem.mean, problem.cov)
            theta = run.theta[index]
            ax.scatter(theta[:, 0], theta[:, 1], s=8, color=COLOURS.get(name), alpha=0.75)
            ax.set_title(f"{name}, iteration {run.iterations[index]}")
            ax.set_aspect("equal")
            _lengths_axes(ax, xlabel=False, ylabel=False)
        row[0].set_ylabel("l2 (m)")
    for ax in axes[-1]:
        ax.set_xlabel("l1 (m)")
    return fig
