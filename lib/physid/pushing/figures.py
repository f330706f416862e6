"""Figures and the interactive explorer of the Part I chapter (:mod:`physid.pushing`)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.collections import PatchCollection
from matplotlib.colors import LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from physid.pushing.experiments import BulletGap, PushTurns, SlidingCheck
from physid.pushing.objects import OBJECT_NAMES, CellObject, load_object
from physid.pushing.pushes import Push
from physid.pushing.simulate import simulate


def _yaw(start: np.ndarray, end: np.ndarray) -> float:
    """Rotation (rad) of the object between two poses of its (k, 2) cell centres."""
    a, b = start[-1] - start[0], end[-1] - end[0]
    return math.atan2(b[1], b[0]) - math.atan2(a[1], a[0])


def _cells(
    ax: plt.Axes, centres: np.ndarray, side: float, values=None, cmap="viridis", yaw=0.0, **kw
):
    angle = math.degrees(yaw)
    patches = [
        Rectangle((x - side / 2, y - side / 2), side, side, angle=angle, rotation_point="center")
        for x, y in centres
    ]
    collection = PatchCollection(patches, cmap=cmap, **kw)
    if values is not None:
        collection.set_array(np.asarray(values))
    ax.add_collection(collection)
    ax.set_aspect("equal")
    ax.autoscale_view()
    return collection


def plot_objects(objects: list[CellObject]) -> Figure:
    """Each object's cells coloured by mass (top row, log scale) and friction (bottom row),
    with one colour scale per row shared by all objects."""
    n = len(objects)
    fig, axes = plt.subplots(2, n, figsize=(2.7 * n, 4.0), layout="constrained")
    masses = torch.cat([obj.masses for obj in objects])
    frictions = torch.cat([obj.frictions for obj in objects])
    norms = [
        LogNorm(float(masses.min()), float(masses.max())),
        Normalize(0.0, float(frictions.max())),
    ]
    rows = [("masses", "mass per cell (kg)", "viridis"), ("frictions", "friction μ", "magma")]
    for row, (attribute, label, cmap) in enumerate(rows):
        for column, obj in enumerate(objects):
            ax = axes[row, column]
            cells = _cells(ax, obj.centres.numpy(), obj.cell_side, getattr(obj, attribute).numpy(),
                           cmap=cmap, norm=norms[row], edgecolor="w", linewidth=0.3)  # fmt: skip
            ax.set_xticks([])
            ax.set_yticks([])
            if row == 0:
                ax.set_title(f"{obj.name} ({len(obj)} cells)")
        fig.colorbar(cells, ax=axes[row, :], shrink=0.8, label=label)
    return fig


def plot_sliding(check: SlidingCheck) -> Figure:
    """Stopping distance of one sliding cell against the direction of its initial velocity."""
    fig, ax = plt.subplots(figsize=(5.6, 3.4), layout="constrained")
    degrees = np.degrees(check.angles)
    for n_dirs, distances in check.distances.items():
        ax.plot(degrees, distances / check.coulomb, "o-", ms=4, label=f"D with {n_dirs} directions")
    ax.axhline(1.0, color="k", ls="--", lw=1, label="Coulomb: v²/(2μg)")
    ax.set_xlabel("direction of the initial velocity (°)")
    ax.set_ylabel("stopping distance / v²/(2μg)")
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    return fig


def plot_push_turns(turns: PushTurns) -> Figure:
    """The centred and the offset push: start and end poses of the cells, and the yaw."""
    fig, (ax_pose, ax_yaw) = plt.subplots(1, 2, figsize=(9.5, 3.6), layout="constrained")
    side = turns.box.cell_side
    start = turns.positions[0, 0]
    _cells(ax_pose, start, side, facecolor="0.85", edgecolor="0.6", linewidth=0.5)
    for index, (label, color) in enumerate([("centred", "C0"), ("offset", "C3")]):
        end = turns.positions[index, -1]
        _cells(ax_pose, end, side, yaw=turns.yaw[index, -1], facecolor=color, alpha=0.45,
               edgecolor=color, linewidth=0.5)  # fmt: skip
        path = turns.positions[index].mean(axis=1)
        ax_pose.plot(path[:, 0], path[:, 1], color=color, lw=1.5, label=f"{label} push")
        ax_yaw.plot(turns.times, np.degrees(turns.yaw[index]), color=color, lw=2, label=label)
    ax_pose.legend(frameon=False, loc="upper left")
    ax_pose.set_xlabel("x (m)")
    ax_pose.set_ylabel("y (m)")
    ax_yaw.set_xlabel("time (s)")
    ax_yaw.set_ylabel("yaw (°)")
    ax_yaw.legend(frameon=False)
    ax_yaw.grid(alpha=0.3)
    return fig


def plot_bullet_gap(gaps: list[BulletGap]) -> Figure:
    """Median (line) and range (band) over pushes of the cell-position error, per object."""
    dirs = sorted(gaps[0].errors)
    fig, axes = plt.subplots(1, len(dirs), figsize=(4.8 * len(dirs), 3.4), sharey=True,
                             layout="constrained")  # fmt: skip
    for ax, n_dirs in zip(np.atleast_1d(axes), dirs, strict=True):
        for index, gap in enumerate(gaps):
            errors = 1e3 * gap.errors[n_dirs]
            color = f"C{index}"
            ax.plot(gap.times, np.median(errors, axis=0), color=color, lw=2, label=gap.name)
            ax.fill_between(gap.times, errors.min(axis=0), errors.max(axis=0), color=color,
                            alpha=0.15)  # fmt: skip
        ax.set_title(f"D with {n_dirs} directions")
        ax.set_xlabel("time into the push (s)")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("mean cell-position error (mm)")
    np.atleast_1d(axes)[0].legend(frameon=False)
    return fig


def plot_push(obj: CellObject, push: Push, friction_scale: float = 1.0, ax=None) -> Figure:
    """The cells before (grey) and after ``push`` (coloured by friction), and the pusher."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.6, 4.2), layout="constrained")
    else:
        fig = ax.figure
    frictions = obj.frictions * friction_scale
    traj = simulate(obj, push, frictions=frictions, progress=False)
    positions = traj.positions.detach().numpy()
    _cells(ax, positions[0], obj.cell_side, facecolor="0.85", edgecolor="0.65", linewidth=0.4)
    _cells(ax, positions[-1], obj.cell_side, frictions.numpy(), cmap="magma",
           yaw=_yaw(positions[0], positions[-1]), edgecolor="w", linewidth=0.3,
           alpha=0.85)  # fmt: skip
    path = positions.mean(axis=1)
    ax.plot(path[:, 0], path[:, 1], "k-", lw=1, label="centroid path")
    end = np.asarray(push.contact) + np.asarray(push.velocity) * push.duration
    ax.annotate("", xy=end, xytext=push.contact,
                arrowprops={"arrowstyle": "->", "color": "C2", "lw": 2})  # fmt: skip
    ax.plot(*push.contact, "o", color="C2", label="pusher")
    ax.legend(frameon=False, loc="lower left", fontsize=8)
    ax.set_title(f"{obj.name}: friction × {friction_scale:.2f}")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.autoscale_view()
    return fig


