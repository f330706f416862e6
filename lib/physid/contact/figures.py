"""Figures and the interactive explorer of the chapter "A differentiable contact model"."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from physid.contact.experiments import ImpactStudy, Trajectory, pendulum_rollout
from physid.contact.planar import WALLS
from physid.contact.tasks import make_task


def plot_jump(traj: Trajectory) -> Figure:
    """Height above the ground and vertical velocity of the last pendulum bob through impacts."""
    task = make_task(traj.task)
    system = task.system
    n = system.n_points
    y = traj.x[:, 2 * (n - 1) + 1]
    vy = traj.v[:, 2 * (n - 1) + 1]
    gap = y + system.ground - system.radii_np[-1]
    fig, (ax_y, ax_v) = plt.subplots(1, 2, figsize=(9, 3.2), layout="constrained")
    ax_y.plot(traj.times, gap, lw=2)
    ax_y.axhline(0, color="k", lw=0.8)
    ax_y.set_ylabel("distance to the ground (m)")
    ax_v.plot(traj.times, vy, lw=2, marker=".", ms=3)
    ax_v.set_ylabel("vertical velocity (m/s)")
    for ax in (ax_y, ax_v):
        for step in traj.contact_steps:
            ax.axvline(traj.times[step], color="C3", lw=0.8, alpha=0.5)
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
    return fig


def plot_restitution(studies: list[ImpactStudy]) -> Figure:
    """Energy change of every impact under Poisson's and Newton's hypotheses, sorted."""
    fig, axes = plt.subplots(
        1, len(studies), figsize=(4.6 * len(studies), 3.4), layout="constrained", squeeze=False
    )
    for ax, study in zip(axes[0], studies, strict=True):
        for which, color in (("newton", "C3"), ("poisson", "C0")):
            rel = (getattr(study, which) / study.reachable.clamp_min(1e-12)).cpu().numpy()
            label = "Newton (LCP)" if which == "newton" else "Poisson (CM)"
            ax.plot(np.sort(rel)[::-1], color=color, lw=2, label=label)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_title(f"{study.task} impacts, μ = {study.mu:g}, e = {study.cor:g}")
        ax.set_xlabel("impact (sorted)")
        ax.set_ylabel("ΔKE / reachable KE")
        ax.grid(alpha=0.3)
        ax.legend(frameon=False)
    return fig


def plot_penetration(study: dict[str, np.ndarray]) -> Figure:
    """Deepest penetration per step with and without penetration compensation."""
    fig, ax = plt.subplots(figsize=(5.6, 3.4), layout="constrained")
    t = study["times"]
    ax.plot(t, 1e3 * study["without"], lw=2, color="C3", label="without compensation")
    ax.plot(t, 1e3 * study["with"], lw=2, color="C0", label="v*_n = -d / (8 Δt)")
    ax.axhline(1e3 * float(study["equilibrium"]), color="k", ls="--", lw=1, label="4 g Δt²")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("penetration (mm)")
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    return fig


def plot_timing(rows: list[dict]) -> Figure:
    """Contact resolutions per second (forward and backward) against the batch size."""
    fig, ax = plt.subplots(figsize=(5.6, 3.6), layout="constrained")
    batches = [r["batch"] for r in rows]
    for label in [k for k in rows[0] if k != "batch"]:
        ax.loglog(batches, [r[label] for r in rows], "o-", lw=2, label=label)
    ax.set_xlabel("batch size")
    ax.set_ylabel("resolutions per second")
    ax.legend(frameon=False)
    ax.grid(alpha=0.3, which="both")
    return fig


def _draw_box(ax) -> None:
    for a, b, c in WALLS:
        if a:
            ax.axvline(-c / a, color="k", lw=1)
        else:
            ax.axhline(-c / b, color="k", lw=1)


def _draw(ax, traj: Trajectory) -> None:
    task = make_task(traj.task)
    system = task.system
    x = traj.x
    if traj.task.startswith(("BP", "BD")):
        centres = x.reshape(len(x), system.n_bodies, system.points_per_body, 2)[:, :, 0]
        for b in range(system.n_bodies):
            ax.plot(centres[:, b, 0], centres[:, b, 1], lw=1.2, color=f"C{b}")
            circle = plt.Circle(centres[-1, b], system.radii_np[b], color=f"C{b}", alpha=0.4)
            ax.add_patch(circle)
        _draw_box(ax)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
    elif traj.task.startswith("CP"):
        bobs = x.reshape(len(x), system.n_points, 2)
        for i in range(system.n_points):
            ax.plot(bobs[:, i, 0], bobs[:, i, 1], lw=1.2, color=f"C{i}")
        last = np.concatenate([np.zeros((1, 2)), bobs[-1]])
        ax.plot(last[:, 0], last[:, 1], "k-o", ms=3)
        ax.axhline(-system.ground, color="k", lw=1)
        ax.set_xlim(-1.2, 1.2)
        ax.set_ylim(-1.1, 1.2)
    elif traj.task.startswith("Gyro"):
        centre = x.reshape(len(x), 4, 3)[:, 0]
        rim = system.rim_weights.cpu().numpy() @ x.reshape(len(x), 4, 3)
        ax.plot(centre[:, 0], centre[:, 1], lw=1.5, label="centre")
        ax.plot(rim[-1, :, 0], rim[-1, :, 1], "o", ms=2, color="C1", label="rim (end)")
        ax.axhline(-system.wall, color="k", lw=1)
        ax.set_xlim(-0.7, 0.7)
        ax.set_ylim(-0.7, 0.7)
        ax.set_title("top view (x–y)", fontsize=9)
    else:
        nodes = x.reshape(len(x), system.n_points, 2)
        for j, step in enumerate(np.linspace(0, len(x) - 1, 5).astype(int)):
            line = np.concatenate([np.zeros((1, 2)), nodes[step]])
            ax.plot(line[:, 0], line[:, 1], "-o", ms=2, color=plt.cm.viridis(j / 4))
    ax.set_aspect("equal", adjustable="box")
    ax.set_title(traj.task + ("\n" + ax.get_title() if ax.get_title() else ""))


def plot_gallery(gallery: dict[str, Trajectory], pairs) -> Figure:
    """Top: one rollout of each system; bottom: its total energy (dashed: elastic variant)."""
    fig, axes = plt.subplots(2, len(pairs), figsize=(3.3 * len(pairs), 6.4), layout="constrained")
    for col, (main, elastic) in enumerate(pairs):
        _draw(axes[0, col], gallery[main])
        ax = axes[1, col]
        for name, style in ((main, "-"), (elastic, "--")):
            if name is None:
                continue
            traj = gallery[name]
            ax.plot(traj.times, traj.energy, style, lw=2, label=name)
            for step in traj.contact_steps:
                ax.axvline(traj.times[step], color="C3", lw=0.5, alpha=0.3)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("total energy (J)")
        ax.legend(frameon=False, fontsize=8)
        ax.grid(alpha=0.3)
    return fig


def plot_pendulum(traj: Trajectory, title: str = "") -> Figure:
    """The explorer's pendulum rollout: bob paths over the ground, and the total energy."""
    fig, (ax_path, ax_energy) = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained")
    _draw(ax_path, traj)
    ax_path.set_title(title or traj.task)
    ax_energy.plot(traj.times, traj.energy, lw=2)
    for step in traj.contact_steps:
        ax_energy.axvline(traj.times[step], color="C3", lw=0.6, alpha=0.4)
    ax_energy.set_xlabel("time (s)")
    ax_energy.set_ylabel("total energy (J)")
    ax_energy.grid(alpha=0.3)
    return fig


def pendulum_explorer(cor: float = 0.0, mu: float = 0.5):
    """Sliders over the restitution and friction coefficients of the 3-link pendulum (ipywidgets).

    Every change re-simulates the same initial state for 1.5 s with the contact model and redraws
    the bobs' paths and the total energy (red lines: steps with a contact impulse).
    """
    import ipywidgets as widgets

    def draw(cor: float, mu: float) -> None:
        plot_pendulum(pendulum_rollout(cor, mu), f"CP3, e = {cor:.2f}, μ = {mu:.2f}")
        plt.show()

    cor_slider = widgets.FloatSlider(
        value=cor, min=0.0, max=1.0, step=0.05, description="e", continuous_update=False
    )
    mu_slider = widgets.FloatSlider(
        value=mu, min=0.0, max=1.0, step=0.05, description="μ", continuous_update=False
    )
    return widgets.interactive(draw, cor=cor_slider, mu=mu_slider)
