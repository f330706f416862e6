"""Ground truth: RK4 steps of the constrained dynamics, collision detection, contact impulses.

This is the paper's Algorithm 1 as the authors run it: one fixed RK4 step of the smooth dynamics
from ``t_i`` to ``t_{i+1}``, then discrete collision detection at the new positions and, for
every sample with a penetrating candidate (d < 0), one velocity jump from the contact model.
Positions never jump, so a penetration is removed over later steps by penetration compensation.

Samples are grouped by their number of simultaneous contacts C, and each group is resolved in one
batched call, so the contact layer (fast solver or cvxpylayers) is shared by all samples with the
same C, padded with dummy contacts to a few sizes (:func:`contact_bucket`). Where the resolver
takes few contacts cheaply whatever the padding (the fast solver's compiled enumeration, on the
CPU: :meth:`~physid.contact.model.ContactModel.group_limit`), the samples with at most that
many contacts form one group instead, padded to the largest count among them: the per-group
tensor operations, which a small batch pays many times over their arithmetic, are then paid once
a step. The inverse inertia and the force can be replaced (a learned M⁻¹ and potential), which
is how a CLNN with the contact model plugs in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch
from torch import Tensor

from physid.contact.mechanics import acceleration
from physid.contact.model import (
    ContactSpace,
    SolverLog,
    _frame,
    _target,
    authors_target,
    check_inverse_inertia,
)
from physid.contact.system import ContactSystem, Detection
from physid.core.progress import progress as progress_bar
from physid.core.validate import check_count, check_positive, check_tensor


@runtime_checkable
class ContactResolver(Protocol):
    """What the integrator needs of a contact model (:class:`~physid.contact.model.ContactModel`
    or :class:`~physid.contact.lcp.LCPModel`): a penetration-compensation fraction, whether
    the target v* takes the authors' projection (:func:`~physid.contact.model.authors_target`),
    and ``resolve(space, log)``, returning an object with the ``impulse`` ``(B, C, k)``."""

    compensation: float
    authors_target: bool

    def resolve(self, space: ContactSpace, log: SolverLog | None = None) -> Any: ...

    def group_limit(self, k: int, device: torch.device) -> int:
        """The contact count up to which samples are resolved in one group, padded to the
        largest count among them (0: a group per padded count, :func:`contact_bucket`)."""
        ...


@dataclass(frozen=True)
class ContactEvent:
    """One group of samples resolved together, for diagnostics (see :func:`apply_contacts`).

    Attributes:
        space: the contact-space problem.
        resolution: the contact model's answer.
        jacobian: ``(b, C·k, N)`` contact Jacobians.
        constraint_jacobian: ``(b, E, N)`` equality-constraint Jacobians, or None.
        inv_mass: the inverse inertia used.
        distance: ``(b, C)`` signed distances.
        candidates: ``(b, C)`` indices of the candidate contacts.
    """

    space: ContactSpace
    resolution: Any
    jacobian: Tensor
    constraint_jacobian: Tensor | None
    inv_mass: Tensor
    distance: Tensor
    candidates: Tensor


@dataclass(frozen=True)
class Rollout:
    """Simulated trajectories.

    Attributes:
        x: ``(B, T + 1, N)`` positions.
        v: ``(B, T + 1, N)`` velocities.
        contact: ``(B, T)`` whether a contact impulse was applied at the end of step t.
        n_contacts: ``(B, T)`` number of simultaneous contacts resolved at step t.
        log: how the contact problems were solved.
    """

    x: Tensor
    v: Tensor
    contact: Tensor
    n_contacts: Tensor
    log: SolverLog = field(default_factory=SolverLog)


def rk4_step(
    x: Tensor, v: Tensor, dt: float, accel: Callable[[Tensor, Tensor], Tensor]
) -> tuple[Tensor, Tensor]:
    """One classical Runge-Kutta step of ``(ẋ, v̇) = (v, accel(x, v))``.

    The authors' code takes torchdiffeq's ``"rk4"``, which is Kutta's 3/8 rule, another
    fourth-order method: the two differ in the O(Δt⁵) local error of each step (and in
    rounding), not in order."""
    k1x, k1v = v, accel(x, v)
    k2x, k2v = v + 0.5 * dt * k1v, accel(x + 0.5 * dt * k1x, v + 0.5 * dt * k1v)
    k3x, k3v = v + 0.5 * dt * k2v, accel(x + 0.5 * dt * k2x, v + 0.5 * dt * k2v)
    k4x, k4v = v + dt * k3v, accel(x + dt * k3x, v + dt * k3v)
    x_new = x + dt / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
    v_new = v + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    return x_new, v_new


def _check_inputs(
    system: ContactSystem,
    model: ContactResolver,
    x: Tensor,
    v: Tensor,
    mu: Tensor,
    cor: Tensor,
    dt: float,
    inv_mass: Tensor | None,
) -> float:
    """Validate the arguments shared by :func:`apply_contacts` and :func:`simulate`."""
    if not isinstance(system, ContactSystem):
        raise TypeError(f"system must be a ContactSystem, got {type(system).__name__}")
    if not isinstance(model, ContactResolver):
        raise TypeError(
            f"model must be a contact model with resolve() and compensation, "
            f"got {type(model).__name__}"
        )
    N, P = system.n_coords, system.n_candidates
    check_tensor("x", x, shape=(None, N), dtype=torch.float64)
    check_tensor("v", v, shape=(x.shape[0], N), dtype=torch.float64)
    check_tensor("mu", mu, shape=(P,), nonnegative=True, dtype=torch.float64)
    check_tensor("cor", cor, shape=(P,), nonnegative=True, dtype=torch.float64)
    if bool((cor > 1).any()):
        raise ValueError(f"cor (restitution) must lie in [0, 1], found {float(cor.max()):g}")
    if inv_mass is not None:
        check_inverse_inertia(inv_mass)
        if inv_mass.shape[-2:] != (N, N) or inv_mass.dim() == 3 and inv_mass.shape[0] != x.shape[0]:
            raise ValueError(
                f"inv_mass must be ({N}, {N}) or (B, {N}, {N}) for {system.name}, "
                f"got {tuple(inv_mass.shape)}"
            )
    return check_positive("dt", dt)


def apply_contacts(
    system: ContactSystem,
    model: ContactResolver,
    x: Tensor,
    v: Tensor,
    mu: Tensor,
    cor: Tensor,
    dt: float,
    log: SolverLog,
    inv_mass: Tensor | None = None,
    on_event: Callable[[ContactEvent], None] | None = None,
) -> tuple[Tensor, Tensor]:
    """The velocities after the contact impulses at positions ``x``.

    Args:
        system: the system (detection, constraints).
        model: a contact model with ``resolve(space, log)`` and a ``compensation`` fraction
            (:class:`~physid.contact.model.ContactModel` or
            :class:`~physid.contact.lcp.LCPModel`).
        x: ``(B, N)`` positions.
        v: ``(B, N)`` velocities before the impulses.
        mu: ``(P,)`` friction coefficient per candidate contact.
        cor: ``(P,)`` restitution coefficient per candidate contact.
        dt: time step (for penetration compensation).
        log: receives the solver counts.
        inv_mass: inverse inertia to use instead of the system's (e.g. a learned one).
        on_event: called with every resolved group as a :class:`ContactEvent` (diagnostics).

    Returns:
        ``(v_after, n_contacts)`` with ``n_contacts`` of shape ``(B,)``.
    """
    dt = _check_inputs(system, model, x, v, mu, cor, dt, inv_mass)
    if not isinstance(log, SolverLog):
        raise TypeError(f"log must be a SolverLog, got {type(log).__name__}")
    return _apply_contacts(system, model, x, v, mu, cor, dt, log, inv_mass, on_event)


def _apply_contacts(
    system: ContactSystem,
    model: ContactResolver,
    x: Tensor,
    v: Tensor,
    mu: Tensor,
    cor: Tensor,
    dt: float,
    log: SolverLog,
    inv_mass: Tensor | None,
    on_event: Callable[[ContactEvent], None] | None,
) -> tuple[Tensor, Tensor]:
    inv_mass = system.inv_mass if inv_mass is None else inv_mass
    detection = system.detect(x)
    active = detection.distance < 0
    counts = active.sum(1)
    k = system.contact_dim
    listed = counts.tolist()  # the step's one synchronisation
    for count in listed:
        if count:
            log.detected[count] = log.detected.get(count, 0) + 1

    def resolve_group(x: Tensor, v: Tensor, minv: Tensor, detection: Detection,
                      active: Tensor, C: int, size: int) -> Tensor:
        """The velocity change of one group of samples (Algorithm 1's contact step) with at most
        ``C`` contacts each, padded to ``size`` contacts (the step's other inputs are
        :func:`apply_contacts`'s)."""
        # The C most penetrating candidates of each sample; samples with fewer contacts get
        # inactive candidates, which are masked out below and padded to ``size`` contacts.
        order = torch.sort(detection.distance, dim=1, stable=True).indices[:, :C]
        real = active.gather(1, order)
        J = detection.jacobian[torch.arange(len(x), device=x.device)[:, None], order]
        J = (J * real[..., None, None]).reshape(len(x), C * k, -1)
        distance = torch.where(real, detection.distance.gather(1, order), 0.0)
        G = system.constraint_jacobian(x)
        frame = _frame(minv, J, G)  # the inputs were checked where they came in
        target = _target(distance, k, dt, model.compensation)
        if model.authors_target:
            target = authors_target(target, J, G)
        space = ContactSpace._made(
            factor=frame.factor,
            velocity=(J @ v[..., None])[..., 0],
            target=target,
            mu=mu[order],
            cor=cor[order],
            k=k,
        )
        resolution = model.resolve(_padded(space, real, size), log)
        impulse = resolution.impulse[:, :C] * real[..., None]
        if on_event is not None:
            # One event per actual contact count, without the padding.
            n_real = real.sum(1)
            for c in n_real.unique().tolist():
                if c == 0:
                    continue
                idx = (n_real == c).nonzero()[:, 0]
                on_event(
                    ContactEvent(
                        space=_take(space, idx, c),
                        resolution=_take(resolution, idx, c),
                        jacobian=J[idx, : c * k],
                        constraint_jacobian=None if G is None else G[idx],
                        inv_mass=minv[idx] if minv.dim() == 3 else minv,
                        distance=distance[idx, :c],
                        candidates=order[idx, :c],
                    )
                )
        return frame.velocity_change(impulse)

    groups = _groups(listed, model.group_limit(k, x.device), x.device)
    if len(groups) == 1 and groups[0][0] is None:  # every sample: no gathering or scattering
        _, C, size = groups[0]
        return v + resolve_group(x, v, inv_mass, detection, active, C, size), counts
    dv = torch.zeros_like(v)
    for rows, C, size in groups:
        minv = inv_mass[rows] if inv_mass.dim() == 3 else inv_mass
        group = Detection(distance=detection.distance[rows], jacobian=detection.jacobian[rows])
        dv = dv.index_put((rows,), resolve_group(x[rows], v[rows], minv, group, active[rows],
                                                 C, size))
    return v + dv, counts


def _groups(listed: list[int], limit: int,
            device: torch.device) -> list[tuple[Tensor | None, int, int]]:
    """The groups of samples resolved together, as ``(rows, C, size)`` from each sample's
    contact count (``listed``): their largest count ``C`` and the count they are padded to.
    Samples with no contact are in none (solving them as dummies would cost little less than
    gathering the others, and count them as problems); those with up to ``limit`` contacts
    form one group padded to their largest count, the others one group per
    :func:`contact_bucket`. ``rows`` is None for a group of every sample."""
    largest = max(listed, default=0)
    if largest == 0:
        return []
    if largest <= limit and min(listed) > 0:
        return [(None, largest, largest)]
    merged = max((c for c in listed if c <= limit), default=0)
    buckets = contact_bucket(torch.tensor(listed)).tolist()
    members: dict[int, list[int]] = {}
    for b, (count, bucket) in enumerate(zip(listed, buckets, strict=True)):
        if count:
            members.setdefault(merged if count <= limit else bucket, []).append(b)
    return [
        (torch.tensor(rows, device=device), max(listed[b] for b in rows), size)
        for size, rows in sorted(members.items())
    ]


def _take(item: Any, idx: Tensor, C: int) -> Any:
    """The samples ``idx`` of a contact space or resolution, restricted to their first ``C``
    contacts: ``(B, C', k)`` fields and ``(B, C'·k)`` contact-space vectors are cut to ``C``
    contacts, ``(B, C')`` fields too, and a factor ``(B, r, C'·k)`` loses its padding rows."""
    k = item.k if isinstance(item, ContactSpace) else item.impulse.shape[-1]
    changes = {}
    for f in dataclasses.fields(item):
        value = getattr(item, f.name)
        if not isinstance(value, Tensor):
            continue
        value = value[idx]
        if f.name == "factor":
            value = value[:, :, : C * k]
        elif value.dim() == 3:
            value = value[:, :C]
        elif f.name in ("mu", "cor"):
            value = value[:, :C]
        else:
            value = value[:, : C * k]
        changes[f.name] = value
    return dataclasses.replace(item, **changes)


def contact_bucket(counts: Tensor) -> Tensor:
    """The padded contact count of each sample: exact up to 8, then 4 sizes per octave.

    Samples with different numbers of simultaneous contacts are resolved together when they
    share a bucket, padded with dummy contacts (each with a unit block of its own), so the
    200-node rope, with up to 296 contacts, is resolved in a few batched groups instead of one
    per count. The padding costs at most a quarter more contact rows.
    """
    counts = counts.to(torch.int64)
    bits = torch.floor(torch.log2((counts - 1).clamp_min(1).double())).to(torch.int64) + 1
    step = torch.where(counts > 8, 2 ** (bits - 3).clamp_min(0), torch.ones_like(counts))
    return -(-counts // step) * step


def _padded(space: ContactSpace, real: Tensor, size: int) -> ContactSpace:
    """``space`` of ``C`` candidates per sample (``real`` ``(B, C)`` marks the actual contacts,
    whose Jacobian rows alone are nonzero), padded to ``size`` contacts.

    A dummy contact (an inactive candidate or a padding slot) gets a unit block of its own in
    ``A`` (a factor row of its own), a separating normal velocity of 1 and μ = e = 0, so its
    impulse is exactly zero and it does not couple to the real contacts.
    """
    B, C = real.shape
    k = space.k
    pad = size - C
    if pad == 0 and bool(real.all()):  # nothing to pad (every count up to 8 is its own bucket)
        return space
    dummy = torch.cat([~real, real.new_ones(B, pad)], 1)  # (B, size)
    dummy_rows = dummy[..., None].expand(B, size, k).reshape(B, size * k)
    factor = space.factor
    factor = torch.cat(
        [torch.nn.functional.pad(factor, (0, pad * k)), torch.diag_embed(dummy_rows.to(factor))],
        1,
    )
    separating = torch.zeros(B, size, k, dtype=factor.dtype, device=factor.device)
    separating[..., 0] = 1.0

    def padded(values: Tensor, width: int) -> Tensor:
        return torch.nn.functional.pad(values, (0, pad * width))

    return ContactSpace._made(
        factor=factor,
        velocity=torch.where(dummy_rows, separating.reshape(B, -1), padded(space.velocity, k)),
        target=torch.where(dummy_rows, 0.0, padded(space.target, k)),
        mu=torch.where(dummy, 0.0, padded(space.mu, 1)),
        cor=torch.where(dummy, 0.0, padded(space.cor, 1)),
        k=k,
        padding=int(dummy.sum()),
    )


def simulate(
    system: ContactSystem,
    x0: Tensor,
    v0: Tensor,
    n_steps: int,
    dt: float,
    model: ContactResolver,
    mu: Tensor,
    cor: Tensor,
    inv_mass: Tensor | None = None,
    force: Callable[[Tensor], Tensor] | None = None,
    progress: bool = False,
    on_event: Callable[[ContactEvent], None] | None = None,
) -> Rollout:
    """Roll out ``n_steps`` steps of Algorithm 1 from ``(x0, v0)`` (each ``(B, N)``).

    Args:
        system: the system.
        x0: initial positions.
        v0: initial velocities.
        n_steps: number of steps.
        dt: time step.
        model: the contact model (``resolve(space, log)``).
        mu: ``(P,)`` friction per candidate contact.
        cor: ``(P,)`` restitution per candidate contact.
        inv_mass: inverse inertia replacing the system's (dynamics and contacts).
        force: force field ``x -> -∇V`` replacing the system's.
        progress: show a progress bar on the terminal (:mod:`physid.core.progress`).
        on_event: diagnostics callback, see :func:`apply_contacts`.

    Raises:
        ValueError: for bad input (naming the argument), and if the state stops being finite
            (a diverging learned force or inverse inertia), naming the step.
    """
    n_steps = check_count("n_steps", n_steps)
    dt = _check_inputs(system, model, x0, v0, mu, cor, dt, inv_mass)
    if force is not None and not callable(force):
        raise TypeError(f"force must be a callable x -> -∇V(x), got {type(force).__name__}")
    minv = system.inv_mass if inv_mass is None else inv_mass
    force_fn = system.force if force is None else force

    def accel(x: Tensor, v: Tensor) -> Tensor:
        return acceleration(x, v, minv, force_fn(x), system.constraints)

    log = SolverLog()
    xs, vs, counts = [x0], [v0], []
    x, v = x0, v0
    steps = progress_bar(range(n_steps), desc=f"simulating {system.name}", disable=not progress)
    for step in steps:
        x, v = rk4_step(x, v, dt, accel)
        if not bool(torch.isfinite(x).all() & torch.isfinite(v).all()):
            raise ValueError(
                f"the state of {system.name} is no longer finite after step {step + 1} of "
                f"{n_steps} (dt = {dt:g}): check force and inv_mass"
            )
        v, n = _apply_contacts(system, model, x, v, mu, cor, dt, log, minv, on_event)
        xs.append(x)
        vs.append(v)
        counts.append(n)
    n_contacts = torch.stack(counts, 1)
    return Rollout(
        x=torch.stack(xs, 1),
        v=torch.stack(vs, 1),
        contact=n_contacts > 0,
        n_contacts=n_contacts,
        log=log,
    )
