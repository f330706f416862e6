"""Figures and the interactive explorer of the sliding-box tutorial (:mod:`physid.sliding`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from physid.sliding import FitResult, Landscape, SlideData, predict


def _rollout(mu: float, data: SlideData) -> np.ndarray:
    with torch.no_grad():
        return predict(torch.tensor(mu, dtype=torch.float64), data).numpy()


def plot_trajectories(data: SlideData, mus: dict[str, float], ax: plt.Axes | None = None) -> Figure:
    """The observed positions (dots) and the rollouts for each labelled μ (lines)."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 3.6), layout="constrained")
    else:
        fig = ax.figure
    ax.plot(data.t, data.x, "o", ms=3, color="0.35", label="pybullet (observed)")
    for label, mu in mus.items():
        ax.plot(data.t, _rollout(mu, data), lw=2, label=f"{label}: μ = {mu:.3f}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("position x (m)")
    ax.legend(loc="lower right", frameon=False)
    ax.grid(alpha=0.3)
    return fig


def plot_fit(fit: FitResult, mu_true: float) -> Figure:
    """μ and the loss over the gradient-descent iterations."""
    fig, (ax_mu, ax_loss) = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
    iterations = np.arange(len(fit.mus))
    ax_mu.plot(iterations, fit.mus, lw=2, label="estimate")
    ax_mu.axhline(mu_true, color="k", ls="--", lw=1, label=f"pybullet μ = {mu_true:.3f}")
    ax_mu.set_xlabel("iteration")
    ax_mu.set_ylabel("μ")
    ax_mu.legend(frameon=False)
    ax_loss.semilogy(iterations, fit.losses, lw=2)
    ax_loss.set_xlabel("iteration")
    ax_loss.set_ylabel("mean squared error (m²)")
    for ax in (ax_mu, ax_loss):
        ax.grid(alpha=0.3)
    return fig


def plot_landscape(landscape: Landscape, mu_true: float, mu_fit: float) -> Figure:
    """The loss against μ, and its autograd gradient against central finite differences."""
    fig, (ax_loss, ax_grad) = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
    ax_loss.semilogy(landscape.mu, landscape.loss, lw=2)
    ax_loss.set_ylabel("mean squared error (m²)")
    ax_grad.plot(landscape.mu, landscape.grad_autograd, lw=2, label="autograd")
    step = max(1, len(landscape.mu) // 25)
    ax_grad.plot(
        landscape.mu[::step], landscape.grad_fd[::step], "o", ms=4, mfc="none", label="finite diff."
    )
    ax_grad.axhline(0, color="0.5", lw=0.8)
    ax_grad.set_ylabel("d loss / d μ (m²)")
    ax_grad.legend(frameon=False)
    for ax in (ax_loss, ax_grad):
        ax.axvline(mu_true, color="k", ls="--", lw=1)
        ax.axvline(mu_fit, color="C3", ls=":", lw=1.5)
        ax.set_xlabel("μ")
        ax.grid(alpha=0.3)
    return fig


def slide_explorer(data: SlideData, mu: float, mu_max: float = 1.0):
    """A slider over μ that redraws the rollout over the observed data (an ipywidgets view)."""
    import ipywidgets as widgets

    def draw(mu: float) -> None:
        plot_trajectories(data, {"simulated": mu})
        plt.show()

    slider = widgets.FloatSlider(
        value=mu, min=0.02, max=mu_max, step=0.01, description="μ", continuous_update=False
    )
    return widgets.interactive(draw, mu=slider)