def boundary_push(obj: CellObject, position: float, angle: float, duration: float = 1.0) -> Push:
    """A push at the fraction ``position`` ∈ [0, 1) along the object's boundary faces, turned
    by ``angle`` (rad) from the face's inward normal."""
    _, mids, normals = obj.exposed_faces()
    order = np.argsort(np.arctan2(mids[:, 1], mids[:, 0]))  # faces counter-clockwise
    face = order[min(int(position * len(order)), len(order) - 1)]
    normal = normals[face]
    c, s = math.cos(angle), math.sin(angle)
    direction = (c * normal[0] - s * normal[1], s * normal[0] + c * normal[1])
    return Push(tuple(mids[face]), direction, duration=duration)


def push_explorer(position: float = 0.3, angle: float = 0.0, friction_scale: float = 1.0):
    """Sliders over the object, the push point along its boundary, the push direction and a
    friction scale, redrawing the cells' predicted motion (an ipywidgets view)."""
    import ipywidgets as widgets

    objects = {name: load_object(name) for name in OBJECT_NAMES}

    def draw(name: str, position: float, angle_deg: float, friction_scale: float) -> None:
        torch.set_num_threads(1)
        obj = objects[name]
        plot_push(obj, boundary_push(obj, position, math.radians(angle_deg)), friction_scale)
        plt.show()

    return widgets.interactive(
        draw,
        name=widgets.Dropdown(options=list(OBJECT_NAMES), value="hammer", description="object"),
        position=widgets.FloatSlider(value=position, min=0.0, max=0.99, step=0.01,
                                     description="push point", continuous_update=False),
        angle_deg=widgets.FloatSlider(value=math.degrees(angle), min=-20, max=20, step=1,
                                      description="angle (°)", continuous_update=False),
        friction_scale=widgets.FloatSlider(value=friction_scale, min=0.25, max=2.0, step=0.05,
                                           description="friction ×", continuous_update=False),
    )  # fmt: skip
