"""One entry point for both formulations: :func:`simulate` a push and get every cell's path.

``simulate(obj, push, formulation="rigid" | "lcp")`` runs formulation 2
(:mod:`physid.pushing.rigid_engine`, fast) or formulation 1 (:mod:`physid.pushing.lcp_engine`,
the LCP of Figure 2 as written) and returns a :class:`Trajectory`: the world position of every
cell at the sample times, differentiable with respect to ``masses`` and ``frictions``. All
tensors are float64 on the device of the parameters.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from tqdm.auto import tqdm

from physid.pushing import lcp_engine, rigid_engine
from physid.pushing.objects import CellObject, check_frictions, check_masses
from physid.pushing.pushes import Push, PushBatch

__all__ = ["FORMULATIONS", "Trajectory", "cell_position_error", "sample_indices", "simulate"]

FORMULATIONS = {"rigid": rigid_engine.rollout, "lcp": lcp_engine.rollout}
GRAVITY = 9.81


@dataclass(frozen=True)
class Trajectory:
    """Cell world positions ``positions`` (B, S, k, 2) — (S, k, 2) for a single push — in metres
    at ``times`` (S,) seconds from the start of the push."""

    times: Tensor
    positions: Tensor

    @property
    def final(self) -> Tensor:
        """Positions at the last sample time."""
        return self.positions[..., -1, :, :]


def cell_position_error(predicted: Tensor, reference: Tensor) -> Tensor:
    """Mean over cells of the distance between predicted and reference cell positions (m).

    ``(..., k, 2)`` inputs give ``(...)``: the metric of §7 ("average error of predicted cell
    positions").
    """
    if predicted.shape != reference.shape:
        raise ValueError(
            f"predicted and reference must have the same shape, got {tuple(predicted.shape)} "
            f"and {tuple(reference.shape)}"
        )
    return (predicted - reference).norm(dim=-1).mean(-1)


def sample_indices(times: Sequence[float] | Tensor, step: float, duration: float) -> list[int]:
    """Step indices of ``times`` (s) on a grid of ``step`` over ``[0, duration]``; ValueError if
    a time is off the grid or outside the push."""
    out = []
    for t in torch.as_tensor(times, dtype=torch.float64).flatten().tolist():
        index = round(t / step)
        if not (math.isfinite(t) and abs(index * step - t) <= 1e-9 * max(1.0, abs(t))):
            raise ValueError(f"sample_times must be multiples of {step:g} s, got {t!r}")
        if not 0 <= t <= duration + 1e-12:
            raise ValueError(f"sample_times must lie in [0, {duration:g}] s, got {t!r}")
        out.append(index)
    if not out:
        raise ValueError("sample_times must hold at least one time")
    return out


class _Progress:
    """A tqdm bar that appears only when the projected run time exceeds ``threshold`` s."""

    def __init__(self, total: int, enabled: bool | None, threshold: float = 3.0):
        self.total, self.enabled, self.threshold = total, enabled, threshold
        self.count, self.start, self.bar = 0, time.perf_counter(), None
        if enabled:
            self.bar = tqdm(total=total, desc="simulate", leave=False)

    def __call__(self) -> None:
        self.count += 1
        if self.bar is None and self.enabled is None:
            projected = (time.perf_counter() - self.start) / self.count * self.total
            if projected > self.threshold and self.count < self.total:
                self.bar = tqdm(total=self.total, initial=self.count, desc="simulate", leave=False)
                return
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _params(name: str, values, default: Tensor, batch: int, device) -> Tensor:
    t = default if values is None else values
    t = torch.as_tensor(t, dtype=torch.float64, device=device)
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
    friction_dirs: int = 4,
    gravity: float = GRAVITY,
    tol: float = 1e-10,
    progress: bool | None = None,
) -> Trajectory:
    """Simulate ``push`` (one :class:`~physid.pushing.pushes.Push`, a sequence of pushes
    batched together, or None for no pusher) of ``obj`` starting at rest on the world frame
    (or with ``initial_velocity``
    ``[ω, vx, vy]``, shape (3,) or (B, 3), the twist at the object-frame origin; without a
    pusher, a (B, 3) velocity simulates B free slides at once).

    ``masses``/``frictions`` default to the object's, with shape (k,) or (B, k); the device of
    ``masses`` (else of the object) is used throughout. ``duration`` defaults to the pushes'
    (required without a pusher) and must be a multiple of ``dt``. ``sample_times`` default to
    every step. ``friction_dirs`` is the number of directions of D (4 in the paper). The bar
    of ``progress`` shows when a run is projected to take over 3 s (``None``), always (True)
    or never (False).
    """
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {sorted(FORMULATIONS)}, got {formulation!r}")
    if not (isinstance(dt, int | float) and math.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be positive and finite, got {dt!r}")
    device = masses.device if isinstance(masses, Tensor) else obj.masses.device
    single = push is None or isinstance(push, Push)
    pushes = None
    if push is not None:
        pushes = PushBatch.from_pushes(obj, [push] if single else list(push), device)
        if duration is None:
            duration = pushes.duration
    if duration is None:
        raise ValueError("duration must be given when push is None")
    if not (math.isfinite(duration) and duration > 0):
        raise ValueError(f"duration must be positive and finite, got {duration!r}")
    n_steps = round(duration / dt)
    if abs(n_steps * dt - duration) > 1e-9 * max(1.0, duration):
        raise ValueError(f"duration must be a multiple of dt={dt:g}, got {duration!r}")
    twist = None
    if initial_velocity is not None:
        twist = torch.as_tensor(initial_velocity, dtype=torch.float64, device=device)
    if pushes is not None:
        batch = len(pushes)
    elif twist is not None and twist.dim() == 2:
        batch, single = twist.shape[0], False  # a batch of free slides
    else:
        batch = 1
    if twist is None:
        twist = torch.zeros(batch, 3, dtype=torch.float64, device=device)
    else:
        if twist.shape not in ((3,), (batch, 3)) or not torch.isfinite(twist).all():
            raise ValueError(
                f"initial_velocity must be finite with shape (3,) or ({batch}, 3), got {twist!r}"
            )
        twist = twist.expand(batch, 3)
    m = _params("masses", masses, obj.masses, batch, device)
    f = _params("frictions", frictions, obj.frictions, batch, device)
    check_masses(m)
    check_frictions(f)
    indices = list(range(n_steps + 1))
    if sample_times is not None:
        indices = sample_indices(sample_times, dt, n_steps * dt)
    bar = _Progress(n_steps, progress)
    try:
        positions = FORMULATIONS[formulation](
            obj.centres.to(device), m, f, pushes, twist, cell_side=obj.cell_side, dt=dt,
            n_steps=n_steps, friction_dirs=friction_dirs, gravity=gravity, tol=tol, on_step=bar,
        )
    finally:
        bar.close()
    index = torch.tensor(indices, device=device)
    positions = positions.index_select(1, index)
    times = index.to(torch.float64) * dt
    return Trajectory(times, positions[0] if single else positions)
