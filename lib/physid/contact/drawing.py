"""How each system with contact is drawn: one :class:`Drawing` per kind of system.

Every :class:`~physid.contact.system.ContactSystem` declares its ``drawing``, the name of its
entry in :data:`DRAWINGS`: ``"bodies"`` (balls and disks in the unit box), ``"chain"`` (the
pendulum above the ground), ``"gyroscope"`` (seen from above, against the wall) and ``"rope"``.
The figures of both contact chapters ask the system's drawing for what they show, so no figure
branches on a task's name and a new system is drawn by registering its drawing. Positions are
in metres; ``x`` is a configuration ``(N,)`` or a path of them ``(T, N)``.

A drawing gives

* :meth:`Drawing.tracked`: the points a time-series panel follows, with their labels;
* :meth:`Drawing.paths`: the paths of a trajectory with its final pose (the gallery);
* :meth:`Drawing.snapshot`: one configuration, solid for the truth, dashed for a prediction;
* :meth:`Drawing.scene`: the walls, ground or wall, and the axis limits;
* :meth:`Drawing.extent`: the drawn points of some configurations and the margin around them
  (None: the axes scale themselves);
* ``view``, how the plane is seen (a suffix for titles), and ``adjustable``, how an equal
  aspect is kept (``"box"`` or ``"datalim"``).
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Circle

from physid.contact.planar import WALLS
from physid.contact.system import ContactSystem
from physid.core.registry import Registry

__all__ = ["DRAWINGS", "Drawing", "drawing_of"]


def _draw_box(ax: Axes) -> None:
    for a, b, c in WALLS:
        if a:
            ax.axvline(-c / a, color="k", lw=1)
        else:
            ax.axhline(-c / b, color="k", lw=1)


@dataclass(frozen=True)
class Drawing:
    """How one kind of system is drawn (see the module docstring); subclasses implement it."""

    name: str
    view: str = ""
    adjustable: str = "box"

    def tracked(self, system: ContactSystem, x: np.ndarray) -> tuple[list[str], np.ndarray]:
        """``(labels, (T, k, d))``: the points whose coordinates a time panel shows."""
        raise NotImplementedError

    def paths(self, ax: Axes, system: ContactSystem, x: np.ndarray, times: np.ndarray,
              legend: bool = True) -> None:
        """The paths of the trajectory ``x (T, N)`` at ``times`` and its final pose."""
        raise NotImplementedError

    def snapshot(self, ax: Axes, system: ContactSystem, x: np.ndarray, predicted: bool) -> None:
        """The configuration ``x (N,)``: solid and filled for the truth, dashed predicted."""
        raise NotImplementedError

    def scene(self, ax: Axes, system: ContactSystem) -> None:
        """What bounds the system (walls, ground, wall) and the axis limits."""

    def extent(self, system: ContactSystem, shown: list[np.ndarray]
               ) -> tuple[np.ndarray, float] | None:
        """The drawn points ``(M, 2)`` of the configurations ``shown`` and a margin (m)."""
        points = np.concatenate([x.reshape(-1, 2) for x in shown])
        margin = float(np.max(system.radii_np)) if system.radii is not None else 0.05
        return points, margin


@dataclass(frozen=True)
class BodiesDrawing(Drawing):
    """Balls or disks in the unit box: coloured paths, circles at the end, the box."""

    def _centres(self, system: ContactSystem, x: np.ndarray) -> np.ndarray:
        return x.reshape(len(x), system.n_bodies, system.points_per_body, 2)[:, :, 0]

    def tracked(self, system, x):
        kind = "disk" if system.points_per_body > 1 else "ball"
        return [f"{kind} {b + 1}" for b in range(system.n_bodies)], self._centres(system, x)

    def paths(self, ax, system, x, times, legend=True):
        centres = self._centres(system, x)
        for b in range(system.n_bodies):
            ax.plot(centres[:, b, 0], centres[:, b, 1], lw=1.2, color=f"C{b}")
            circle = plt.Circle(centres[-1, b], system.radii_np[b], color=f"C{b}", alpha=0.4)
            ax.add_patch(circle)
        self.scene(ax, system)

    def snapshot(self, ax, system, x, predicted):
        ls = "--" if predicted else "-"
        bodies = x.reshape(system.n_bodies, system.points_per_body, 2)
        for b in range(system.n_bodies):
            colour = f"C{b}"
            ax.add_patch(Circle(bodies[b, 0], system.radii_np[b], fill=not predicted,
                                alpha=1.0 if predicted else 0.35, color=colour, ls=ls, lw=1.2))
            if system.points_per_body > 1:  # the disk's orientation: a radius along axis 1
                axis = bodies[b, 1] - bodies[b, 0]
                tip = bodies[b, 0] + system.radii_np[b] * axis / max(np.linalg.norm(axis), 1e-12)
                ax.plot(*np.stack([bodies[b, 0], tip]).T, ls=ls, color=colour, lw=1)

    def scene(self, ax, system):
        _draw_box(ax)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)


@dataclass(frozen=True)
class ChainDrawing(Drawing):
    """The pendulum: each bob's path, the final pose from the pivot, the ground."""

    def tracked(self, system, x):
        return [f"bob {i + 1}" for i in range(system.n_points)], x.reshape(len(x), -1, 2)

    def paths(self, ax, system, x, times, legend=True):
        bobs = x.reshape(len(x), system.n_points, 2)
        for i in range(system.n_points):
            ax.plot(bobs[:, i, 0], bobs[:, i, 1], lw=1.2, color=f"C{i}", label=f"bob {i + 1}")
        last = np.concatenate([np.zeros((1, 2)), bobs[-1]])
        ax.plot(last[:, 0], last[:, 1], "k-o", ms=3, label="final pose")
        ax.axhline(-system.ground, color="0.4", lw=2, label="ground")
        ax.set_xlim(-1.2, 1.2)
        ax.set_ylim(-1.1, 1.2)
        if legend:
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))

    def snapshot(self, ax, system, x, predicted):
        _line_snapshot(self, ax, system, x, predicted)

    def scene(self, ax, system):
        ax.axhline(-system.ground, color="0.4", lw=2)
        ax.set_xlim(-1.2, 1.2)
        ax.set_ylim(-1.1, 1.2)


