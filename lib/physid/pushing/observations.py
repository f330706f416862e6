"""What the identification of §6–7 learns from: ground-truth maps, and pushes observed in
pybullet, the book's "real world".

* :func:`draw_truth`: a ground-truth mass and friction map of an object, drawn per region from
  the stated distribution :data:`MASS_FACTOR` × :data:`FRICTION_FACTOR` around the object's
  drawn materials (heavy head, light handle, floating shaft, …), so that each of the ten
  experiments of §7.2 has its own map with the same features;
* :func:`fit_poses`: the rigid pose ``[yaw, x, y]`` that best places the object's cells on
  observed cell positions (least squares, closed form);
* :func:`observe`: a batch of pushes run in pybullet and read as :class:`Observations`: the cell
  positions, the object's pose and its twist at every observation time, what a restart of
  Eq. (1) needs;
* :func:`make_experiment`: one experiment of §7.2: a ground truth, training and test pushes,
  observed; the pybullet runs are cached on disk (:func:`physid.core.sweeps.cached`), keyed by the
  object, the map, the pushes, the settings, the library's code and the package versions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor

from physid.core.seeds import name_stream
from physid.core.sweeps import cached
from physid.core.validate import check_choice, check_count, check_positive, check_seed, check_tensor
from physid.pushing.bullet import BULLET_DT, SETUPS, simulate_bullet
from physid.pushing.finger import FINGER, SLIDE_TOLERANCE, _contact_events, contact_events
from physid.pushing.objects import OBJECT_NAMES, CellObject, check_object, load_object
from physid.pushing.pushes import Push, random_pushes
from physid.pushing.simulate import simulate

__all__ = [
    "FRICTION_FACTOR",
    "MASS_FACTOR",
    "OBSERVATION_PERIOD",
    "WORLDS",
    "Experiment",
    "Observations",
    "draw_truth",
    "fit_poses",
    "make_experiment",
    "observe",
]

#: Each region's mass per cell is its drawn mass times a log-uniform factor in this range.
MASS_FACTOR = (0.5, 2.0)
#: Each region's friction coefficient is its drawn one times a uniform factor in this range
#: (a region drawn without friction, the wrench's floating shaft, keeps none).
FRICTION_FACTOR = (0.75, 1.25)
#: Seconds between observations: a common multiple of the engines' 0.01 s and pybullet's
#: 1/240 s steps; one observation interval is one "step" of Eq. (1).
OBSERVATION_PERIOD = 0.05


def draw_truth(obj: CellObject, seed: int) -> tuple[Tensor, Tensor]:
    """A ground-truth map ``(masses, frictions)``, each (k,), of ``obj`` drawn with ``seed``.

    Cells of one region (one material of the drawing) share their values: the region's mass
    per cell times a factor log-uniform in :data:`MASS_FACTOR` and its friction times a factor
    uniform in :data:`FRICTION_FACTOR`, independently per region.
    """
    check_object(obj)
    rng = np.random.default_rng(check_seed("seed", seed))
    masses = obj.masses.clone()
    frictions = obj.frictions.clone()
    names = obj.regions or ("object",) * len(obj)
    for region in dict.fromkeys(names):
        cells = torch.tensor([i for i, n in enumerate(names) if n == region])
        low, high = np.log(MASS_FACTOR[0]), np.log(MASS_FACTOR[1])
        masses[cells] = masses[cells] * float(np.exp(rng.uniform(low, high)))
        frictions[cells] = frictions[cells] * float(rng.uniform(*FRICTION_FACTOR))
    return masses, frictions


def fit_poses(obj: CellObject, positions: Tensor) -> Tensor:
    """Poses ``[yaw, x, y]`` (..., 3) of the object frame that place ``obj``'s cell centres
    closest (least squares) to ``positions`` (..., k, 2): the 2-D Procrustes fit, exact for a
    rigid motion."""
    check_object(obj)
    k = len(obj)
    check_tensor("positions", positions, dtype=torch.float64)
    if positions.dim() < 2 or tuple(positions.shape[-2:]) != (k, 2):
        raise ValueError(f"positions must have shape (..., {k}, 2), got {tuple(positions.shape)}")
    return _fit_poses(obj, positions)


def _fit_poses(obj: CellObject, positions: Tensor) -> Tensor:
    """:func:`fit_poses` of an ``obj`` already checked and float64 ``positions`` (..., k, 2)
    of its cells (:func:`observe` builds them)."""
    centres = obj.centres.to(positions)  # centred on their centroid
    mean = positions.mean(-2)
    arms = positions - mean.unsqueeze(-2)
    cross = (centres[:, 0] * arms[..., 1] - centres[:, 1] * arms[..., 0]).sum(-1)
    dot = (centres * arms).sum((-1, -2))
    yaw = torch.atan2(cross, dot)
    return torch.cat([yaw.unsqueeze(-1), mean], -1)


@dataclass(frozen=True)
class Observations:
    """Pushes of one object observed every :data:`OBSERVATION_PERIOD` seconds.

    ``pushes`` (B); ``times`` (S,) s from the start of the pushes; ``positions`` (B, S, k, 2)
    cell centres (m); ``poses`` (B, S, 3) the object frame's ``[yaw, x, y]``; ``twists``
    (B, S, 3) ``[ω, vx, vy]`` at the object-frame origin, backward differences over one
    pybullet step (zero at the start, where the object rests); ``slid``, ``lost_contact`` and
    ``changed_side`` (B,) whether the finger slid along the object, lost contact after
    touching it, or moved to another side of it
    (:func:`~physid.pushing.finger.contact_events`); ``assumptions_hold`` (B,) whether §6's
    assumptions held on the push (it touched, and never slid, let go or changed side).
    """

    obj: CellObject
    pushes: tuple[Push, ...]
    times: Tensor
    positions: Tensor
    poses: Tensor
    twists: Tensor
    slid: Tensor
    lost_contact: Tensor
    changed_side: Tensor
    assumptions_hold: Tensor

    def __post_init__(self) -> None:
        check_object(self.obj)
        pushes = tuple(self.pushes)
        if not pushes:
            raise ValueError("pushes must hold at least one push (the training set is empty)")
        if not all(isinstance(p, Push) for p in pushes):
            raise TypeError(f"pushes must hold only Push objects, got {pushes!r}")
        object.__setattr__(self, "pushes", pushes)
        b, k = len(pushes), len(self.obj)
        check_tensor("times", self.times, shape=(None,), dtype=torch.float64)
        s = len(self.times)
        if s < 2:
            raise ValueError(f"times must hold at least two observations, got {s}")
        steps = self.times / OBSERVATION_PERIOD
        if bool((steps - torch.arange(s, dtype=torch.float64)).abs().max() > 1e-9):
            raise ValueError(f"times must be 0, {OBSERVATION_PERIOD}, {2 * OBSERVATION_PERIOD}, "
                             f"… s, got {self.times.tolist()}")
        check_tensor("positions", self.positions, shape=(b, s, k, 2), dtype=torch.float64)
        check_tensor("poses", self.poses, shape=(b, s, 3), dtype=torch.float64)
        check_tensor("twists", self.twists, shape=(b, s, 3), dtype=torch.float64)
        for name in ("slid", "lost_contact", "changed_side", "assumptions_hold"):
            flags = getattr(self, name)
            if not (isinstance(flags, Tensor) and flags.dtype == torch.bool
                    and tuple(flags.shape) == (b,)):
                raise ValueError(f"{name} must be a bool tensor of shape ({b},), got {flags!r}")

    def __len__(self) -> int:
        return len(self.pushes)

    def subset(self, indices: Sequence[int]) -> Observations:
        """The observations of the pushes ``indices`` (ValueError naming ``indices``)."""
        idx = [int(i) for i in indices]
        if not idx or any(not 0 <= i < len(self) for i in idx):
            raise ValueError(f"indices must be a non-empty list of push indices in "
                             f"[0, {len(self)}), got {list(indices)!r}")
        index = torch.tensor(idx)
        return replace(self, pushes=tuple(self.pushes[i] for i in idx),
                       positions=self.positions[index], poses=self.poses[index],
                       twists=self.twists[index], slid=self.slid[index],
                       lost_contact=self.lost_contact[index],
                       changed_side=self.changed_side[index],
                       assumptions_hold=self.assumptions_hold[index])


@cached
def _bullet_run(name: str, cell_side: float, grid: np.ndarray, regions: tuple[str, ...],
                pushes: tuple[Push, ...], masses: np.ndarray, frictions: np.ndarray,
                times: np.ndarray, setup: str = "book") -> tuple[np.ndarray, np.ndarray]:
    """pybullet cell positions (B, S, k, 2) at ``times`` in the pybullet ``setup``
    (:data:`physid.pushing.bullet.SETUPS`) and, per push, whether the finger slid on the
    object, lost contact after touching, changed side, and whether §6's assumptions held
    (B, 4). Cached on
    disk: its arguments are plain data (joblib hashes torch tensors differently on every
    call), the object is rebuilt from them."""
    obj = CellObject(name, cell_side, grid, torch.as_tensor(masses), torch.as_tensor(frictions),
                     regions)
    trajectory = simulate_bullet(obj, list(pushes), times, setup=setup)
    events = contact_events(trajectory.contact, obj, FINGER)
    flags = np.stack([events.slid, events.lost_contact, events.changed_side,
                      events.assumptions_hold], 1)
    return trajectory.positions.numpy(), flags


#: The worlds :func:`observe` can run pushes in, with their time steps (s).
WORLDS = {"bullet": BULLET_DT, "rigid": 0.01}


def _engine_run(obj: CellObject, pushes: tuple[Push, ...], masses: Tensor, frictions: Tensor,
                times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_bullet_run`'s results from formulation 2 instead of pybullet."""
    trajectory = simulate(obj, list(pushes), masses=masses, frictions=frictions,
                          sample_times=times)
    events = _contact_events(trajectory.contact, obj, FINGER, SLIDE_TOLERANCE)
    flags = np.stack([events.slid, events.lost_contact, events.changed_side,
                      events.assumptions_hold], 1)
    return trajectory.positions.numpy(), flags


