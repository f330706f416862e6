"""The eight tasks of Table 1 (reconstructed from the authors' configurations).

A task is a system with its friction and restitution coefficients per candidate contact, its
time step and its trajectory length. BP5/BD5 heterogeneous coefficients are listed for the 10
ball pairs, then 0.1 (friction) and 0.8 (restitution) for the 20 ball–wall contacts.

The paper's Rope task is the authors' ``ER200k50``: a 200-node rope with spring constant k = 50
(:data:`ROPE_NODES`). Its scalability study uses 50, 100 and 200 nodes
(:data:`ROPE_SCALING_NODES`); :func:`rope_task` builds a rope of any size, named ``"Rope<n>"``
unless it has 200 nodes, and :func:`make_task` accepts these names (or ``rope_nodes``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from physid.contact.gyroscope import Gyroscope
from physid.contact.pendulum import ChainPendulum
from physid.contact.planar import BouncingBodies
from physid.contact.rope import Rope
from physid.contact.system import ContactSystem
from physid.core.registry import Registry
from physid.core.validate import check_count, check_device

#: Nodes of the paper's Rope task (the authors' ER200k50).
ROPE_NODES = 200
#: Node counts of the rope scalability study.
ROPE_SCALING_NODES = (50, 100, 200)
#: Spring constant k of every rope task.
ROPE_STIFFNESS = 50.0

_BP_MASSES = (0.05, 0.1, 0.3, 0.4, 0.5)
_BP_RADII = (0.05, 0.1, 0.13, 0.15, 0.18)
_PAIR_MU = {
    "BP5": (0.5, 0.4, 0.6, 0.8, 0.9, 1.1, 0.7, 0.1, 0.0, 0.3),
    "BD5": (0.3, 0.5, 0.1, 0.4, 1.4, 0.9, 0.8, 0.0, 0.2, 0.6),
}
_PAIR_COR = {
    "BP5": (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    "BD5": (0.2, 0.4, 0.1, 0.9, 0.8, 0.3, 1.0, 0.9, 0.7, 0.0),
}


@dataclass(frozen=True)
class Task:
    """A system with its contact coefficients per candidate, time step and horizon.

    ``n_steps`` is the horizon in steps: 100 (1 s at 0.01 s; the gyroscope 2 s at 0.02 s), 20
    for the rope. The authors' code builds its time grid as ``arange(0, T, dt)``, whose 100
    times (20 for the rope) give one step fewer, 99 (19); the book's trajectories run that one
    step more.
    """

    name: str
    description: str
    system: ContactSystem
    mu: Tensor
    cor: Tensor
    dt: float
    n_steps: int

    @property
    def homogeneous(self) -> bool:
        """Whether every candidate contact has the same coefficients."""
        return bool((self.mu == self.mu[0]).all() and (self.cor == self.cor[0]).all())


def _coefficients(system: ContactSystem, mu, cor, device) -> tuple[Tensor, Tensor]:
    P = system.n_candidates

    def full(values):
        values = torch.as_tensor(values, dtype=torch.float64, device=device)
        return values.expand(P).clone() if values.dim() == 0 else values

    return full(mu), full(cor)


def _check_task_device(device) -> str | None:
    """``device`` checked by :func:`~physid.core.validate.check_device`; None (torch's default
    device) passes."""
    return None if device is None else check_device("device", device)


def rope_task(n_nodes: int = ROPE_NODES, device=None) -> Task:
    """The rope task with ``n_nodes`` nodes (k = 50, Δt = 0.005 s, 20 steps, μ = e = 0).

    Named ``"Rope"`` for the paper's 200 nodes and ``"Rope<n>"`` otherwise; the description
    states the node count. ``device`` is a torch device this machine has, or None (torch's
    default); anything else is an error naming it.
    """
    n_nodes = check_count("n_nodes", n_nodes, minimum=2)
    device = _check_task_device(device)
    system = Rope(n_nodes=n_nodes, stiffness=ROPE_STIFFNESS, device=device)
    mu, cor = _coefficients(system, 0.0, 0.0, device)
    name = "Rope" if n_nodes == ROPE_NODES else f"Rope{n_nodes}"
    text = f"{n_nodes}-node rope (k = {ROPE_STIFFNESS:g}) with bend and stretch limits"
    return Task(name=name, description=text, system=system, mu=mu, cor=cor, dt=0.005, n_steps=20)


@dataclass(frozen=True)
class TaskSpec:
    """A registered task: ``build(device)`` returns it on ``device``."""

    name: str
    build: Callable[[Any], Task]


#: Every task by name, in the paper's order (Table 1).
TASKS: Registry[TaskSpec] = Registry("task", TaskSpec)


def _register(name: str) -> Callable[[Callable[[Any], Task]], Callable[[Any], Task]]:
    def decorator(build: Callable[[Any], Task]) -> Callable[[Any], Task]:
        TASKS.add(TaskSpec(name, build))
        return build

    return decorator


def _task(name, text, system, mu, cor, dt, steps, device) -> Task:
    mu_t, cor_t = _coefficients(system, mu, cor, device)
    return Task(
        name=name, description=text, system=system, mu=mu_t, cor=cor_t, dt=dt, n_steps=steps
    )


@_register("BP5-e")
def _bp5_elastic(device) -> Task:
    system = BouncingBodies([0.1] * 5, [0.1] * 5, device=device)
    return _task(
        "BP5-e", "5 equal balls, frictionless and elastic", system, 0.0, 1.0, 0.01, 100, device
    )


def _bodies(name: str, device) -> Task:
    system = BouncingBodies(_BP_MASSES, _BP_RADII, disks=name == "BD5", device=device)
    mu = _PAIR_MU[name] + (0.1,) * 20
    cor = _PAIR_COR[name] + (0.8,) * 20
    kind = "disks" if name == "BD5" else "balls"
    text = f"5 {kind} with mass ratios 1:2:6:8:10, coefficients per contact pair"
    return _task(name, text, system, mu, cor, 0.01, 100, device)


@_register("BP5")
def _bp5(device) -> Task:
    return _bodies("BP5", device)


@_register("BD5")
def _bd5(device) -> Task:
    return _bodies("BD5", device)


@_register("CP3-e")
def _cp3_elastic(device) -> Task:
    system = ChainPendulum([0.2, 0.13, 0.15], [0.35, 0.4, 0.35], [0.15, 0.08, 0.1], device=device)
    text = "3-link pendulum on frictionless elastic ground"
    return _task("CP3-e", text, system, 0.0, 1.0, 0.01, 100, device)


@_register("CP3")
def _cp3(device) -> Task:
    system = ChainPendulum([0.1, 0.2, 0.15], [0.35, 0.4, 0.35], [0.05, 0.15, 0.1], device=device)
    text = "3-link pendulum on rough inelastic ground"
    return _task("CP3", text, system, 0.5, 0.0, 0.01, 100, device)


@_register("Gyro-e")
def _gyro_elastic(device) -> Task:
    text = "pivoted gyroscope against a wall, frictionless, elastic"
    return _task("Gyro-e", text, Gyroscope(device=device), 0.0, 1.0, 0.02, 100, device)


@_register("Gyro")
def _gyro(device) -> Task:
    text = "pivoted gyroscope against a wall"
    return _task("Gyro", text, Gyroscope(device=device), 0.1, 0.8, 0.02, 100, device)


@_register("Rope")
def _rope(device) -> Task:
    return rope_task(ROPE_NODES, device=device)


#: Names of the tasks, in the paper's order.
TASK_NAMES = TASKS.names()


def make_task(name: str, device=None, rope_nodes: int | None = None) -> Task:
    """The task ``name`` on ``device``.

    Args:
        name: one of :data:`TASK_NAMES`, or ``"Rope<n>"`` for an ``n``-node rope.
        device: a torch device this machine has (a name, a :class:`torch.device` or
            ``"auto"``), or None for torch's default; anything else is refused (see
            :func:`~physid.core.validate.check_device`).
        rope_nodes: nodes of the rope (only with ``name="Rope"``); default :data:`ROPE_NODES`.
    """
    device = _check_task_device(device)
    sized = re.fullmatch(r"Rope([0-9]+)", name) if isinstance(name, str) else None
    if sized is not None:
        if rope_nodes is not None:
            raise ValueError(f"rope_nodes must not be given with the sized task name {name!r}")
        return rope_task(int(sized.group(1)), device=device)
    spec = TASKS.get(name, "task")
    if rope_nodes is not None:
        if name != "Rope":
            raise ValueError(f"rope_nodes applies to the Rope task only, not to {name!r}")
        return rope_task(rope_nodes, device=device)
    return spec.build(device)
