"""Figures and the interactive explorer of the Part I chapter (:mod:`physid.pushing`)."""

from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.collections import PatchCollection
from matplotlib.colors import LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, Patch, Rectangle

from physid.book.display import explorer
from physid.core.validate import check_number, check_positive
from physid.pushing.chapters.pushing_lcp import BulletGap, PushTurns, SlidingCheck
from physid.pushing.finger import FINGER, Finger, check_finger
from physid.pushing.objects import OBJECT_NAMES, CellObject, load_object
from physid.pushing.pushes import Push, finger_start
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
    """One row per object: its cells coloured by mass (left, log scale) and by friction with
    the table (right), with one labelled colour scale per column shared by all objects."""
    extents = [np.ptp(obj.centres.numpy(), axis=0) + obj.cell_side for obj in objects]
    ratios = [max(float(e[1] / e[0]), 0.25) for e in extents]
    fig, axes = plt.subplots(
        len(objects), 2, figsize=(7.0, 1.4 + 2.6 * sum(ratios) + 0.45 * len(objects)),
        height_ratios=ratios, squeeze=False,
    )
    masses = torch.cat([obj.masses for obj in objects])
    frictions = torch.cat([obj.frictions for obj in objects])
    norms = [
        LogNorm(float(masses.min()), float(masses.max())),
        Normalize(0.0, float(frictions.max())),
    ]
    columns = [("masses", "mass per cell (kg)", "viridis"),
               ("frictions", "friction coefficient with the table μ (–)", "magma")]
    for column, (attribute, label, cmap) in enumerate(columns):
        for row, obj in enumerate(objects):
            ax = axes[row, column]
            cells = _cells(ax, 1e3 * obj.centres.numpy(), 1e3 * obj.cell_side,
                           getattr(obj, attribute).numpy(), cmap=cmap, norm=norms[column],
                           edgecolor="w", linewidth=0.3)
            ax.grid(False)
            ax.set_title(f"{obj.name} ({len(obj)} cells): {attribute}")
            ax.set_ylabel("y (mm)")
        axes[-1, column].set_xlabel("x (mm)")
        fig.colorbar(cells, ax=axes[:, column], location="bottom", shrink=0.9, label=label)
    return fig


def plot_sliding(check: SlidingCheck) -> Figure:
    """Stopping distance of one sliding cell against the direction of its initial velocity."""
    fig, ax = plt.subplots()
    degrees = np.degrees(check.angles)
    for n_dirs in sorted(check.distances):
        ax.plot(degrees, check.ratios(n_dirs), "o-", ms=4, label=f"D with {n_dirs} directions")
    ax.axhline(1.0, color="k", ls="--", lw=1, label="Coulomb: $v_0^2/(2\\mu g)$")
    ax.set_xlabel("direction of the initial velocity from the +x axis (°)")
    ax.set_ylabel("stopping distance / $v_0^2/(2\\mu g)$ (–)")
    ax.legend(frameon=False)
    return fig


def plot_push_turns(turns: PushTurns) -> Figure:
    """The centred and the offset push: start and end poses of the cells, and the yaw."""
    fig, (ax_pose, ax_yaw) = plt.subplots(1, 2, figsize=(7.0, 3.4))
    side = turns.box.cell_side
    start = turns.positions[0, 0]
    _cells(ax_pose, start, side, facecolor="0.85", edgecolor="0.6", linewidth=0.5)
    for index, (label, color) in enumerate([("centred", "C0"), ("offset", "C3")]):
        end = turns.positions[index, -1]
        _cells(ax_pose, end, side, yaw=turns.yaw[index, -1], facecolor=color, alpha=0.45,
               edgecolor=color, linewidth=0.5)
        path = turns.positions[index].mean(axis=1)
        ax_pose.plot(path[:, 0], path[:, 1], color=color, lw=1.5, label=f"{label} push")
        ax_yaw.plot(turns.times, np.degrees(turns.yaw[index]), color=color, lw=2, label=label)
    ax_pose.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)
    ax_pose.set_xlabel("x (m)")
    ax_pose.set_ylabel("y (m)")
    ax_yaw.set_xlabel("time (s)")
    ax_yaw.set_ylabel("yaw (°)")
    ax_yaw.legend(frameon=False)
    return fig


def plot_bullet_gap(gaps: list[BulletGap]) -> Figure:
    """Median (line) and range (band) over pushes of the cell-position error, per object, one
    panel per friction model."""
    models = list(gaps[0].errors)
    fig, axes = plt.subplots(1, len(models), figsize=(7.0, 3.6), sharey=True, squeeze=False)
    for ax, model in zip(axes[0], models, strict=True):
        for index, gap in enumerate(gaps):
            errors = 1e3 * gap.errors[model]
            color = f"C{index}"
            ax.plot(gap.times, np.median(errors, axis=0), color=color, lw=2, label=gap.name)
            ax.fill_between(gap.times, errors.min(axis=0), errors.max(axis=0), color=color,
                            alpha=0.15)
        ax.set_title(model, fontsize="medium")
        ax.set_xlabel("time into the push (s)")
    axes[0, 0].set_ylabel("mean cell-position error (mm)")
    axes[0, 0].legend(frameon=False)
    return fig


def _finger_disc(ax: plt.Axes, centre: np.ndarray, radius: float, **kw) -> None:
    ax.add_patch(Circle(tuple(centre), radius, **kw))


