"""The experiments of the Part I chapter "An LCP engine for pushed cell objects".

Sizes per scale are in :data:`SIZES`. Each driver returns plain arrays for the figures and the
claims: the analytic checks (:func:`sliding_check`, :func:`push_turns`), the agreement of the
two formulations (:func:`formulation_gap`) and the gap to pybullet with the true parameters
(:func:`bullet_gap`, run over objects with ``joblib.Parallel``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from joblib import Parallel, delayed

from physid.pushing.bullet import simulate_bullet
from physid.pushing.objects import CellObject, load_object, rectangle
from physid.pushing.pushes import Push, random_pushes
from physid.pushing.simulate import GRAVITY, cell_position_error, simulate
from physid.scales import select

#: Sample period (s) shared by the engines' 0.01 s grid and Bullet's 1/240 s grid.
SAMPLE_PERIOD = 0.05


@dataclass(frozen=True)
class PushingSizes:
    """Run sizes of the chapter: random pushes per object and push durations (s)."""

    pushes_per_object: int
    duration: float
    lcp_pushes: int
    lcp_duration: float


#: Run sizes per scale.
SIZES = {
    "quick": PushingSizes(pushes_per_object=2, duration=0.5, lcp_pushes=1, lcp_duration=0.2),
    "default": PushingSizes(pushes_per_object=8, duration=1.0, lcp_pushes=2, lcp_duration=1.0),
    "paper": PushingSizes(pushes_per_object=16, duration=1.0, lcp_pushes=4, lcp_duration=1.0),
}


def sizes(scale: str) -> PushingSizes:
    """The :class:`PushingSizes` of ``scale`` (ValueError for an unknown scale)."""
    return select(SIZES, scale, "pushing chapter")


def sample_times(duration: float) -> np.ndarray:
    """Every :data:`SAMPLE_PERIOD` from 0 to ``duration`` (both grids contain these times)."""
    n = round(duration / SAMPLE_PERIOD)
    if n < 1 or abs(n * SAMPLE_PERIOD - duration) > 1e-9:
        raise ValueError(f"duration must be a multiple of {SAMPLE_PERIOD} s, got {duration!r}")
    return SAMPLE_PERIOD * np.arange(n + 1)


@dataclass(frozen=True)
class SlidingCheck:
    """Distances slid by a single cell with initial speed ``v0`` along ``angles`` (rad)."""

    v0: float
    mu: float
    dt: float
    angles: np.ndarray
    distances: dict[int, np.ndarray]

    @property
    def coulomb(self) -> float:
        """The closed-form stopping distance v₀²/(2μg)."""
        return self.v0**2 / (2 * self.mu * GRAVITY)


def sliding_check(
    v0: float = 1.0, mu: float = 0.5, dt: float = 1e-3, dirs: tuple[int, ...] = (4, 16)
) -> SlidingCheck:
    """Slide one cell from ``v0`` in 13 directions between 0 and 90°, for each D size.

    With D's 4 directions (§5), the friction impulses lie in a square, so the object stops at
    v₀²/(2μg) when sliding along an axis and √2 further along a diagonal; more directions
    round the polygon towards Coulomb's circle.
    """
    cell = rectangle(1, 1, 0.02, 0.1, mu, name="cell")
    angles = np.linspace(0.0, math.pi / 2, 13)
    velocity = torch.tensor([[0.0, v0 * math.cos(a), v0 * math.sin(a)] for a in angles])
    duration = dt * math.ceil(math.sqrt(2) * v0 / (mu * GRAVITY * dt) + 10)
    distances = {}
    for n_dirs in dirs:
        traj = simulate(
            cell, None, dt=dt, duration=duration, initial_velocity=velocity,
            friction_dirs=n_dirs, progress=False,
        )  # fmt: skip
        distances[n_dirs] = (traj.final[:, 0] - traj.positions[:, 0, 0]).norm(dim=-1).numpy()
    return SlidingCheck(v0=v0, mu=mu, dt=dt, angles=angles, distances=distances)


@dataclass(frozen=True)
class PushTurns:
    """A centred and an offset push of a uniform box: paths and yaw over time."""

    box: CellObject
    times: np.ndarray
    positions: np.ndarray  # (2, S, k, 2): centred, offset
    yaw: np.ndarray  # (2, S) rad


def push_turns(offset: float = 0.04, duration: float = 1.0) -> PushTurns:
    """Push a 4 × 6 box of 2 cm cells at the middle of its long side and ``offset`` m aside."""
    box = rectangle(4, 6, 0.02, 0.01, 0.4, name="box")
    bottom = float(box.centres[:, 1].min()) - box.cell_side / 2
    pushes = [
        Push((0.0, bottom), (0.0, 1.0), duration=duration),
        Push((offset, bottom), (0.0, 1.0), duration=duration),
    ]
    times = sample_times(duration)
    traj = simulate(box, pushes, sample_times=times)
    positions = traj.positions.numpy()
    span = positions[..., -1, :] - positions[..., 0, :]
    start = (box.centres[-1] - box.centres[0]).numpy()
    yaw = np.arctan2(span[..., 1], span[..., 0]) - math.atan2(start[1], start[0])
    return PushTurns(box=box, times=times, positions=positions, yaw=yaw)


def formulation_gap(obj: CellObject, pushes: list[Push]) -> dict[str, float]:
    """Largest position difference between the LCP and the rigid formulation, and how rigid
    the LCP keeps the object (the largest change of any cell's distance to the first cell)."""
    times = sample_times(pushes[0].duration)
    lcp = simulate(obj, pushes, "lcp", sample_times=times).positions
    rigid = simulate(obj, pushes, "rigid", sample_times=times).positions
    spread = (lcp - lcp[..., :1, :]).norm(dim=-1)
    return {
        "max_difference": float((lcp - rigid).abs().max()),
        "max_stretch": float((spread - spread[:, :1]).abs().max()),
        "max_travel": float((rigid[:, -1] - rigid[:, 0]).norm(dim=-1).mean(-1).max()),
    }


@dataclass(frozen=True)
class BulletGap:
    """Cell-position error (m) of the engine against pybullet, per push and sample time."""

    name: str
    cells: int
    times: np.ndarray
    errors: dict[int, np.ndarray]  # friction directions -> (pushes, S)
    travel: np.ndarray  # (pushes,) mean cell travel in pybullet (m)


def _bullet_gap(name: str, n_pushes: int, duration: float, seed: int, dirs: tuple[int, ...]):
    torch.set_num_threads(1)
    obj = load_object(name)
    pushes = random_pushes(obj, n_pushes, seed=seed, duration=duration)
    times = sample_times(duration)
    reference = simulate_bullet(obj, pushes, times).positions
    errors = {
        n_dirs: cell_position_error(
            simulate(obj, pushes, sample_times=times, friction_dirs=n_dirs).positions, reference
        ).numpy()
        for n_dirs in dirs
    }
    travel = (reference[:, -1] - reference[:, 0]).norm(dim=-1).mean(-1).numpy()
    return BulletGap(name=name, cells=len(obj), times=times, errors=errors, travel=travel)


def bullet_gap(
    names: tuple[str, ...],
    n_pushes: int,
    duration: float,
    seed: int,
    dirs: tuple[int, ...] = (4, 16),
    n_jobs: int = 1,
) -> list[BulletGap]:
    """Push each object ``n_pushes`` times at random in pybullet and in the rigid engine
    (true parameters) and measure the cell-position error over each push; objects run in
    parallel through ``joblib.Parallel(n_jobs)``."""
    if n_pushes < 1:
        raise ValueError(f"n_pushes must be >= 1, got {n_pushes!r}")
    jobs = (delayed(_bullet_gap)(name, n_pushes, duration, seed, dirs) for name in names)
    return list(Parallel(n_jobs=n_jobs)(jobs))
