"""The contract of Part I's engines: what is simulated, how, and the :class:`Engine` protocol.

Both formulations of §5 (:mod:`physid.pushing.lcp_engine`, one body per cell tied by joints,
and :mod:`physid.pushing.rigid_engine`, one rigid body with ``k`` friction points) simulate the
same thing the same way and return the same results, so they share one signature:

* a :class:`Scene`, *what* is simulated: the object's cells (object-frame centres, side), a
  batch of ``B`` mass and friction maps, the pushes (or none), the initial twist and pose;
* a :class:`Stepping`, *how*: the time step and horizon, the friction polygon's number of
  directions, gravity, the solver tolerance and the finger;
* ``engine.rollout(scene, stepping, on_step=None)`` returns the cell positions
  ``(B, n_steps + 1, k, 2)`` and the finger's
  :class:`~physid.pushing.finger.ContactRecord` (None without pushes); ``on_step`` is called
  after every step (a progress bar, a deadline).

Both dataclasses check their fields when they are made (shapes, float64, signs, finiteness),
so a bad value is reported by name before any work and the engines take them as validated.
:data:`physid.pushing.simulate.FORMULATIONS` registers the two engines by the names the chapters
and targets use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor

from physid.core.constants import GRAVITY
from physid.core.validate import check_count, check_positive, check_tensor
from physid.pushing.finger import FINGER, ContactRecord, FaceGeometry, Finger, check_finger
from physid.pushing.pushes import PushBatch

__all__ = ["Engine", "EngineSpec", "Scene", "Stepping"]


@dataclass(frozen=True)
class Scene:
    """What is simulated: ``B`` copies of one object of ``k`` cells, each with its own maps.

    ``centres (k, 2)`` object-frame cell centres and ``cell_side`` their side (m);
    ``masses (B, k)`` > 0 and ``frictions (B, k)`` >= 0; ``initial_velocity (B, 3)`` the
    object's initial twist ``[ω, vx, vy]`` at the object-frame origin (world axes);
    ``pushes`` None (no pusher) or a :class:`~physid.pushing.pushes.PushBatch` of ``B``
    pushes, with ``faces`` the object's :class:`~physid.pushing.finger.FaceGeometry`;
    ``initial_pose (B, 3)`` the object frame's initial ``[yaw, x, y]`` (None: the world
    frame). Every tensor is float64; a ValueError or TypeError names the field.
    """

    centres: Tensor
    masses: Tensor
    frictions: Tensor
    cell_side: float
    initial_velocity: Tensor
    pushes: PushBatch | None = None
    faces: FaceGeometry | None = None
    initial_pose: Tensor | None = None

    def __post_init__(self) -> None:
        check_tensor("centres", self.centres, shape=(None, 2), dtype=torch.float64)
        k = self.centres.shape[0]
        if k < 1:
            raise ValueError("centres must hold at least one cell, got shape (0, 2)")
        check_tensor("masses", self.masses, shape=(None, k), dtype=torch.float64, positive=True)
        batch = self.masses.shape[0]
        check_tensor(
            "frictions", self.frictions, shape=(batch, k), dtype=torch.float64, nonnegative=True
        )
        check_tensor(
            "initial_velocity", self.initial_velocity, shape=(batch, 3), dtype=torch.float64
        )
        if self.initial_pose is not None:
            check_tensor("initial_pose", self.initial_pose, shape=(batch, 3), dtype=torch.float64)
        if self.pushes is not None:
            if not isinstance(self.pushes, PushBatch):
                raise TypeError(
                    f"pushes must be a PushBatch or None, got {type(self.pushes).__name__}"
                )
            if len(self.pushes) != batch:
                raise ValueError(
                    f"pushes must hold {batch} pushes (one per row of masses), got "
                    f"{len(self.pushes)}"
                )
            if not isinstance(self.faces, FaceGeometry):
                raise TypeError(
                    "faces must be the object's FaceGeometry when pushing, got "
                    f"{type(self.faces).__name__}"
                )
        object.__setattr__(self, "cell_side", check_positive("cell_side", self.cell_side))

    @property
    def batch(self) -> int:
        """``B``, the number of simulated copies."""
        return self.masses.shape[0]

    @property
    def k(self) -> int:
        """The number of cells."""
        return self.centres.shape[0]

    def select(self, index: Tensor) -> Scene:
        """The copies ``index`` (a LongTensor) of this scene."""
        return replace(
            self, masses=self.masses[index], frictions=self.frictions[index],
            initial_velocity=self.initial_velocity[index],
            pushes=None if self.pushes is None else self.pushes.select(index),
            initial_pose=None if self.initial_pose is None else self.initial_pose[index],
        )


@dataclass(frozen=True)
class Stepping:
    """How a scene is simulated: ``n_steps`` >= 0 steps of ``dt`` > 0 s, ``friction_dirs`` >= 3
    directions of the friction polygon (4: the paper's ``D``), ``gravity`` > 0, the solver
    tolerance ``tol`` > 0 and the pushing ``finger``."""

    dt: float
    n_steps: int
    friction_dirs: int = 4
    gravity: float = GRAVITY
    tol: float = 1e-9
    finger: Finger = FINGER

    def __post_init__(self) -> None:
        object.__setattr__(self, "dt", check_positive("dt", self.dt))
        object.__setattr__(self, "n_steps", check_count("n_steps", self.n_steps, minimum=0))
        object.__setattr__(
            self, "friction_dirs", check_count("friction_dirs", self.friction_dirs, minimum=3)
        )
        object.__setattr__(self, "gravity", check_positive("gravity", self.gravity))
        object.__setattr__(self, "tol", check_positive("tol", self.tol))
        object.__setattr__(self, "finger", check_finger(self.finger))


@runtime_checkable
class Engine(Protocol):
    """A formulation of the pushing dynamics (see the module docstring)."""

    def rollout(
        self, scene: Scene, stepping: Stepping, on_step: Callable[[], None] | None = None
    ) -> tuple[Tensor, ContactRecord | None]: ...


@dataclass(frozen=True)
class EngineSpec:
    """A registered formulation: its engine (a module or object with ``rollout``) and label."""

    name: str
    engine: Engine | ModuleType
    label: str

    def rollout(
        self, scene: Scene, stepping: Stepping, on_step: Callable[[], None] | None = None
    ) -> tuple[Tensor, ContactRecord | None]:
        """``engine.rollout(scene, stepping, on_step)``."""
        return self.engine.rollout(scene, stepping, on_step)
