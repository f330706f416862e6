"""Figures and the ipywidgets particle view of the synthetic-inference chapter."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from physid.inference.experiments import EstimatorRun, Landscape, MultimodalResult, SyntheticProblem

COLOURS = {
    "SVGD": "C4",
    "CSVGD": "C3",
    "SGLD": "C2",
    "CEM": "C1",
    "Emcee": "C0",
    "NUTS": "C5",
    "BayesSim": "C7",
}


def _truth_contours(ax: plt.Axes, mean: np.ndarray, cov: np.ndarray, limits=(0.5, 5.0)) -> None:
    grid = np.linspace(limits[0], limits[1], 200)
    a, b = np.meshgrid(grid, grid, indexing="ij")
    d = np.stack((a - mean[0], b - mean[1]), -1)
    m = np.einsum("...i,ij,...j->...", d, np.linalg.inv(cov), d)
    ax.contour(a, b, m, levels=[1, 4, 9], colors="k", linewidths=0.8, alpha=0.6)


def plot_landscape(landscape: Landscape) -> Figure:
    """The per-observation log-likelihood over (l1, l2), one panel per number of windows."""
    windows = sorted(landscape.loglik)
    fig, axes = plt.subplots(
        1, len(windows), figsize=(4.0 * len(windows), 3.6), layout="constrained", squeeze=False
    )
    for ax, w in zip(axes[0], windows, strict=True):
        z = landscape.loglik[w]
        floor = np.percentile(z, 5)
        mesh = ax.pcolormesh(
            landscape.l1, landscape.l2, np.maximum(z, floor).T, shading="auto", cmap="viridis"
        )
        fig.colorbar(mesh, ax=ax, shrink=0.85)
        ax.plot(*landscape.truth, "r*", ms=10)
        label = "single shooting" if w == 1 else f"{w} shooting windows"
        ax.set_title(f"{label}: {landscape.local_maxima(w)} local maxima", fontsize=10)
        ax.set_xlabel("l1 (m)")
        ax.set_ylabel("l2 (m)")
    return fig


def plot_convergence(runs: list[EstimatorRun]) -> Figure:
    """Parameter KL, trajectory MMD and log-likelihood against the iterations."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), layout="constrained")
    for run in runs:
        colour = COLOURS.get(run.name, None)
        label = run.name + (" (epochs)" if run.name == "BayesSim" else "")
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
    axes[0].set_ylabel("KL(truth ‖ particles)")
    axes[1].set_ylabel("MMD² (trajectories)")
    axes[1].set_yscale("log")
    axes[2].set_ylabel("log-likelihood per observation")
    low = np.nanpercentile(np.concatenate([r.loglik for r in runs]), 10)
    axes[2].set_ylim(bottom=low)
    for ax in axes:
        ax.set_xlabel("iteration")
        ax.grid(alpha=0.3)
    axes[0].legend(frameon=False, fontsize=8)
    return fig


