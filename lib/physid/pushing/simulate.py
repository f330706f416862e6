"""One entry point for both formulations: :func:`simulate` a push and get every cell's path.

``simulate(obj, push, formulation="rigid" | "lcp")`` runs formulation 2
(:mod:`physid.pushing.rigid_engine`, fast) or formulation 1 (:mod:`physid.pushing.lcp_engine`,
the LCP of Figure 2 as written) and returns a :class:`Trajectory`: the world position of every
cell at the sample times, differentiable with respect to ``masses`` and ``frictions``. All
tensors are float64 on the device of the parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor

from physid.core.constants import GRAVITY
from physid.core.progress import progress as progress_bar
from physid.core.registry import Registry
from physid.core.validate import (
    check_array,
    check_count,
    check_positive,
    check_tensor,
)
from physid.pushing import lcp_engine, rigid_engine
from physid.pushing.engine import EngineSpec, Scene, Stepping
from physid.pushing.finger import FINGER, ContactRecord, FaceGeometry, Finger, check_finger
from physid.pushing.objects import CellObject, check_frictions, check_masses, check_object
from physid.pushing.pushes import Push, PushBatch

__all__ = ["FORMULATIONS", "Trajectory", "cell_position_error", "sample_indices", "simulate"]

#: The two formulations of §5 by name (see :mod:`physid.pushing.engine`).
FORMULATIONS: Registry[EngineSpec] = Registry("formulation", EngineSpec)
FORMULATIONS.add(EngineSpec("rigid", rigid_engine, "one rigid body with k friction points"))
FORMULATIONS.add(EngineSpec("lcp", lcp_engine, "one body per cell, tied by fixed joints"))


@dataclass(frozen=True)
class Trajectory:
    """Cell world positions ``positions`` (B, S, k, 2) — (S, k, 2) for a single push — in metres
    at ``times`` (S,) seconds from the start of the push, and what the finger did at every step
    (``contact``, a :class:`~physid.pushing.finger.ContactRecord`; None without a pusher)."""

    times: Tensor
    positions: Tensor
    contact: ContactRecord | None = None

    @property
    def final(self) -> Tensor:
        """Positions at the last sample time."""
        return self.positions[..., -1, :, :]


def cell_position_error(predicted: Tensor, reference: Tensor) -> Tensor:
    """Mean over cells of the distance between predicted and reference cell positions (m).

    ``(..., k, 2)`` inputs (k >= 1, finite) give ``(...)``: the metric of §7 ("average error of
    predicted cell positions").
    """
    for name, t in (("predicted", predicted), ("reference", reference)):
        check_tensor(name, t, dtype=None)
        if t.dim() < 2 or t.shape[-1] != 2 or t.shape[-2] < 1:
            raise ValueError(
                f"{name} must have shape (..., k, 2) with k >= 1 cells, got {tuple(t.shape)}"
            )
    if predicted.shape != reference.shape:
        raise ValueError(
            f"predicted and reference must have the same shape, got {tuple(predicted.shape)} "
            f"and {tuple(reference.shape)}"
        )
    return (predicted - reference).norm(dim=-1).mean(-1)


def sample_indices(times: Sequence[float] | Tensor, step: float, duration: float) -> list[int]:
    """Step indices of ``times`` (s) on a grid of ``step`` over ``[0, duration]``; ValueError
    naming ``sample_times`` if a time is not finite, off the grid or outside the push."""
    step = check_positive("step", step)
    duration = check_positive("duration", duration)
    if isinstance(times, Tensor):
        times = times.detach().cpu().numpy()
    values = check_array("sample_times", times).reshape(-1)
    if values.size == 0:
        raise ValueError("sample_times must hold at least one time")
    out = []
    for t in values.tolist():
        index = round(t / step)
        if abs(index * step - t) > 1e-9 * max(1.0, abs(t)):
            raise ValueError(f"sample_times must be multiples of {step:g} s, got {t!r}")
        if not 0 <= t <= duration + 1e-12:
            raise ValueError(f"sample_times must lie in [0, {duration:g}] s, got {t!r}")
        out.append(index)
    return out


def _as_float64(name: str, values, device) -> Tensor:
    """``values`` as a float64 tensor on ``device``: a tensor must already be float64
    (TypeError otherwise); sequences and numpy arrays are converted."""
    if isinstance(values, Tensor):
        return check_tensor(name, values, dtype=torch.float64, finite=False).to(device)
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers, got {values!r}") from None
    return torch.as_tensor(array, dtype=torch.float64, device=device)


def _params(name: str, values, default: Tensor, batch: int, device) -> Tensor:
    t = default.to(device) if values is None else _as_float64(name, values, device)
    k = default.shape[-1]
    if t.shape not in ((k,), (batch, k)):
        raise ValueError(f"{name} must have shape ({k},) or ({batch}, {k}), got {tuple(t.shape)}")
    return t.expand(batch, k)


def simulate(
    obj: CellObject,
    push: Push | Sequence[Push] | None,
    formulation: str = "rigid",
    dt: float = 0.01,
    masses: Tensor | None = None,
    frictions: Tensor | None = None,
    *,
    sample_times: Sequence[float] | Tensor | None = None,
    duration: float | None = None,
    initial_velocity: Sequence[float] | Tensor | None = None,
    initial_pose: Sequence[float] | Tensor | None = None,
    start_time: float | Sequence[float] | Tensor | None = None,
    friction_dirs: int = 4,
    gravity: float = GRAVITY,
    tol: float = 1e-9,
    finger: Finger = FINGER,
    progress: bool = False,
) -> Trajectory:
    """Simulate ``push`` (one :class:`~physid.pushing.pushes.Push`, a sequence of pushes
    batched together, or None for no pusher) of ``obj`` starting at rest on the world frame
    (or with ``initial_velocity``
    ``[ω, vx, vy]``, shape (3,) or (B, 3), the twist at the object-frame origin; without a
    pusher, a (B, 3) velocity simulates B free slides at once).

    ``initial_pose`` ``[yaw, x, y]`` (shape (3,) or (B, 3)) starts the object frame there
    instead of on the world frame, and ``start_time`` (s, a number or (B,)) starts each push's
    finger where it is that long into the push: together they restart a push from an observed
    pose and twist (the one-step-ahead residuals of Eq. (1),
    :class:`~physid.pushing.target.PushingTarget`).

    ``masses``/``frictions`` default to the object's, with shape (k,) or (B, k); the device of
    ``masses`` (else of the object) is used throughout. ``duration`` defaults to the pushes'
    (required without a pusher) and must be a multiple of ``dt``. ``sample_times`` default to
    every step. ``friction_dirs`` is the number of directions of D (4 in the paper);
    ``gravity`` (m/s², > 0) sets each cell's normal load ``M_i g``; ``tol`` (> 0) is the LCP
    solver's KKT tolerance. ``finger`` is the pushing disc (:class:`~physid.pushing.finger.Finger`;
    every push must be reachable by it, :func:`~physid.pushing.pushes.check_reachable`).
    ``progress=True`` draws a bar on the terminal (never in a page).
    Every argument is checked before any work (ValueError or TypeError naming it).
    """
    check_object(obj)
    engine = FORMULATIONS.get(formulation, "formulation")
    dt = check_positive("dt", dt)
    gravity = check_positive("gravity", gravity)
    tol = check_positive("tol", tol)
    friction_dirs = check_count("friction_dirs", friction_dirs, minimum=3)
    check_finger(finger)
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, got {progress!r}")
    device = masses.device if isinstance(masses, Tensor) else obj.masses.device
    single = push is None or isinstance(push, Push)
    if not single and (isinstance(push, str) or not isinstance(push, Sequence)):
        raise TypeError(f"push must be a Push, a sequence of pushes or None, got {push!r}")
    pushes = None
    if push is not None:
        pushes = PushBatch._from_pushes(obj, [push] if single else list(push), device, finger)
        if duration is None:
            duration = pushes.duration
    if duration is None:
        raise ValueError("duration must be given when push is None")
    duration = check_positive("duration", duration)
    n_steps = round(duration / dt)
    if abs(n_steps * dt - duration) > 1e-9 * max(1.0, duration):
        raise ValueError(f"duration must be a multiple of dt={dt:g}, got {duration!r}")
    twist = None
    if initial_velocity is not None:
        twist = _as_float64("initial_velocity", initial_velocity, device)
    if pushes is not None:
        batch = len(pushes)
    elif twist is not None and twist.dim() == 2:
        batch, single = twist.shape[0], False  # a batch of free slides
    else:
        batch = 1
    if twist is None:
        twist = torch.zeros(batch, 3, dtype=torch.float64, device=device)
    else:
        if twist.shape not in ((3,), (batch, 3)):
            raise ValueError(
                f"initial_velocity must have shape (3,) or ({batch}, 3), got {tuple(twist.shape)}"
            )
        check_tensor("initial_velocity", twist, dtype=torch.float64)
        twist = twist.expand(batch, 3)
    pose = None
    if initial_pose is not None:
        pose = _as_float64("initial_pose", initial_pose, device)
        if pose.shape not in ((3,), (batch, 3)):
            raise ValueError(
                f"initial_pose must have shape (3,) or ({batch}, 3), got {tuple(pose.shape)}"
            )
        check_tensor("initial_pose", pose, dtype=torch.float64)
        pose = pose.expand(batch, 3)
    if start_time is not None:
        if pushes is None:
            raise ValueError("start_time needs a push")
        shift = _as_float64("start_time", start_time, device)
        if shift.shape not in ((), (batch,)):
            raise ValueError(f"start_time must be a number or have shape ({batch},), got "
                             f"{tuple(shift.shape)}")
        check_tensor("start_time", shift, dtype=torch.float64, nonnegative=True)
        pushes = replace(pushes, start=pushes.start + pushes.velocity * shift.reshape(-1, 1))
    m = _params("masses", masses, obj.masses, batch, device)
    f = _params("frictions", frictions, obj.frictions, batch, device)
    check_masses(m)
    check_frictions(f)
    indices = list(range(n_steps + 1))
    if sample_times is not None:
        indices = sample_indices(sample_times, dt, n_steps * dt)
    centres = obj.centres.to(device)
    faces = FaceGeometry.of(obj, centres)
    scene = Scene(centres, m, f, obj.cell_side, twist, pushes, faces, pose)
    stepping = Stepping(dt, n_steps, friction_dirs, gravity, tol, finger)
    if progress:
        with progress_bar(total=n_steps, desc="simulate") as bar:
            positions, contact = engine.rollout(scene, stepping, bar.update)
    else:
        positions, contact = engine.rollout(scene, stepping)
    index = torch.tensor(indices, device=device)
    positions = positions.index_select(1, index)
    times = index.to(torch.float64) * dt
    if single:
        return Trajectory(times, positions[0], None if contact is None else contact[0])
    return Trajectory(times, positions, contact)
