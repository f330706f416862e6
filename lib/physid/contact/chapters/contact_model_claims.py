"""The claims of the chapter "A differentiable contact model" (``book/contact_model.md``), as
functions of its results (:mod:`physid.contact.chapters.contact_model` and
:mod:`~physid.contact.chapters.contact_model_gallery`).

Each function returns a :class:`~physid.book.claims.Verdict` that the chapter records with
:func:`~physid.book.claims.record`; the criterion lives here, where a test can show that it
holds and that it can fail.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from physid.book.claims import Verdict
from physid.book.display import plural
from physid.contact.chapters.contact_model import ImpactStudy, TaskRun

__all__ = [
    "cmr_claim",
    "differentiable_claim",
    "elastic_claim",
    "equality_claim",
    "half_collide_claim",
    "newton_claim",
    "penetration_claim",
]


def newton_claim(studies: Sequence[ImpactStudy], own: Sequence[ImpactStudy], mu: float,
                 cor: float) -> Verdict:
    """Appendix D: at the rough, elastic setting (``mu``, ``cor``) Newton's restitution gains
    energy in some impacts of both systems of ``studies`` (CP3, the gyroscope), while Poisson's
    gains at most 1e-9 of the reachable energy in ``studies`` and at the tasks' own
    coefficients (``own``)."""
    poisson_max = max(s.max_relative_gain("poisson") for s in [*studies, *own])
    gains = [s.gain_fraction("newton") for s in studies]
    own_gains = [s.gain_fraction("newton") for s in own]
    holds = min(gains) > 0 and poisson_max <= 1e-9
    return Verdict(
        "zhong2021-newton-gains-energy",
        "Newton's restitution hypothesis can increase the energy after a frictional impact in "
        "systems such as the gyroscope (Appendix D); Poisson's hypothesis with maximum "
        "dissipation does not.",
        paper="Newton's can gain energy; Poisson's is used instead",
        ours=f"Newton gains in {100 * gains[0]:.0f} % (CP3) and {100 * gains[1]:.0f} % (Gyro) of "
        f"impacts at μ = {mu:g}, e = {cor:g}, and in {100 * own_gains[0]:.1f} % and "
        f"{100 * own_gains[1]:.1f} % at the tasks' own coefficients; Poisson's largest relative "
        f"gain {poisson_max:.1e}",
        criterion=f"at μ = {mu:g}, e = {cor:g}, Newton gains energy in some impacts of "
        "both systems; Poisson's gain ≤ 1e-9 of the reachable energy at every setting",
        holds=holds,
        cause="open",
        why=""
        if holds
        else (
            f"Poisson's largest gain is {poisson_max:.1e} of the reachable energy"
            if poisson_max > 1e-9
            else "Newton's LCP gained energy in none of the recorded impacts of "
            + " and ".join(s.task for s, g in zip(studies, gains, strict=True) if g == 0)
            + f" at μ = {mu:g}, e = {cor:g} at this scale."
        ),
    )


def equality_claim(equality: Mapping[str, float], fraction: float = 0.95) -> Verdict:
    """Eq. (6)'s equality f^r_n = e f^c_n holds at a ``fraction`` of the pressed contacts with
    a large e and a small compensation velocity
    (:func:`~physid.contact.chapters.contact_model.poisson_equality`)."""
    large = equality["large equality fraction"]
    holds = large >= fraction
    return Verdict(
        "zhong2021-poisson-equality",
        "The equality in (6), f^r_n = e f^c_n, holds when the coefficient of restitution is large "
        "and the penetration small, so the model respects Poisson's hypothesis.",
        paper="equality holds for large e and small penetration",
        ours=f"{100 * large:.1f} % of {equality['large contacts']:.0f} such contacts (others: "
        f"{100 * equality['other equality fraction']:.1f} %)",
        criterion=f"≥ {100 * fraction:.0f} % of pressed contacts with e ≥ 0.5 and v*_n ≤ 0.1 |v_n|",
        holds=holds,
        cause="open",
        why=""
        if holds
        else f"At {100 * (1 - large):.1f} % of those contacts the "
        "restitution problem found a normal impulse larger than e f^c_n that dissipates more, so "
        "the inequality (6) is strict there.",
    )


def penetration_claim(penetration: Mapping[str, np.ndarray]) -> Verdict:
    """Penetration compensation fixes penetration for e = 0: CP3's resting penetration with it
    is at most 25 % of that without and at most 1.5 × the equilibrium 4 g Δt²
    (:func:`~physid.contact.chapters.contact_model_gallery.penetration_study`)."""
    pen_with, pen_without = penetration["with"][-1], penetration["without"][-1]
    holds = bool(
        pen_with <= 0.25 * pen_without and pen_with <= 1.5 * float(penetration["equilibrium"])
    )
    return Verdict(
        "zhong2021-penetration-compensation",
        "With the inequality (6) and a target velocity, the restitution impulse fixes existing "
        "penetration even for a perfectly inelastic contact (e = 0).",
        paper="penetration is fixed for e = 0",
        ours=f"resting penetration {1e3 * pen_with:.2f} mm with compensation, "
        f"{1e3 * pen_without:.1f} mm and growing without",
        criterion="with ≤ 25 % of without, and with ≤ 1.5 × 4 g Δt²",
        holds=holds,
        cause="open",
        why=""
        if holds
        else f"The resting penetration with compensation, {1e3 * pen_with:.2f} mm, is not small "
        f"against {1e3 * pen_without:.1f} mm without it or against 4 g Δt².",
        numbers={"pen_with_mm": 1e3 * pen_with, "pen_without_mm": 1e3 * pen_without},
    )


def elastic_claim(elastic: Sequence[Mapping[str, object]]) -> Verdict:
    """With e = 1 and μ = 0 every impulse, penetration compensation included, changes the
    kinetic energy by at most 1 % of it, and isolated impacts without compensation conserve
    it to 1e-9 (the rows of :func:`~physid.contact.chapters.contact_model.elastic_energy_rows`)."""
    isolated = max(r["isolated, largest |ΔKE|/KE"] for r in elastic)
    loss = max(max(r["simultaneous, largest loss/KE"] for r in elastic), 0.0)
    comp_row = max(elastic, key=lambda r: r["with compensation, largest gain/KE"])
    comp = max(comp_row["with compensation, largest gain/KE"], 0.0)
    with_comp = max(r["with compensation, largest |ΔKE|/KE"] for r in elastic)
    holds = isolated <= 1e-9 and with_comp <= 1e-2
    reasons = elastic_reasons(isolated, loss, comp, comp_row["task"], with_comp)
    return Verdict(
        "zhong2021-elastic-energy",
        "With e = 1 and μ = 0 (BP5-e, CP3-e, Gyro-e) the contact model conserves the total "
        "energy through collisions (the ground truth of Fig. 5).",
        paper="energy conserved",
        ours=f"with penetration compensation, every impulse changes the kinetic energy by at most "
        f"{with_comp:.1e} of it (gains up to {comp:.1e}, in {comp_row['task']}); "
        f"without it, isolated impacts by {isolated:.1e}, and simultaneous impacts lose "
        f"up to {loss:.1e}",
        criterion="every impulse, penetration compensation included, changes the kinetic energy "
        "by at most 1 % of the median initial kinetic energy; isolated impacts without "
        "compensation conserve it to 1e-9",
        holds=holds,
        cause="open",
        why="" if holds else " ".join(reasons),
    )


def elastic_reasons(isolated: float, loss: float, comp: float, comp_task: str,
                    with_comp: float) -> list[str]:
    """The sentences that say which part of the elastic-energy criterion fails."""
    reasons = []
    if comp > 1e-2:
        reasons.append(
            f"Penetration compensation pushes penetrating bodies apart whatever their energy and "
            f"gains up to {comp:.1e} of the kinetic energy in {comp_task}, above 1 %."
        )
    if loss > 1e-2:
        reasons.append(
            f"Simultaneous impacts lose up to {loss:.1e} of the kinetic energy, above 1 %."
        )
    if isolated > 1e-9:
        reasons.append(f"Isolated impacts without compensation change it by {isolated:.1e}.")
    if with_comp > 1e-2 and not reasons:
        reasons.append(
            f"With compensation, an impulse changes the kinetic energy by {with_comp:.1e} of it."
        )
    return reasons


def cmr_claim(uniqueness: Mapping[str, float]) -> Verdict:
    """CMr's regularisation makes each problem's minimiser unique: on the gyroscope problems
    where CM's is not, the two solvers' CMr final velocities agree to 1e-6
    (:func:`~physid.contact.chapters.contact_model.uniqueness_study`)."""
    n_nonunique = int(uniqueness["non-unique"])
    cm_impulse = uniqueness["CM as stated compression impulse"]
    cmr_final = uniqueness["CMr final velocity"]
    holds = bool(n_nonunique > 0 and cmr_final <= 1e-6)
    return Verdict(
        "zhong2021-cmr-unique",
        "Adding R = εI to A makes A + R positive definite, which ensures a unique global minimum "
        "of each contact problem (CMr).",
        paper="unique minimiser under CMr",
        ours=f"{plural(n_nonunique, 'non-unique CM gyroscope problem')}; two solvers differ "
        f"by {cm_impulse:.1e} (CM impulses) and agree to {cmr_final:.1e} (CMr)",
        criterion="CMr final velocities of the two solvers agree to 1e-6 on the problems where "
        "CM's minimiser is not unique",
        holds=holds,
        cause="open",
        why=""
        if holds
        else (
            "No gyroscope problem with a non-unique CM minimiser came up at this scale, so there "
            "was nothing to compare."
            if n_nonunique == 0
            else f"The two solvers' CMr final velocities differ by {cmr_final:.1e}."
        ),
        numbers={"cmr_final": 0.0 if math.isnan(cmr_final) else cmr_final},
    )


def differentiable_claim(fd: Mapping[str, float], max_dg: float) -> Verdict:
    """Gradients flow through both convex programs: autograd matches finite differences to
    1e-4 (relative; :func:`~physid.contact.chapters.contact_model.gradient_check`);
    ``max_dg`` is the largest gap between the fast solver's and cvxpylayers' gradients."""
    error = fd["max relative error"]
    holds = error <= 1e-4
    return Verdict(
        "zhong2021-differentiable",
        "The contact model is differentiable: gradients of the post-impact velocity with respect "
        "to the friction and restitution coefficients flow through both convex programs.",
        paper="differentiable (through cvxpylayers)",
        ours=f"autograd against finite differences: {error:.1e} relative "
        f"({fd['problems']:.0f} problems); fast against cvxpylayers {max_dg:.1e} (μ > 0)",
        criterion="relative error ≤ 1e-4 against finite differences",
        holds=holds,
        cause="open",
        why="" if holds else f"Autograd and finite differences differ by {error:.1e} (relative).",
        numbers={"fd_error": error},
    )


def _far_from_half(name: str, run: TaskRun, fraction: float) -> str:
    """Why a task's fraction of chunks with a collision is far from one half."""
    data = run.data
    n = len(data.train)
    noise = 0.5 / np.sqrt(n)  # standard deviation of the fraction drawn with probability 1/2
    reach = data.trajectories_with_collision
    if reach < 0.9:
        return (
            f"{name}: {100 * fraction:.0f} % of its chunks, since only {100 * reach:.0f} % of its "
            "trajectories have a collision at all within the task's horizon"
        )
    return (
        f"{name}: {100 * fraction:.0f} % of its {n} training chunks, "
        f"{abs(fraction - 0.5) / noise:.1f} standard deviations of the random choice from one half"
    )


def half_collide_claim(runs: Mapping[str, TaskRun], low: float = 0.35,
                       high: float = 0.65) -> tuple[Verdict, list[str]]:
    """About half of each task's training chunks contain a collision: every fraction within
    [``low``, ``high``]. Also returns, for each task outside, the sentence that says why."""
    fractions = {name: run.data.train.collision_fraction for name, run in runs.items()}
    outside = {name: f for name, f in fractions.items() if not low <= f <= high}
    reasons = [_far_from_half(name, runs[name], f) for name, f in outside.items()]
    holds = not outside
    return Verdict(
        "zhong2021-half-collide",
        "About half of the training chunks contain a collision, and their first states are "
        "collision-free.",
        paper="around half",
        ours=", ".join(f"{name} {f:.2f}" for name, f in fractions.items()),
        criterion=f"every task's fraction in [{low:g}, {high:g}]",
        holds=holds,
        cause="open",
        why="" if holds else "Outside the range: " + "; ".join(reasons) + ".",
    ), reasons