def plot_posteriors(runs: list[EstimatorRun], problem: SyntheticProblem) -> Figure:
    """Final particles of every estimator over the truth density (contours at 1, 2, 3 σ)."""
    seed = min(r.seed for r in runs)
    chosen = [r for r in runs if r.seed == seed]
    cols = 4
    rows = int(np.ceil(len(chosen) / cols))
    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(3.2 * cols, 3.1 * rows),
        layout="constrained",
        squeeze=False,
        sharex=True,
        sharey=True,
    )
    for ax, run in zip(axes.ravel(), chosen, strict=False):
        _truth_contours(ax, problem.mean, problem.cov)
        theta = run.final_theta
        ax.plot(*problem.theta_refs.T, "+", color="0.45", ms=7, mew=1.0, zorder=2)
        ax.scatter(
            theta[:, 0], theta[:, 1], s=10, color=COLOURS.get(run.name), alpha=0.75, zorder=3
        )
        ax.set_title(f"{run.name}: KL {run.kl[-1]:.2f}", fontsize=10)
        ax.set_xlim(0.5, 5)
        ax.set_ylim(0.5, 5)
    for ax in axes.ravel()[len(chosen) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("l2 (m)")
    for ax in axes[-1]:
        ax.set_xlabel("l1 (m)")
    return fig


def plot_multimodal(result: MultimodalResult) -> Figure:
    """CSVGD particles for each run of the multimodal experiment (product, sum, ...)."""
    labels = list(result.runs)
    fig, axes = plt.subplots(
        1,
        len(labels),
        figsize=(4.1 * len(labels), 3.9),
        layout="constrained",
        sharey=True,
        squeeze=False,
    )
    axes = axes[0]
    for ax, combine in zip(axes, labels, strict=True):
        theta = result.runs[combine].final_theta
        ax.scatter(theta[:, 0], theta[:, 1], s=9, alpha=0.7, color="C3", label="particles")
        ax.plot(*result.modes.T, "k*", ms=12, label="true settings")
        for mode in result.modes:
            ax.add_patch(plt.Circle(mode, result.radius, fill=False, ls="--", color="0.4"))
        share = result.share_near(combine)
        scale = result.runs[combine].name.split("h × ")[-1].rstrip(")")
        ax.set_title(
            f"{combine.split(',')[0]} (h × {scale}): {100 * share[0]:.0f} % / "
            f"{100 * share[1]:.0f} % near",
            fontsize=10,
        )
        ax.set_xlim(0.5, 5)
        ax.set_ylim(0.5, 5)
        ax.set_aspect("equal")
        ax.set_xlabel("l1 (m)")
    axes[0].set_ylabel("l2 (m)")
    axes[0].legend(frameon=False, loc="upper left", fontsize=8)
    return fig


def plot_references(problem: SyntheticProblem, run: EstimatorRun, n: int = 20) -> Figure:
    """The reference joint angles against rollouts of ``n`` of ``run``'s final particles."""
    import torch

    target = problem.target()
    theta = torch.as_tensor(np.clip(run.final_theta[:n], 0.5, 5.0))
    rollouts = target.rollouts(theta)[:, 0].numpy()
    t = problem.model.dt * np.arange(problem.references.shape[1])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2), layout="constrained", sharex=True)
    for i, ax in enumerate(axes):
        ax.plot(t, rollouts[..., i].T, color="C3", lw=0.6, alpha=0.4)
        ax.plot(t, problem.references[..., i].numpy().T, color="k", lw=0.9, alpha=0.7)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(f"q{i} (rad)")
        ax.grid(alpha=0.3)
    axes[0].set_title(f"references (black) and {run.name} particles (red)", fontsize=10)
    return fig


def particle_explorer(runs: dict[str, EstimatorRun], problem: SyntheticProblem):
    """A slider over the snapshots that draws each run's particles over the truth density."""
    import ipywidgets as widgets

    names = list(runs)
    steps = min(len(runs[n].theta) for n in names)

    def draw(snapshot: int) -> None:
        fig, axes = plt.subplots(
            1, len(names), figsize=(4.0 * len(names), 3.7), layout="constrained", squeeze=False
        )
        for ax, name in zip(axes[0], names, strict=True):
            run = runs[name]
            _truth_contours(ax, problem.mean, problem.cov)
            theta = run.theta[snapshot]
            ax.scatter(theta[:, 0], theta[:, 1], s=9, color=COLOURS.get(name), alpha=0.75)
            ax.set_title(
                f"{name}, iteration {run.iterations[snapshot]}: KL {run.kl[snapshot]:.2f}",
                fontsize=10,
            )
            ax.set_xlim(0.5, 5)
            ax.set_ylim(0.5, 5)
            ax.set_xlabel("l1 (m)")
            ax.set_ylabel("l2 (m)")
        plt.show()

    slider = widgets.IntSlider(
        value=0, min=0, max=steps - 1, step=1, description="snapshot", continuous_update=False
    )
    return widgets.interactive(draw, snapshot=slider)


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
        figsize=(3.3 * len(fractions), 3.1 * len(names)),
        layout="constrained",
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
            ax.set_title(f"{name}, iteration {run.iterations[index]}", fontsize=10)
            ax.set_xlim(0.5, 5)
            ax.set_ylim(0.5, 5)
        row[0].set_ylabel("l2 (m)")
    for ax in axes[-1]:
        ax.set_xlabel("l1 (m)")
    return fig
