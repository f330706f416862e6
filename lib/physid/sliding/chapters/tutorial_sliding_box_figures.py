"""Figures and the interactive explorer of the sliding-box tutorial (:mod:`physid.sliding.model`).

The figures use the book's style (:func:`physid.book.display.use_book_style`, which the chapter
sets): they choose no sizes, fonts or resolutions of their own.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from physid.book.display import explorer
from physid.core.validate import check_array, check_nonnegative, check_number, check_positive
from physid.sliding.model import (
    BulletGradientCheck,
    FitResult,
    Landscape,
    SlideData,
    predict,
)

MU_LABEL = "friction coefficient μ (–)"
#: The smallest μ of the explorer's slider.
SLIDER_MIN = 0.02


def _check_instance(name: str, value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def _rollout(mu: float, data: SlideData) -> np.ndarray:
    with torch.no_grad():
        return predict(torch.tensor(mu, dtype=torch.float64), data).numpy()


def plot_trajectories(
    data: SlideData, mus: dict[str, float], ax: Axes | None = None
) -> Figure:
    """The observed positions (dots) and the rollouts for each labelled μ (lines)."""
    _check_instance("data", data, SlideData)
    _check_instance("mus", mus, dict)
    values = {label: check_nonnegative(f"mus[{label!r}]", mu) for label, mu in mus.items()}
    if ax is None:
        fig, ax = plt.subplots()
    else:
        fig = _check_instance("ax", ax, Axes).figure
    ax.plot(data.t, data.x, "o", ms=3, color="0.35", label="pybullet (observed)")
    for label, mu in values.items():
        ax.plot(data.t, _rollout(mu, data), lw=2, label=f"model, {label}: μ = {mu:.3f}")
    ax.set_xlabel("time t (s)")
    ax.set_ylabel("position x (m)")
    ax.legend(loc="lower right", frameon=False)
    return fig


def plot_convergence(v0: float, dts: np.ndarray, errors: np.ndarray) -> Figure:
    """Stopping-distance error of the stepped model against Δt, with the line v₀Δt/2."""
    v0 = check_positive("v0", v0)
    dts = check_array("dts", dts, shape=(None,), positive=True)
    errors = check_array("errors", errors, shape=(len(dts),), nonnegative=True)
    fig, ax = plt.subplots()
    ax.loglog(dts, errors, "o-", lw=2, label="|simulated − closed form|")
    ax.loglog(dts, v0 * dts / 2, "k--", lw=1, label="$v_0\\,\\Delta t / 2$")
    ax.set_xlabel("time step Δt (s)")
    ax.set_ylabel("stopping-distance error (m)")
    ax.legend(frameon=False)
    return fig


def plot_fit(fit: FitResult, mu_true: float) -> Figure:
    """μ and the loss over the gradient-descent iterations."""
    _check_instance("fit", fit, FitResult)
    mu_true = check_positive("mu_true", mu_true)
    fig, (ax_mu, ax_loss) = plt.subplots(1, 2)
    iterations = np.arange(len(fit.mus))
    ax_mu.plot(iterations, fit.mus, lw=2, label="estimate μ̂")
    ax_mu.axhline(mu_true, color="k", ls="--", lw=1, label=f"pybullet μ⋆ = {mu_true:.3f}")
    ax_mu.set_xlabel("iteration")
    ax_mu.set_ylabel(MU_LABEL)
    ax_mu.legend(frameon=False)
    ax_loss.semilogy(iterations, fit.losses, lw=2)
    ax_loss.set_xlabel("iteration")
    ax_loss.set_ylabel("loss L (m²)")
    return fig


def plot_landscape(
    landscape: Landscape,
    mu_true: float,
    mu_fit: float,
    bullet: BulletGradientCheck | None = None,
) -> Figure:
    """The loss against μ; its autograd gradient against finite differences (and pybullet's)."""
    _check_instance("landscape", landscape, Landscape)
    mu_true = check_positive("mu_true", mu_true)
    mu_fit = check_positive("mu_fit", mu_fit)
    if bullet is not None:
        _check_instance("bullet", bullet, BulletGradientCheck)
    fig, (ax_loss, ax_grad) = plt.subplots(1, 2)
    ax_loss.semilogy(landscape.mu, landscape.loss, lw=2)
    ax_loss.set_ylabel("loss L (m²)")
    ax_grad.plot(landscape.mu, landscape.grad_autograd, lw=2, label="model, autograd")
    step = max(1, len(landscape.mu) // 25)
    ax_grad.plot(
        landscape.mu[::step],
        landscape.grad_fd[::step],
        ".",
        ms=5,
        color="C0",
        label="model, finite diff.",
    )
    if bullet is not None:
        ax_grad.plot(
            bullet.mu, bullet.grad_bullet, "o", ms=7, mfc="none", color="C1",
            label="pybullet, finite diff.",
        )
    ax_grad.axhline(0, color="0.5", lw=0.8)
    ax_grad.set_ylabel("gradient dL/dμ (m²)")
    for ax in (ax_loss, ax_grad):
        ax.axvline(mu_true, color="k", ls="--", lw=1, label="pybullet μ⋆")
        ax.axvline(mu_fit, color="C3", ls=":", lw=1.5, label="identified μ̂")
        ax.set_xlabel(MU_LABEL)
    ax_loss.legend(frameon=False, loc="lower right")
    ax_grad.legend(frameon=False, loc="lower right")
    return fig


def slide_explorer(data: SlideData, mu: float, mu_max: float = 1.0) -> Any:
    """A slider over μ that redraws the rollout over the observed data (an ipywidgets view)."""
    _check_instance("data", data, SlideData)
    mu_max = check_number("mu_max", mu_max, low=SLIDER_MIN, low_open=True)
    mu = check_number("mu", mu, low=SLIDER_MIN, high=mu_max)
    import ipywidgets as widgets

    def draw(mu: float) -> Figure:
        return plot_trajectories(data, {"slider": mu})

    slider = widgets.FloatSlider(
        value=mu, min=SLIDER_MIN, max=mu_max, step=0.01, description="μ", continuous_update=False
    )
    return explorer(draw, mu=slider)
