"""The trajectories the contact-model chapter draws: one of each system (the gallery), the
pendulum of the explorer, penetration compensation and the energy budget of an elastic
pendulum."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from physid.contact.chapters.contact_model import GALLERY, TaskRun
from physid.contact.integrate import apply_contacts, rk4_step, simulate
from physid.contact.mechanics import acceleration
from physid.contact.model import COMPENSATION, ContactModel, SolverLog
from physid.contact.tasks import make_task
from physid.core.constants import GRAVITY
from physid.core.validate import (
    check_count,
    check_in_range,
    check_nonnegative,
)


@dataclass(frozen=True)
class Trajectory:
    """One simulated trajectory of a task with its energy and the steps that had a contact."""

    task: str
    times: np.ndarray
    x: np.ndarray
    v: np.ndarray
    energy: np.ndarray
    contact_steps: np.ndarray


def _trajectory(name: str, x: Tensor, v: Tensor, dt: float | None = None) -> Trajectory:
    task = make_task(name, device=x.device)
    energy = task.system.energy(x, v).cpu().numpy()
    touching = (task.system.detect(x).distance < 0).any(-1).cpu().numpy()
    return Trajectory(
        task=name,
        times=(task.dt if dt is None else dt) * np.arange(x.shape[0]),
        x=x.cpu().numpy(),
        v=v.cpu().numpy(),
        energy=energy,
        contact_steps=np.flatnonzero(touching),
    )


def gallery(runs: dict[str, TaskRun]) -> dict[str, Trajectory]:
    """A test trajectory with a contact (the first one) of each task in
    :data:`~physid.contact.chapters.contact_model.GALLERY`."""
    out = {}
    for main, elastic in GALLERY:
        for name in (main, elastic):
            if name is None:
                continue
            d = runs[name].data
            chosen = _trajectory(name, d.test_x[0], d.test_v[0])
            for i in range(d.test_x.shape[0]):
                candidate = _trajectory(name, d.test_x[i], d.test_v[i])
                if len(candidate.contact_steps):
                    chosen = candidate
                    break
            out[name] = chosen
    return out


def penetration_study(n_steps: int = 150) -> dict[str, np.ndarray]:
    """CP3 (e = 0) released from rest: deepest penetration per step with and without v*."""
    n_steps = check_count("n_steps", n_steps)
    task = make_task("CP3")
    system = task.system
    x, v = system.from_angles(np.array([[0.8, 1.2, 1.6]]), np.zeros((1, 3)))
    x0 = torch.as_tensor(x.reshape(1, -1), device=system.device)
    v0 = torch.as_tensor(v.reshape(1, -1), device=system.device)
    out = {"times": task.dt * np.arange(n_steps + 1)}
    for label, fraction in (("with", COMPENSATION), ("without", 0.0)):
        with torch.no_grad():
            r = simulate(
                system,
                x0,
                v0,
                n_steps,
                task.dt,
                ContactModel(compensation=fraction),
                task.mu,
                task.cor,
            )
            d = system.detect(r.x[0]).distance
        out[label] = (-d.min(1).values).clamp(min=0).cpu().numpy()
    out["equilibrium"] = np.array(GRAVITY * task.dt**2 / (2 * COMPENSATION))
    return out


#: The explorer's release of the CP3 pendulum: link angles from the downward vertical (rad),
#: their rates (rad/s), and the duration of the rollout (s).
EXPLORER_ANGLES = (2.2, 2.6, 2.9)
EXPLORER_RATES = (0.0, 0.0, 1.0)
EXPLORER_SECONDS = 1.5


def _explorer_simulation(
    cor: float, mu: float, dt: float, compensation: float, on_event=None
) -> tuple[Tensor, Tensor]:
    task = make_task("CP3")
    system = task.system
    x, v = system.from_angles(np.array([EXPLORER_ANGLES]), np.array([EXPLORER_RATES]))
    x0 = torch.as_tensor(x.reshape(1, -1), device=system.device)
    v0 = torch.as_tensor(v.reshape(1, -1), device=system.device)
    mu_t, cor_t = torch.full_like(task.mu, mu), torch.full_like(task.cor, cor)
    model = ContactModel(compensation=compensation)
    n_steps = round(EXPLORER_SECONDS / dt)
    with torch.no_grad():
        r = simulate(system, x0, v0, n_steps, dt, model, mu_t, cor_t, on_event=on_event)
    return r.x[0], r.v[0]


def pendulum_rollout(cor: float, mu: float) -> Trajectory:
    """CP3 from a fixed initial state with homogeneous (e, μ): the explorer's rollout.

    Args:
        cor: coefficient of restitution of the bobs against the ground, in [0, 1].
        mu: friction coefficient, ≥ 0.
    """
    cor = check_in_range("cor", cor, 0.0, 1.0)
    mu = check_nonnegative("mu", mu)
    dt = make_task("CP3").dt
    x, v = _explorer_simulation(cor, mu, dt, COMPENSATION)
    return _trajectory("CP3", x, v)


def energy_budget(cor: float = 1.0, mu: float = 0.0, refinements: int = 2) -> list[dict]:
    """Where the explorer's energy goes: the impulses against the smooth flight in between.

    The explorer's release is simulated at the task's Δt, Δt/2, …, with and without penetration
    compensation, one step of Algorithm 1 at a time, and the total energy is measured right
    before and right after every contact impulse: the impulses' share of the change is exact,
    and the rest happens between impulses, in the RK4 steps of the constrained dynamics, which
    neither conserve energy exactly nor keep the constraints (no projection back onto them, as
    in Algorithm 1).
    """
    cor = check_in_range("cor", cor, 0.0, 1.0)
    mu = check_nonnegative("mu", mu)
    refinements = check_count("refinements", refinements)
    task = make_task("CP3")
    system = task.system
    x, v = system.from_angles(np.array([EXPLORER_ANGLES]), np.array([EXPLORER_RATES]))
    x0 = torch.as_tensor(x.reshape(1, -1), device=system.device)
    v0 = torch.as_tensor(v.reshape(1, -1), device=system.device)
    mu_t, cor_t = torch.full_like(task.mu, mu), torch.full_like(task.cor, cor)

    def accel(x: Tensor, v: Tensor) -> Tensor:
        return acceleration(x, v, system.inv_mass, system.force(x), system.constraints)

    rows = []
    for level in range(refinements):
        dt = task.dt / 2**level
        for compensation in (COMPENSATION, 0.0):
            model = ContactModel(compensation=compensation)
            x, v, at_impulses, residual = x0, v0, 0.0, 0.0
            with torch.no_grad():
                for _ in range(round(EXPLORER_SECONDS / dt)):
                    x, v = rk4_step(x, v, dt, accel)
                    after, _ = apply_contacts(system, model, x, v, mu_t, cor_t, dt, SolverLog())
                    at_impulses += float((system.energy(x, after) - system.energy(x, v)).sum())
                    v = after
                    residual = max(residual, float(system.constraints.residual(x).abs().max()))
            e0, e1 = float(system.energy(x0, v0)[0]), float(system.energy(x, v)[0])
            rows.append(
                {
                    "Δt (s)": dt,
                    "compensation": "1/8" if compensation else "off",
                    "initial energy (J)": e0,
                    "total change (J)": e1 - e0,
                    "at impulses (J)": at_impulses,
                    "between impulses (J)": e1 - e0 - at_impulses,
                    "largest constraint residual (m²)": residual,
                }
            )
    return rows