def observe(obj: CellObject, pushes: Sequence[Push], masses: Tensor, frictions: Tensor,
            world: str = "bullet", setup: str = "book") -> Observations:
    """Run ``pushes`` of ``obj`` with the ground truth ``masses``, ``frictions`` (k,) in
    ``world`` and observe them every :data:`OBSERVATION_PERIOD` s, with one more sample a time
    step before each time for the twist: ``"bullet"`` is pybullet
    (:func:`physid.pushing.bullet.simulate_bullet` in the pybullet ``setup``, a name in
    :data:`physid.pushing.bullet.SETUPS`; cached on disk by the run's full configuration, the
    library's code and the package versions, :func:`physid.core.sweeps.cached`), ``"rigid"``
    is formulation 2 itself (no model gap, and no link limit: for timings; ``setup`` must then
    be ``"book"``).
    """
    check_object(obj)
    step = WORLDS[check_choice("world", world, sorted(WORLDS))]
    setup = SETUPS.check(setup, "setup")
    if world != "bullet" and setup != "book":
        raise ValueError(f"setup must be 'book' for world {world!r}, got {setup!r}")
    pushes = tuple(pushes)
    if not pushes or not all(isinstance(p, Push) for p in pushes):
        raise ValueError(f"pushes must be a non-empty sequence of Push, got {pushes!r}")
    durations = {p.duration for p in pushes}
    if len(durations) != 1:
        raise ValueError(f"pushes must share one duration, got {sorted(durations)}")
    duration = durations.pop()
    n = round(duration / OBSERVATION_PERIOD)
    if n < 1 or abs(n * OBSERVATION_PERIOD - duration) > 1e-9:
        raise ValueError(f"pushes must last a multiple of {OBSERVATION_PERIOD} s, got "
                         f"{duration!r}")
    k = len(obj)
    masses = check_tensor("masses", masses, shape=(k,), dtype=torch.float64, positive=True)
    frictions = check_tensor("frictions", frictions, shape=(k,), dtype=torch.float64,
                             nonnegative=True)
    ticks = round(OBSERVATION_PERIOD / step)  # time steps per observation
    steps = np.unique(np.concatenate([ticks * np.arange(n + 1), ticks * np.arange(1, n + 1) - 1]))
    if world == "bullet":
        raw, flags = _bullet_run(obj.name, obj.cell_side, obj.grid, obj.regions, pushes,
                                 masses.numpy(), frictions.numpy(), steps * step, setup)
    else:
        raw, flags = _engine_run(obj, pushes, masses, frictions, steps * step)
    raw = torch.as_tensor(raw)
    at = torch.as_tensor(np.searchsorted(steps, ticks * np.arange(n + 1)))
    positions = raw[:, at]
    poses = _fit_poses(obj, positions)
    before = _fit_poses(obj, raw[:, at[1:] - 1])
    turn = torch.remainder(poses[:, 1:, :1] - before[..., :1] + np.pi, 2 * np.pi) - np.pi
    rates = torch.cat([turn, poses[:, 1:, 1:] - before[..., 1:]], -1) / step
    twists = torch.cat([torch.zeros_like(rates[:, :1]), rates], 1)
    times = torch.arange(n + 1, dtype=torch.float64) * OBSERVATION_PERIOD
    return Observations(obj, pushes, times, positions, poses, twists,
                        *(torch.as_tensor(flags[:, i]) for i in range(4)))