@dataclass(frozen=True)
class GyroscopeDrawing(Drawing):
    """The gyroscope from above: its centre's path, its rim, the wall."""

    def _rim(self, system: ContactSystem, x: np.ndarray) -> np.ndarray:
        return system.rim_weights.cpu().numpy() @ x.reshape(-1, 4, 3)

    def tracked(self, system, x):
        return ["centre"], x.reshape(len(x), 4, 3)[:, :1]

    def paths(self, ax, system, x, times, legend=True):
        centre = x.reshape(len(x), 4, 3)[:, 0]
        rim = self._rim(system, x)
        ax.plot(centre[:, 0], centre[:, 1], lw=1.5, color="C0", label="centre")
        ax.plot(rim[-1, :, 0], rim[-1, :, 1], "o", ms=2, color="C1", label="rim (end)")
        ax.axhline(-system.wall, color="0.4", lw=2, label="wall")
        ax.set_xlim(-0.7, 0.7)
        ax.set_ylim(-0.7, 0.7)
        if legend:
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))

    def snapshot(self, ax, system, x, predicted):
        ls = "--" if predicted else "-"
        rim = self._rim(system, x)[0]
        closed = np.concatenate([rim, rim[:1]])
        ax.plot(closed[:, 0], closed[:, 1], ls=ls, color="C0", lw=1.2)
        ax.plot(*x[:2], "o", color="C0", ms=3, fillstyle="none" if predicted else "full")

    def scene(self, ax, system):
        ax.axhline(-system.wall, color="0.4", lw=2)
        ax.set_xlim(-0.7, 0.7)
        ax.set_ylim(-0.7, 0.7)

    def extent(self, system, shown):
        weights = system.rim_weights.cpu().numpy()
        points = np.concatenate([weights @ x.reshape(4, 3) for x in shown])[:, :2]
        return points, 0.05


@dataclass(frozen=True)
class RopeDrawing(Drawing):
    """The rope: its shape at five instants coloured by time; axes that scale themselves."""

    def tracked(self, system, x):
        nodes = x.reshape(len(x), system.n_points, 2)
        index = np.unique(np.linspace(0, system.n_points - 1, 5).astype(int)[1:])
        return [f"node {i + 1}" for i in index], nodes[:, index]

    def paths(self, ax, system, x, times, legend=True):
        nodes = x.reshape(len(x), system.n_points, 2)
        instants = np.linspace(0, len(x) - 1, 5).astype(int)
        colours = plt.cm.viridis(np.linspace(0, 1, len(instants)))
        for colour, step in zip(colours, instants, strict=True):
            line = np.concatenate([np.zeros((1, 2)), nodes[step]])
            ax.plot(line[:, 0], line[:, 1], "-o", ms=2, color=colour)
        mappable = plt.cm.ScalarMappable(cmap="viridis", norm=plt.Normalize(times[0], times[-1]))
        ax.figure.colorbar(mappable, ax=ax, label="time (s)", shrink=0.8)

    def snapshot(self, ax, system, x, predicted):
        _line_snapshot(self, ax, system, x, predicted)

    def extent(self, system, shown):
        return None  # autoscaled


def _line_snapshot(drawing: Drawing, ax: Axes, system: ContactSystem, x: np.ndarray,
                   predicted: bool) -> None:
    """A chain of points from the pivot, with the tracked points in colour."""
    ls = "--" if predicted else "-"
    points = np.concatenate([np.zeros((1, 2)), x.reshape(-1, 2)])
    ax.plot(points[:, 0], points[:, 1], ls=ls, color="k", lw=1.2)
    _, tracked = drawing.tracked(system, x[None])
    for k, point in enumerate(tracked[0]):  # the points of the time panels, in colour
        ax.plot(*point, "o", ms=4, color=f"C{k}", fillstyle="none" if predicted else "full")


#: The drawing of every kind of system, by the name a system declares as its ``drawing``.
DRAWINGS: Registry[Drawing] = Registry("drawing", Drawing)
DRAWINGS.add(BodiesDrawing("bodies"))
DRAWINGS.add(ChainDrawing("chain"))
DRAWINGS.add(GyroscopeDrawing("gyroscope", view=" (top view)"))
DRAWINGS.add(RopeDrawing("rope", adjustable="datalim"))


def drawing_of(system: ContactSystem) -> Drawing:
    """The :class:`Drawing` the system declares (its ``drawing``)."""
    return DRAWINGS.get(system.drawing, "system.drawing")