def plot_push(
    obj: CellObject,
    push: Push,
    friction_scale: float = 1.0,
    finger: Finger = FINGER,
    ax=None,
) -> Figure:
    """The cells before (grey) and after ``push`` by ``finger`` (coloured by friction, with a
    colour bar), the path of the centroid and the finger's disc at its start and end."""
    friction_scale = check_positive("friction_scale", friction_scale)
    check_finger(finger)
    frictions = obj.frictions * friction_scale
    traj = simulate(obj, push, frictions=frictions, finger=finger)  # before any figure
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.0, 4.6))
    else:
        fig = ax.figure
    positions = traj.positions.detach().numpy()
    _cells(ax, positions[0], obj.cell_side, facecolor="0.85", edgecolor="0.65", linewidth=0.4)
    after = _cells(ax, positions[-1], obj.cell_side, frictions.numpy(), cmap="magma",
                   yaw=_yaw(positions[0], positions[-1]), edgecolor="w", linewidth=0.3,
                   alpha=0.85)
    path = positions.mean(axis=1)
    ax.plot(path[:, 0], path[:, 1], "k-", lw=1)
    start = finger_start(push, finger)
    end = start + np.asarray(push.velocity) * push.duration
    _finger_disc(ax, start, finger.radius, facecolor="none", edgecolor="C2", lw=1.5, ls="--")
    _finger_disc(ax, end, finger.radius, facecolor="C2", edgecolor="C2", alpha=0.6)
    ax.plot([start[0], end[0]], [start[1], end[1]], color="C2", lw=1, ls=":")
    handles = [
        Patch(facecolor="0.85", edgecolor="0.65", label="cells at the start"),
        Patch(facecolor=plt.get_cmap("magma")(0.6), label=f"cells after {push.duration:g} s"),
        Line2D([], [], color="k", lw=1, label="path of the centroid"),
        Line2D([], [], color="C2", marker="o", mfc="none", ls="--", lw=1.5,
               label="finger at the start"),
        Line2D([], [], color="C2", marker="o", ls="none", alpha=0.6, label="finger at the end"),
    ]
    ax.legend(handles=handles, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.16),
              ncols=2)
    fig.colorbar(after, ax=ax, label="friction coefficient μ after scaling (–)")
    ax.set_title(f"{obj.name}: friction × {friction_scale:.2f}, finger friction "
                 f"{finger.friction:.2f}")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.autoscale_view()
    return fig


def plot_unreachable(obj: CellObject, reason: str) -> Figure:
    """The object at rest, with ``reason`` (why a push cannot be made) as the title."""
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    _cells(ax, obj.centres.numpy(), obj.cell_side, facecolor="0.85", edgecolor="0.65",
           linewidth=0.4)
    ax.set_title(textwrap.fill(f"No push: {reason}", 80), fontsize="small")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    return fig


def boundary_push(obj: CellObject, position: float, angle: float, duration: float = 1.0) -> Push:
    """A push at the fraction ``position`` ∈ [0, 1) along the object's boundary faces, turned
    by ``angle`` (rad, |angle| < π/2) from the face's inward normal."""
    position = check_number("position", position, low=0.0, high=1.0, high_open=True)
    angle = check_number("angle", angle, low=-math.pi / 2, high=math.pi / 2, low_open=True,
                         high_open=True)
    _, mids, normals = obj.exposed_faces()
    order = np.argsort(np.arctan2(mids[:, 1], mids[:, 0]))  # faces counter-clockwise
    face = order[min(int(position * len(order)), len(order) - 1)]
    normal = normals[face]
    c, s = math.cos(angle), math.sin(angle)
    direction = (c * normal[0] - s * normal[1], s * normal[0] + c * normal[1])
    return Push(tuple(mids[face]), direction, duration=duration)


_OBJECTS: dict[str, CellObject] = {}


def draw_push(
    name: str, position: float, angle_deg: float, friction_scale: float = 1.0,
    finger_friction: float = FINGER.friction,
) -> Figure:
    """The explorer's figure: object ``name`` pushed at the fraction ``position`` of its
    boundary, ``angle_deg`` (°) from the face's normal (:func:`boundary_push`), by a finger of
    friction ``finger_friction``, with the cells' frictions scaled by ``friction_scale``
    (:func:`plot_push`). A push the finger cannot make
    (:func:`~physid.pushing.pushes.check_reachable`) draws the object with the reason
    (:func:`plot_unreachable`) instead of raising."""
    if name not in _OBJECTS:
        _OBJECTS[name] = load_object(name)
    obj = _OBJECTS[name]
    finger = Finger(radius=FINGER.radius, friction=finger_friction)
    push = boundary_push(obj, position, math.radians(angle_deg))
    try:
        return plot_push(obj, push, friction_scale, finger)
    except ValueError as error:  # a push the finger cannot make: say why
        return plot_unreachable(obj, str(error))


def push_explorer(
    position: float = 0.3, angle: float = 0.0, friction_scale: float = 1.0,
    finger_friction: float = FINGER.friction,
):
    """Sliders over the object, the push point along its boundary, the push direction, a
    friction scale and the finger–object friction, redrawing the cells' predicted motion (an
    ipywidgets view of :func:`draw_push`, which draws an unreachable push's reason instead of
    raising)."""
    import ipywidgets as widgets

    return explorer(
        draw_push,
        name=widgets.Dropdown(options=list(OBJECT_NAMES), value="hammer", description="object"),
        position=widgets.FloatSlider(value=position, min=0.0, max=0.99, step=0.01,
                                     description="push point", continuous_update=False),
        angle_deg=widgets.FloatSlider(value=math.degrees(angle), min=-20, max=20, step=1,
                                      description="angle (°)", continuous_update=False),
        friction_scale=widgets.FloatSlider(value=friction_scale, min=0.25, max=2.0, step=0.05,
                                           description="friction ×", continuous_update=False),
        finger_friction=widgets.FloatSlider(value=finger_friction, min=0.0, max=2.0, step=0.05,
                                            description="finger μ", continuous_update=False),
    )
