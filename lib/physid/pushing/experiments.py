"""The experiments of the Part I chapter "An LCP engine for pushed cell objects".

Sizes per scale are in :data:`SIZES`. Each driver returns plain arrays for the figures and the
claims: the analytic checks (:func:`sliding_check`, :func:`push_turns`), the agreement of the
two formulations (:func:`formulation_gap`) and the gap to pybullet with the true parameters
(:func:`bullet_gap`, run over objects with ``joblib.Parallel``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from joblib import Parallel, delayed

from physid.constants import GRAVITY
from physid.pushing.bullet import simulate_bullet
from physid.pushing.objects import OBJECT_NAMES, CellObject, check_object, load_object, rectangle
from physid.pushing.pushes import Push, random_pushes
from physid.pushing.simulate import cell_position_error, simulate
from physid.scales import select
from physid.threads import one_torch_thread
from physid.validate import check_choice, check_count, check_number, check_positive, check_seed

#: Sample period (s) shared by the engines' 0.01 s grid and Bullet's 1/240 s grid.
SAMPLE_PERIOD = 0.05

#: The accuracy the paper reports after identification ("< 1.5 cm"), m: the bar the engine must
#: clear against pybullet with the true parameters.
PAPER_ACCURACY = 0.015

#: Speed targets of the rigid formulation, checked by ``benchmarks/pushing.py``: at
#: ``BENCH_CELLS`` cells (the hammer's size), its forward simulation of a push is at least
#: ``TARGET_SPEEDUP`` times faster than pybullet's, and its gradient with respect to every mass
#: and friction costs at most ``TARGET_GRADIENT_COST`` times its own forward simulation.
BENCH_CELLS = 88
TARGET_SPEEDUP = 5.0
TARGET_GRADIENT_COST = 3.0


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
    duration = check_positive("duration", duration)
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

    def ratios(self, n_dirs: int) -> np.ndarray:
        """Stopping distance over v₀²/(2μg), per direction, with D of ``n_dirs`` directions."""
        return self.distances[n_dirs] / self.coulomb

    def worst_deviation(self, n_dirs: int) -> float:
        """The largest ``|distance / (v₀²/(2μg)) − 1|`` over the directions."""
        return float(np.abs(self.ratios(n_dirs) - 1.0).max())


def sliding_check(
    v0: float = 1.0,
    mu: float = 0.5,
    dt: float = 1e-3,
    dirs: Sequence[int] = (4, 16),
    n_angles: int = 9,
) -> SlidingCheck:
    """Slide one cell from ``v0`` (m/s) in ``n_angles`` evenly spaced directions from 0 to 45°,
    for each size of D in ``dirs``.

    Both polygons (4 and 16 directions) are symmetric about the axes and the diagonals, so 0 to
    45° covers every direction; the default 9 angles (steps of 5.625°) include the middle of a
    sector of either polygon. With D's 4 directions (§5), the friction impulses lie in a square,
    so the cell stops at v₀²/(2μg) when sliding along an axis and √2 as far along a diagonal;
    n directions round the polygon towards Coulomb's circle (worst 1/cos(π/n) as far).
    """
    v0, mu, dt = check_positive("v0", v0), check_positive("mu", mu), check_positive("dt", dt)
    dirs = tuple(check_count("dirs", n, minimum=3) for n in dirs)
    n_angles = check_count("n_angles", n_angles, minimum=2)
    cell = rectangle(1, 1, 0.02, 0.1, mu, name="cell")
    angles = np.linspace(0.0, math.pi / 4, n_angles)
    velocity = torch.tensor(
        [[0.0, v0 * math.cos(a), v0 * math.sin(a)] for a in angles], dtype=torch.float64
    )
    duration = dt * math.ceil(math.sqrt(2) * v0 / (mu * GRAVITY * dt) + 10)
    distances = {}
    for n_dirs in dirs:
        traj = simulate(
            cell, None, dt=dt, duration=duration, initial_velocity=velocity, friction_dirs=n_dirs
        )
        distances[n_dirs] = (traj.final[:, 0] - traj.positions[:, 0, 0]).norm(dim=-1).numpy()
    return SlidingCheck(v0=v0, mu=mu, dt=dt, angles=angles, distances=distances)


#: The uniform box of :func:`push_turns`: rows × columns of cells, cell side (m), mass per cell
#: (kg) and friction.
TURN_BOX = {"rows": 4, "cols": 6, "cell_side": 0.02, "mass": 0.01, "friction": 0.4}
#: How far (m) from the middle of the box's long side :func:`push_turns` pushes by default.
TURN_OFFSET = 0.04


@dataclass(frozen=True)
class PushTurns:
    """A centred and an offset push of a uniform box: paths and yaw over time."""

    box: CellObject
    offset: float
    times: np.ndarray
    positions: np.ndarray  # (2, S, k, 2): centred, offset
    yaw: np.ndarray  # (2, S) rad


def push_turns(offset: float = TURN_OFFSET, duration: float = 1.0) -> PushTurns:
    """Push the :data:`TURN_BOX` at the middle of its long side and ``offset`` m aside."""
    box = rectangle(**TURN_BOX, name="box")
    half_width = float(box.centres[:, 0].max()) + box.cell_side / 2
    offset = check_number("offset", offset, low=0.0, high=half_width, high_open=True)
    duration = check_positive("duration", duration)
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
    return PushTurns(box=box, offset=offset, times=times, positions=positions, yaw=yaw)


def formulation_gap(obj: CellObject, pushes: Sequence[Push]) -> dict[str, float]:
    """Largest position difference between the LCP and the rigid formulation, and how rigid
    the LCP keeps the object (the largest change of any cell's distance to the first cell)."""
    check_object(obj)
    if not pushes:
        raise ValueError("pushes must hold at least one Push")
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
    with one_torch_thread():
        return _bullet_gap_one_thread(name, n_pushes, duration, seed, dirs)


def _bullet_gap_one_thread(name, n_pushes, duration, seed, dirs) -> BulletGap:
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
    parallel through ``joblib.Parallel(n_jobs)``. The pushes of every object are drawn with
    ``seed``."""
    names = tuple(check_choice("names", name, OBJECT_NAMES) for name in names)
    if not names:
        raise ValueError("names must hold at least one object name")
    n_pushes = check_count("n_pushes", n_pushes)
    duration = check_positive("duration", duration)
    seed = check_seed("seed", seed)
    dirs = tuple(check_count("dirs", n, minimum=3) for n in dirs)
    n_jobs = check_count("n_jobs", n_jobs)
    jobs = (delayed(_bullet_gap)(name, n_pushes, duration, seed, dirs) for name in names)
    return list(Parallel(n_jobs=n_jobs)(jobs))
