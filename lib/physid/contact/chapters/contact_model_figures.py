"""Figures and the interactive explorer of the chapter "A differentiable contact model".

The figures use the book's style (:func:`physid.book.display.use_book_style`, set by the chapter):
they choose sizes that leave their panels readable at the page's width and never shrink fonts.
Every axis carries its quantity and unit, and every colour is named in a legend.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from physid.book.display import explorer
from physid.contact.chapters.contact_model import ImpactStudy
from physid.contact.chapters.contact_model_gallery import Trajectory, pendulum_rollout
from physid.contact.chapters.contact_model_timing import BatchTiming
from physid.contact.drawing import drawing_of
from physid.contact.tasks import make_task

#: Colour of the marks at steps with a contact impulse.
IMPULSE_COLOUR = "C3"


def _mark_impulses(ax, traj: Trajectory, label: bool = True) -> None:
    """Thin vertical lines at the states reached through a contact impulse."""
    for i, step in enumerate(traj.contact_steps):
        ax.axvline(
            traj.times[step],
            color=IMPULSE_COLOUR,
            lw=0.8,
            alpha=0.5,
            label="contact impulse" if label and i == 0 else None,
        )


def plot_jump(traj: Trajectory) -> Figure:
    """Height above the ground and vertical velocity of the last pendulum bob through impacts."""
    system = make_task(traj.task).system
    n = system.n_points
    y = traj.x[:, 2 * (n - 1) + 1]
    vy = traj.v[:, 2 * (n - 1) + 1]
    gap = y + system.ground - system.radii_np[-1]
    fig, (ax_y, ax_v) = plt.subplots(1, 2, figsize=(7.5, 3.2))
    ax_y.plot(traj.times, gap, lw=2, color="C0")
    ax_y.axhline(0, color="k", lw=0.8)
    ax_y.set_ylabel("distance to the ground (m)")
    ax_v.plot(traj.times, vy, lw=2, marker=".", ms=3, color="C0")
    ax_v.set_ylabel("vertical velocity (m/s)")
    for ax in (ax_y, ax_v):
        _mark_impulses(ax, traj)
        ax.set_xlabel("time (s)")
    ax_v.legend(loc="lower right")
    return fig


def plot_restitution(studies: list[ImpactStudy]) -> Figure:
    """Energy change of every impact under Poisson's and Newton's hypotheses, sorted."""
    fig, axes = plt.subplots(1, len(studies), figsize=(3.7 * len(studies), 3.4), squeeze=False)
    for ax, study in zip(axes[0], studies, strict=True):
        for which, color in (("newton", "C3"), ("poisson", "C0")):
            rel = (getattr(study, which) / study.reachable.clamp_min(1e-12)).cpu().numpy()
            label = "Newton (LCP)" if which == "newton" else "Poisson (contact model)"
            ax.plot(np.sort(rel)[::-1], color=color, lw=2, label=label)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_title(f"{study.task}, μ = {study.mu:g}, e = {study.cor:g}")
        ax.set_xlabel("impact, sorted by energy change")
        ax.set_ylabel("ΔKE / reachable KE (–)")
        ax.legend()
    return fig


def plot_penetration(study: dict[str, np.ndarray]) -> Figure:
    """Deepest penetration per step with and without penetration compensation."""
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    t = study["times"]
    ax.plot(t, 1e3 * study["without"], lw=2, color="C3", label="without compensation")
    ax.plot(t, 1e3 * study["with"], lw=2, color="C0", label="with v*_n = -d / (8 Δt)")
    ax.axhline(1e3 * float(study["equilibrium"]), color="k", ls="--", lw=1, label="4 g Δt²")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("penetration (mm)")
    ax.legend()
    return fig


def plot_timing(timings: list[BatchTiming]) -> Figure:
    """Contact resolutions per second (medians, bars from the fastest to the slowest repeat)."""
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    batches = np.array([t.batch for t in timings])
    for label in timings[0].seconds:
        median = np.array([t.rate(label) for t in timings])
        fast = np.array([t.batch / t.seconds[label].low for t in timings])
        slow = np.array([t.batch / t.seconds[label].high for t in timings])
        ax.errorbar(
            batches, median, yerr=[median - slow, fast - median], fmt="o-", lw=2, capsize=3,
            label=label,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("batch size (problems per call)")
    ax.set_ylabel("resolutions per second (1/s)")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return fig


def _draw(ax, traj: Trajectory, legend: bool = True) -> None:
    """The paths of one trajectory, in metres, with the final pose."""
    system = make_task(traj.task).system
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    drawing_of(system).paths(ax, system, traj.x, traj.times, legend)
    ax.set_aspect("equal", adjustable="box")


def plot_gallery(gallery: dict[str, Trajectory], pairs) -> Figure:
    """One test trajectory of each system, seen in its plane (the gyroscope from above)."""
    fig, axes = plt.subplots(2, 3, figsize=(7.5, 5.6))
    flat = axes.flatten()
    for ax, (main, _) in zip(flat, pairs, strict=False):
        _draw(ax, gallery[main], legend=False)
        ax.set_title(main + drawing_of(make_task(main).system).view)
    for ax in flat[len(pairs) :]:
        ax.set_axis_off()
    return fig


def plot_gallery_energy(gallery: dict[str, Trajectory], pairs) -> Figure:
    """Total energy of each gallery trajectory (dashed: its elastic, frictionless variant)."""
    fig, axes = plt.subplots(2, 3, figsize=(7.5, 5.0))
    flat = axes.flatten()
    for ax, (main, elastic) in zip(flat, pairs, strict=False):
        for name, style, colour in ((main, "-", "C0"), (elastic, "--", "C1")):
            if name is None:
                continue
            traj = gallery[name]
            ax.plot(traj.times, traj.energy, style, lw=2, color=colour, label=name)
            _mark_impulses(ax, traj, label=name == main)
        ax.set_title(main)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("total energy (J)")
        ax.legend(fontsize="small")
    for ax in flat[len(pairs) :]:
        ax.set_axis_off()
    return fig


def plot_pendulum(trajectories: list[tuple[Trajectory, str]]) -> Figure:
    """Explorer rollouts, one row each: bob paths over the ground, and the total energy."""
    fig, axes = plt.subplots(
        len(trajectories), 2, figsize=(7.5, 3.4 * len(trajectories)), squeeze=False
    )
    for (ax_path, ax_energy), (traj, title) in zip(axes, trajectories, strict=True):
        _draw(ax_path, traj)
        ax_path.set_title(title)
        ax_energy.plot(traj.times, traj.energy, lw=2, color="C0", label="total energy")
        _mark_impulses(ax_energy, traj)
        ax_energy.set_xlabel("time (s)")
        ax_energy.set_ylabel("total energy (J)")
        ax_energy.set_title(title)
        ax_energy.legend()
    return fig


def pendulum_explorer(cor: float = 0.0, mu: float = 0.5):
    """Sliders over the restitution and friction coefficients of the 3-link pendulum (ipywidgets).

    Every change re-simulates the same initial state with the contact model and redraws the
    bobs' paths and the total energy (red lines: steps with a contact impulse).
    """
    import ipywidgets as widgets

    def draw(cor: float, mu: float) -> Figure:
        return plot_pendulum([(pendulum_rollout(cor, mu), f"CP3, e = {cor:.2f}, μ = {mu:.2f}")])

    cor_slider = widgets.FloatSlider(
        value=cor, min=0.0, max=1.0, step=0.05, description="e", continuous_update=False
    )
    mu_slider = widgets.FloatSlider(
        value=mu, min=0.0, max=1.0, step=0.05, description="μ", continuous_update=False
    )
    return explorer(draw, cor=cor_slider, mu=mu_slider)
