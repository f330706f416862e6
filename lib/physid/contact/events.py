"""Contact events as batches of contact problems, and the energy an impulse changes.

The ground-truth simulation records every contact it resolves as a
:class:`~physid.contact.integrate.ContactEvent` (the pre-impact state, its contact space and the
impulse). :func:`stack_events` groups the events of a run by contact count and stacks each group
into one :class:`Batch`, so that a study can re-solve thousands of recorded problems in a few
batched calls. :func:`impulse_energy` and :func:`contact_kinetic_energy` are the two energies of a
contact space: the exact kinetic-energy change of an impulse, ``fᵀ (v_C + ½ A f)``, and the kinetic
energy of the velocity component an impulse can reach, ``½ v_Cᵀ A⁺ v_C``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from physid.contact.integrate import ContactEvent
from physid.contact.model import ContactSpace

__all__ = [
    "Batch",
    "contact_kinetic_energy",
    "impulse_energy",
    "leaf_space",
    "stack_events",
]


@dataclass(frozen=True)
class Batch:
    """Contact problems of one contact count, stacked from several events."""

    space: ContactSpace
    jacobian: Tensor
    constraint_jacobian: Tensor | None
    inv_mass: Tensor
    impulse: Tensor


def stack_events(events: list[ContactEvent], limit: int | None = None) -> list[Batch]:
    """Events grouped by contact count and stacked (at most ``limit`` samples in all)."""
    groups: dict[int, list[ContactEvent]] = {}
    for event in events:
        groups.setdefault(event.space.n_contacts, []).append(event)
    batches, taken = [], 0
    for C in sorted(groups):
        chosen = groups[C]
        if limit is not None:
            room = limit - taken
            if room <= 0:
                break
            kept, count = [], 0
            for event in chosen:
                if count >= room:
                    break
                kept.append(event)
                count += event.space.batch
            chosen = kept

        def cat(get, chosen=chosen) -> Tensor:
            return torch.cat([get(e) for e in chosen])

        space = ContactSpace(
            factor=cat(lambda e: e.space.factor),
            velocity=cat(lambda e: e.space.velocity),
            target=cat(lambda e: e.space.target),
            mu=cat(lambda e: e.space.mu),
            cor=cat(lambda e: e.space.cor),
            k=chosen[0].space.k,
        )
        G = None if chosen[0].constraint_jacobian is None else cat(lambda e: e.constraint_jacobian)
        batch = Batch(
            space=space,
            jacobian=cat(lambda e: e.jacobian),
            constraint_jacobian=G,
            inv_mass=chosen[0].inv_mass,
            impulse=cat(lambda e: e.resolution.impulse),
        )
        if limit is not None and taken + space.batch > limit:
            batch = _head(batch, limit - taken)
        batches.append(batch)
        taken += batch.space.batch
    return batches


def _head_space(s: ContactSpace, n: int) -> ContactSpace:
    return ContactSpace(s.factor[:n], s.velocity[:n], s.target[:n], s.mu[:n], s.cor[:n], s.k)


def _head(batch: Batch, n: int) -> Batch:
    G = None if batch.constraint_jacobian is None else batch.constraint_jacobian[:n]
    return Batch(
        _head_space(batch.space, n), batch.jacobian[:n], G, batch.inv_mass, batch.impulse[:n]
    )


def impulse_energy(space: ContactSpace, impulse: Tensor) -> Tensor:
    """Kinetic-energy change of an impulse, ``fᵀ (v_C + ½ A f)`` per sample (exact)."""
    f = impulse.flatten(1)
    return (f * (space.velocity + 0.5 * (space.A @ f[..., None])[..., 0])).sum(-1)


def contact_kinetic_energy(space: ContactSpace) -> Tensor:
    """½ v_Cᵀ A⁺ v_C: the kinetic energy of the velocity component an impulse can reach."""
    return 0.5 * (
        space.velocity * (torch.linalg.pinv(space.A) @ space.velocity[..., None])[..., 0]
    ).sum(-1)


def leaf_space(space: ContactSpace) -> ContactSpace:
    """A copy of ``space`` whose tensors are detached leaves that require gradients (for a
    gradient with respect to the contact space itself)."""
    grab = lambda t: t.detach().clone().requires_grad_(True)  # noqa: E731
    return ContactSpace(
        grab(space.factor),
        grab(space.velocity),
        grab(space.target),
        grab(space.mu),
        grab(space.cor),
        space.k,
    )
