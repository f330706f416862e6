"""Training data as in the paper: short chunks of simulated trajectories, half with a collision.

For each task, ``n_train + n_val + n_test`` trajectories of the task's length (100 steps; 20
for the rope) are simulated from collision-free initial states with the true parameters, by the
contact model (CM, the default) or by the LCP model with Newton's restitution (the robustness
study). From every trajectory one chunk of ``chunk_len`` consecutive states is cut
(:func:`select_chunks`): its first state is collision-free, and with probability
``p_collision`` it is drawn among the chunks that contain a collision (an impulse between two of
its states), otherwise among those that do not, falling back to the other kind when a trajectory
has none of the requested one. The paper's sizes are 800/100/100 and 5-state chunks; about half
the chunks contain a collision. Noisy variants add Gaussian noise to the observed states
(:func:`add_noise`). Generated data go to a build or temporary folder (:func:`save`), never to
the repository.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from physid.contact.integrate import ContactEvent, Rollout, simulate
from physid.contact.lcp import LCPModel
from physid.contact.model import ContactModel, SolverLog
from physid.contact.tasks import Task, make_task
from physid.core.validate import (
    check_choice,
    check_count,
    check_in_range,
    check_nonnegative,
    check_seed,
)

#: The contact models that can generate data, by name: the book's contact model, the same with
#: the authors' projection of the penetration target
#: (:func:`~physid.contact.model.authors_target`, so that data of the constrained tasks are
#: those of the authors' code), and the LCP model.
DATA_MODELS: dict[str, Callable[[], ContactModel | LCPModel]] = {
    "CM": ContactModel,
    "CM-authors": lambda: ContactModel(authors_target=True),
    "LCP": LCPModel,
}


@dataclass(frozen=True)
class ChunkSet:
    """Chunks of trajectories: ``x`` and ``v`` of shape ``(n, L, N)``.

    Attributes:
        x: positions.
        v: velocities.
        collision: ``(n,)`` whether the chunk contains an impulse.
        start: ``(n,)`` index of the chunk's first state in its trajectory.
    """

    x: Tensor
    v: Tensor
    collision: Tensor
    start: Tensor

    def __len__(self) -> int:
        return self.x.shape[0]

    @property
    def collision_fraction(self) -> float:
        return float(self.collision.double().mean()) if len(self) else math.nan

    def to(self, device: torch.device | str) -> ChunkSet:
        """The chunks with their tensors on ``device``."""
        return ChunkSet(*(t.to(device) for t in (self.x, self.v, self.collision, self.start)))


@dataclass(frozen=True)
class TaskData:
    """The train/validation/test chunks of one task, and the full test trajectories.

    Attributes:
        task: the task's name.
        model: the contact model that generated the data (``"CM"`` or ``"LCP"``).
        noise: standard deviation of the observation noise added (0 for clean data).
        seed: the seed of the initial states and the chunk choice.
        train: training chunks.
        val: validation chunks.
        test: test chunks.
        test_x: ``(n_test, T + 1, N)`` full test trajectories (for long-horizon evaluation).
        test_v: their velocities.
        trajectories_with_collision: fraction of all simulated trajectories with an impulse.
        log: how the contact problems were solved.
    """

    task: str
    model: str
    noise: float
    seed: int
    train: ChunkSet
    val: ChunkSet
    test: ChunkSet
    test_x: Tensor
    test_v: Tensor
    trajectories_with_collision: float
    log: SolverLog

    def to(self, device: torch.device | str) -> TaskData:
        """The data with every tensor on ``device``."""
        return replace(
            self,
            train=self.train.to(device),
            val=self.val.to(device),
            test=self.test.to(device),
            test_x=self.test_x.to(device),
            test_v=self.test_v.to(device),
        )


def select_chunks(
    rollout: Rollout, chunk_len: int, p_collision: float, rng: np.random.Generator
) -> ChunkSet:
    """One chunk per trajectory of ``rollout`` (see the module docstring)."""
    if not isinstance(rollout, Rollout):
        raise TypeError(f"rollout must be a Rollout, got {type(rollout).__name__}")
    chunk_len = check_count("chunk_len", chunk_len, 2)
    p_collision = check_in_range("p_collision", p_collision, 0.0, 1.0)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    contact = rollout.contact.cpu().numpy()  # (B, T): impulse at the end of step t
    B, T = contact.shape
    if chunk_len > T + 1:
        raise ValueError(f"chunk_len {chunk_len} exceeds the {T + 1} states of a trajectory")
    starts = np.arange(T - chunk_len + 2)
    # A start s is valid if state s is collision-free (no impulse at the end of step s - 1).
    free_start = np.concatenate([np.ones((B, 1), bool), ~contact[:, :-1]], 1)[:, starts]
    window = np.lib.stride_tricks.sliding_window_view(contact, chunk_len - 1, axis=1)
    has_collision = window.any(-1)[:, : len(starts)]
    chosen = np.zeros(B, int)
    collided = np.zeros(B, bool)
    for b in range(B):
        want = rng.uniform() < p_collision
        pool = np.flatnonzero(free_start[b] & (has_collision[b] == want))
        if len(pool) == 0:
            pool = np.flatnonzero(free_start[b] & (has_collision[b] != want))
        chosen[b] = rng.choice(pool)
        collided[b] = has_collision[b, chosen[b]]
    index = torch.as_tensor(chosen, device=rollout.x.device)
    offsets = torch.arange(chunk_len, device=rollout.x.device)
    rows = torch.arange(B, device=rollout.x.device)[:, None]
    cols = index[:, None] + offsets
    return ChunkSet(
        x=rollout.x[rows, cols],
        v=rollout.v[rows, cols],
        collision=torch.as_tensor(collided, device=rollout.x.device),
        start=index,
    )


def simulate_task(
    task: Task,
    n: int,
    seed: int,
    model: str = "CM",
    progress: bool = False,
    on_event: Callable[[ContactEvent], None] | None = None,
) -> Rollout:
    """``n`` trajectories of ``task`` from random collision-free initial states.

    ``on_event`` receives every resolved group of contacts (see
    :func:`~physid.contact.integrate.apply_contacts`).
    """
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task, got {type(task).__name__}")
    check_choice("model", model, tuple(DATA_MODELS))
    n = check_count("n", n, 1)
    seed = check_seed("seed", seed)
    rng = np.random.default_rng(seed)
    x0, v0 = task.system.sample_state(n, rng)
    contact_model = DATA_MODELS[model]()
    with torch.no_grad():
        return simulate(
            task.system,
            x0,
            v0,
            task.n_steps,
            task.dt,
            contact_model,
            task.mu,
            task.cor,
            progress=progress,
            on_event=on_event,
        )


def generate(
    task: str | Task,
    n_train: int,
    n_val: int,
    n_test: int,
    seed: int,
    model: str = "CM",
    chunk_len: int = 5,
    p_collision: float = 0.5,
    progress: bool = False,
    on_event: Callable[[ContactEvent], None] | None = None,
) -> TaskData:
    """Simulate and cut the data set of ``task`` (see the module docstring).

    Args:
        task: a task or its name (:data:`~physid.contact.tasks.TASK_NAMES`).
        n_train: training trajectories.
        n_val: validation trajectories.
        n_test: test trajectories.
        seed: seed of the initial states (and, plus one, of the chunk choice).
        model: a name of :data:`DATA_MODELS`: ``"CM"``, ``"CM-authors"`` or ``"LCP"``.
        chunk_len: states per chunk.
        p_collision: probability of asking for a chunk with a collision.
        progress: show a progress bar.
        on_event: diagnostics callback for every resolved group of contacts.
    """
    task = make_task(task) if isinstance(task, str) else task
    n_train = check_count("n_train", n_train, minimum=0)
    n_val = check_count("n_val", n_val, minimum=0)
    n_test = check_count("n_test", n_test, minimum=0)
    total = n_train + n_val + n_test
    if total == 0:
        raise ValueError("n_train + n_val + n_test must be positive, got 0 trajectories")
    seed = check_seed("seed", seed)
    check_choice("model", model, tuple(DATA_MODELS))
    chunk_len = check_count("chunk_len", chunk_len, 2)
    p_collision = check_in_range("p_collision", p_collision, 0.0, 1.0)
    rollout = simulate_task(task, total, seed, model, progress, on_event)
    chunks = select_chunks(rollout, chunk_len, p_collision, np.random.default_rng(seed + 1))

    def part(lo: int, hi: int) -> ChunkSet:
        return ChunkSet(
            x=chunks.x[lo:hi],
            v=chunks.v[lo:hi],
            collision=chunks.collision[lo:hi],
            start=chunks.start[lo:hi],
        )

    a, b = n_train, n_train + n_val
    return TaskData(
        task=task.name,
        model=model,
        noise=0.0,
        seed=seed,
        train=part(0, a),
        val=part(a, b),
        test=part(b, total),
        test_x=rollout.x[b:],
        test_v=rollout.v[b:],
        trajectories_with_collision=float(rollout.contact.any(1).double().mean()),
        log=rollout.log,
    )


def add_noise(data: TaskData, std: float, seed: int) -> TaskData:
    """``data`` with i.i.d. Gaussian noise of standard deviation ``std`` on every observed state.

    The noise is drawn with a seeded generator on the CPU, so it does not depend on the device.
    """
    if not isinstance(data, TaskData):
        raise TypeError(f"data must be a TaskData, got {type(data).__name__}")
    std = check_nonnegative("std", std)
    generator = torch.Generator().manual_seed(check_seed("seed", seed))

    def noisy(t: Tensor) -> Tensor:
        noise = torch.randn(t.shape, generator=generator, dtype=t.dtype)
        return t + std * noise.to(t.device)

    def chunks(c: ChunkSet) -> ChunkSet:
        return replace(c, x=noisy(c.x), v=noisy(c.v))

    return replace(
        data,
        noise=data.noise + std,
        train=chunks(data.train),
        val=chunks(data.val),
        test=chunks(data.test),
    )


_ARRAYS = ("x", "v", "collision", "start")


def save(data: TaskData, path: Path) -> Path:
    """Write ``data`` to an ``.npz`` file (creating its folder); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for split in ("train", "val", "test"):
        chunk = getattr(data, split)
        for name in _ARRAYS:
            arrays[f"{split}_{name}"] = getattr(chunk, name).cpu().numpy()
    arrays["test_x"], arrays["test_v"] = data.test_x.cpu().numpy(), data.test_v.cpu().numpy()
    fields = (data.noise, data.seed, data.trajectories_with_collision)
    meta = np.array([data.task, data.model, *(repr(value) for value in fields)])
    np.savez_compressed(path, meta=meta, **arrays)
    return path


def load(path: Path, device=None) -> TaskData:
    """Read a data set written by :func:`save` (the solver log is not stored)."""
    with np.load(Path(path)) as f:
        task, model, noise, seed, with_collision = f["meta"].tolist()

        def tensor(key: str) -> Tensor:
            return torch.as_tensor(f[key], device=device)

        splits = {
            split: ChunkSet(**{name: tensor(f"{split}_{name}") for name in _ARRAYS})
            for split in ("train", "val", "test")
        }
        return TaskData(
            task=task,
            model=model,
            noise=float(noise),
            seed=int(seed),
            test_x=tensor("test_x"),
            test_v=tensor("test_v"),
            trajectories_with_collision=float(with_collision),
            log=SolverLog(),
            **splits,
        )