@dataclass(frozen=True)
class Experiment:
    """One experiment of §7.2: ``obj`` carries the ground-truth map (``obj.masses``,
    ``obj.frictions``); ``train`` and ``test`` are its observed pushes."""

    name: str
    index: int
    obj: CellObject
    train: Observations
    test: Observations


def make_experiment(name: str, index: int, n_train: int, n_test: int, duration: float,
                    seed: int = 0) -> Experiment:
    """Experiment ``index`` of object ``name``: its ground truth (:func:`draw_truth`) and
    ``n_train`` + ``n_test`` random reachable pushes of ``duration`` s
    (:func:`~physid.pushing.pushes.random_pushes`), all drawn from ``seed``, ``index`` and the
    object, and observed in pybullet (:func:`observe`)."""
    if name not in OBJECT_NAMES:
        raise ValueError(f"name must be one of {', '.join(OBJECT_NAMES)}; got {name!r}")
    index = check_count("index", index, minimum=0)
    n_train = check_count("n_train", n_train)
    n_test = check_count("n_test", n_test)
    duration = check_positive("duration", duration)
    seed = check_seed("seed", seed)
    base = load_object(name)
    stream = seed * 1_000_003 + 1_009 * index + name_stream(name) % 1_009
    masses, frictions = draw_truth(base, stream)
    obj = replace(base, masses=masses, frictions=frictions)
    pushes = random_pushes(obj, n_train + n_test, seed=stream, duration=duration)
    observed = observe(obj, pushes, masses, frictions)
    return Experiment(name, index, obj, observed.subset(range(n_train)),
                      observed.subset(range(n_train, n_train + n_test)))
