"""The experiments of the Part I chapter "An LCP engine for pushed cell objects".

Sizes per scale are in :data:`SIZES`. Each driver returns plain arrays for the figures and the
claims: the analytic checks (:func:`sliding_check`, :func:`push_turns`), the agreement of the
two formulations (:func:`formulation_gap`) and the gap to pybullet with the true parameters,
per friction model of :data:`FRICTION_MODELS` (:func:`bullet_gap`, run over objects with
``joblib.Parallel``), with the finger's contact events (slid, lost contact, changed side) in
both simulators and the modes the rigid formulation solved its steps in.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from joblib import Parallel, delayed

from physid.core.constants import GRAVITY
from physid.core.scales import Sizes, SizeTable
from physid.core.threads import one_torch_thread
from physid.core.validate import check_choice, check_count, check_number, check_positive, check_seed
from physid.pushing.bullet import simulate_bullet
from physid.pushing.finger import MODE_NAMES, ContactEvents, ContactRecord, contact_events
from physid.pushing.objects import OBJECT_NAMES, CellObject, check_object, load_object, rectangle
from physid.pushing.pushes import Push, random_pushes
from physid.pushing.simulate import cell_position_error, simulate

#: Sample period (s) shared by the engines' 0.01 s grid and Bullet's 1/240 s grid.
SAMPLE_PERIOD = 0.05

#: The accuracy the paper reports after identification ("< 1.5 cm"), m: the bar the engine must
#: clear against pybullet with the true parameters.
PAPER_ACCURACY = 0.015

#: Speed targets of the rigid formulation with the finger, checked by ``benchmarks/pushing.py``
#: (one thread; pybullet timed stepping a world built beforehand): at ``BENCH_CELLS`` cells (the
#: hammer's size) its forward simulation of a 1 s push is at least ``TARGET_SPEEDUP`` times
#: faster than pybullet's, at every benchmark size at least ``TARGET_SIZE_SPEEDUP`` times, its
#: gradient with respect to every mass and friction costs at most ``TARGET_GRADIENT_COST`` times
#: its own forward simulation, a batch of pushes in one call is at least
#: ``TARGET_BATCH_SPEEDUP`` times faster than the same pushes in pybullet, and a batch that
#: slides costs at most ``TARGET_SLIDE_COST`` times one that only sticks.
BENCH_CELLS = 88
TARGET_SPEEDUP = 50.0
TARGET_SIZE_SPEEDUP = 20.0
TARGET_GRADIENT_COST = 3.0
TARGET_BATCH_SPEEDUP = 200.0
TARGET_SLIDE_COST = 2.0

#: Directions of the polygon that stands in for isotropic (Coulomb) friction: its worst
#: direction is 1/cos(π/64) ≈ 1.0012 times Coulomb's disc. The exact disc would need a
#: second-order-cone step, which the rigid formulation's line solver does not cover.
ISOTROPIC_DIRS = 64
#: The friction models compared against pybullet: name -> number of directions of D. The
#: paper's D (4 directions) is the faithful model.
FRICTION_MODELS = {
    "4 directions": 4,
    "16 directions": 16,
    f"isotropic ({ISOTROPIC_DIRS} directions)": ISOTROPIC_DIRS,
}


@dataclass(frozen=True)
class PushingSizes(Sizes):
    """Run sizes of the chapter: random pushes per object and push durations (s) against
    pybullet, pushes and duration of the comparison of the two formulations, and the joblib
    workers of :func:`bullet_gap` (one object each)."""

    pushes_per_object: int
    duration: float
    lcp_pushes: int
    lcp_duration: float
    n_jobs: int = 2


#: Run sizes per scale.
SIZES = SizeTable(
    "pushing chapter",
    quick=PushingSizes(pushes_per_object=2, duration=0.5, lcp_pushes=1, lcp_duration=0.2),
    default=PushingSizes(pushes_per_object=8, duration=1.0, lcp_pushes=2, lcp_duration=1.0),
    paper=PushingSizes(pushes_per_object=16, duration=1.0, lcp_pushes=4, lcp_duration=1.0),
)


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


def _least_impulse(record: ContactRecord) -> float:
    """The smallest normal impulse (N·s) of the finger over every step of every push."""
    return float(record.normal_impulse.min())


def mode_counts(record: ContactRecord) -> np.ndarray:
    """How many steps (over every push) the rigid formulation solved in each mode, in the
    order of :data:`~physid.pushing.finger.MODE_NAMES` (the last, ``coupled``, is the
    interior-point fallback)."""
    if record.mode is None:
        raise ValueError("record must come from an engine (its mode is None)")
    modes = record.mode.reshape(-1).cpu().numpy()
    return np.bincount(modes, minlength=len(MODE_NAMES))


#: The flags of :class:`~physid.pushing.finger.ContactEvents` that break §6's assumptions,
#: with the words the chapter uses for them.
EVENT_NAMES = {"slid": "slid", "lost_contact": "lost contact", "changed_side": "changed side"}


def event_counts(events: ContactEvents) -> dict[str, int]:
    """How many pushes touched, slid, lost contact, changed side and kept §6's assumptions
    (touched and none of the three)."""
    counts = {"touched": int(events.touched.sum())}
    counts |= {label: int(getattr(events, flag).sum()) for flag, label in EVENT_NAMES.items()}
    counts["assumptions hold"] = int(events.assumptions_hold.sum())
    return counts


def events_agree(a: ContactEvents, b: ContactEvents) -> dict[str, int]:
    """Per event of :data:`EVENT_NAMES`: on how many pushes ``a`` and ``b`` agree (both or
    neither)."""
    if a.slid.shape != b.slid.shape:
        raise ValueError(
            f"a and b must describe the same pushes, got {a.slid.shape} and {b.slid.shape}"
        )
    return {
        label: int((getattr(a, flag) == getattr(b, flag)).sum())
        for flag, label in EVENT_NAMES.items()
    }


@dataclass(frozen=True)
class FormulationGap:
    """The LCP and the rigid formulation on the same pushes: their largest position
    difference (m), how rigid the LCP keeps the object (largest change of any cell's distance
    to the first cell, m), the largest mean cell travel (m), each formulation's smallest
    normal impulse at the finger (N·s) and contact events, and the rigid formulation's mode
    counts."""

    max_difference: float
    max_stretch: float
    max_travel: float
    min_normal_impulse: dict[str, float]  # "lcp", "rigid"
    events: dict[str, ContactEvents]  # "lcp", "rigid"
    modes: np.ndarray  # (len(MODE_NAMES),) steps of the rigid formulation

    @property
    def events_agree(self) -> dict[str, int]:
        """Per event, on how many pushes the two formulations agree."""
        return events_agree(self.events["lcp"], self.events["rigid"])


def formulation_gap(obj: CellObject, pushes: Sequence[Push]) -> FormulationGap:
    """Push ``obj`` with ``pushes`` in both formulations (4 friction directions) and compare
    them (:class:`FormulationGap`)."""
    check_object(obj)
    if not pushes:
        raise ValueError("pushes must hold at least one Push")
    times = sample_times(pushes[0].duration)
    lcp = simulate(obj, pushes, "lcp", sample_times=times)
    rigid = simulate(obj, pushes, "rigid", sample_times=times)
    spread = (lcp.positions - lcp.positions[..., :1, :]).norm(dim=-1)
    return FormulationGap(
        max_difference=float((lcp.positions - rigid.positions).abs().max()),
        max_stretch=float((spread - spread[:, :1]).abs().max()),
        max_travel=float(
            (rigid.positions[:, -1] - rigid.positions[:, 0]).norm(dim=-1).mean(-1).max()
        ),
        min_normal_impulse={
            "lcp": _least_impulse(lcp.contact), "rigid": _least_impulse(rigid.contact)
        },
        events={"lcp": contact_events(lcp.contact, obj),
                "rigid": contact_events(rigid.contact, obj)},
        modes=mode_counts(rigid.contact),
    )


@dataclass(frozen=True)
class BulletGap:
    """One object's pushes in pybullet and in the rigid engine (true parameters), per friction
    model of :data:`FRICTION_MODELS`: the cell-position error (m) per push and sample time, the
    engine's contact events, mode counts and smallest normal impulse at the finger, and
    pybullet's contact events; ``seconds`` is the wall time of each run (``"pybullet"`` and
    each model)."""

    name: str
    cells: int
    times: np.ndarray
    errors: dict[str, np.ndarray]  # model -> (pushes, S)
    travel: np.ndarray  # (pushes,) mean cell travel in pybullet (m)
    events: dict[str, ContactEvents]  # model -> the engine's events
    bullet_events: ContactEvents
    modes: dict[str, np.ndarray]  # model -> (len(MODE_NAMES),) step counts
    min_normal_impulse: dict[str, float]  # model -> N·s
    seconds: dict[str, float]

    def final(self, model: str) -> np.ndarray:
        """Final cell-position error (m) of each push with ``model``."""
        return self.errors[model][:, -1]


def _bullet_gap(name: str, n_pushes: int, duration: float, seed: int, models: tuple[str, ...]):
    with one_torch_thread():
        return _bullet_gap_one_thread(name, n_pushes, duration, seed, models)


def _bullet_gap_one_thread(name, n_pushes, duration, seed, models) -> BulletGap:
    obj = load_object(name)
    pushes = random_pushes(obj, n_pushes, seed=seed, duration=duration)
    times = sample_times(duration)
    clock = time.perf_counter()
    reference = simulate_bullet(obj, pushes, times)
    seconds = {"pybullet": time.perf_counter() - clock}
    errors, events, modes, least = {}, {}, {}, {}
    for model in models:
        clock = time.perf_counter()
        traj = simulate(obj, pushes, sample_times=times, friction_dirs=FRICTION_MODELS[model])
        seconds[model] = time.perf_counter() - clock
        errors[model] = cell_position_error(traj.positions, reference.positions).numpy()
        events[model] = contact_events(traj.contact, obj)
        modes[model] = mode_counts(traj.contact)
        least[model] = _least_impulse(traj.contact)
    positions = reference.positions
    travel = (positions[:, -1] - positions[:, 0]).norm(dim=-1).mean(-1).numpy()
    return BulletGap(
        name=name, cells=len(obj), times=times, errors=errors, travel=travel, events=events,
        bullet_events=contact_events(reference.contact, obj), modes=modes,
        min_normal_impulse=least, seconds=seconds,
    )


def bullet_gap(
    names: tuple[str, ...],
    n_pushes: int,
    duration: float,
    seed: int,
    models: Sequence[str] = tuple(FRICTION_MODELS),
    n_jobs: int = 1,
) -> list[BulletGap]:
    """Push each object ``n_pushes`` times at random (reachable pushes,
    :func:`~physid.pushing.pushes.random_pushes` with ``seed``) in pybullet and in the rigid
    engine with each friction model of ``models`` (names of :data:`FRICTION_MODELS`), true
    parameters, and measure the cell-position errors and the finger's contact events
    (:class:`BulletGap`); objects run in parallel through ``joblib.Parallel(n_jobs)``."""
    if isinstance(names, str):
        raise TypeError(f"names must be a sequence of object names, got {names!r}")
    names = tuple(check_choice("names", name, OBJECT_NAMES) for name in names)
    if not names:
        raise ValueError("names must hold at least one object name")
    n_pushes = check_count("n_pushes", n_pushes)
    duration = check_positive("duration", duration)
    seed = check_seed("seed", seed)
    if isinstance(models, str):
        raise TypeError(f"models must be a sequence of friction model names, got {models!r}")
    models = tuple(check_choice("models", model, list(FRICTION_MODELS)) for model in models)
    if not models:
        raise ValueError("models must hold at least one friction model")
    n_jobs = check_count("n_jobs", n_jobs)
    jobs = (delayed(_bullet_gap)(name, n_pushes, duration, seed, models) for name in names)
    return list(Parallel(n_jobs=n_jobs)(jobs))
