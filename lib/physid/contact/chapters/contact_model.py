"""Drivers of the chapter "A differentiable contact model", with their sizes per scale.

Every study reuses the contact events recorded while the data sets are simulated
(:func:`run_tasks`): the pre-impact states of all eight tasks, as the ground-truth simulation
meets them. A study then re-solves those contact problems (with other coefficients, without
penetration compensation, with another solver or model), so no study simulates again except the
penetration experiment.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor

from physid.contact import datasets, fast, reference
from physid.contact.events import (
    contact_kinetic_energy,
    impulse_energy,
    leaf_space,
    stack_events,
)
from physid.contact.integrate import ContactEvent
from physid.contact.lcp import LCPModel
from physid.contact.mechanics import kinetic_energy
from physid.contact.model import ContactModel, ContactSpace, SolverLog, authors_target
from physid.contact.tasks import TASK_NAMES, make_task
from physid.core.progress import progress as progress_bar
from physid.core.scales import Sizes, SizeTable
from physid.core.validate import (
    check_count,
    check_in_range,
    check_nonnegative,
    check_seed,
)

#: Tasks of the robustness study (LCP-generated and noisy data).
ROBUSTNESS_TASKS = ("BP5-e", "CP3", "CP3-e", "Gyro")
#: Observation noise levels of the noisy variants.
NOISE_LEVELS = (0.01, 0.05)
#: The system shown per family in the gallery, with its elastic variant when there is one.
GALLERY = (("BP5", "BP5-e"), ("BD5", None), ("CP3", "CP3-e"), ("Gyro", "Gyro-e"), ("Rope", None))


def _check_split(name: str, n) -> tuple[int, int, int]:
    if not isinstance(n, tuple | list) or len(n) != 3:
        raise ValueError(f"{name} must be (train, validation, test) trajectory counts, got {n!r}")
    return tuple(check_count(f"{name}[{i}]", value, minimum=0) for i, value in enumerate(n))


@dataclass(frozen=True)
class ContactSizes(Sizes):
    """Run sizes of the contact chapter.

    Attributes:
        data: trajectories (train, validation, test) simulated per task.
        lcp_data: the same for the LCP-generated variants.
        compare_samples: contact problems per task compared between the two solvers.
        gradient_samples: contact problems per task in the finite-difference check.
        timing_batches: batch sizes of the in-chapter timing.
        timing_repeat: interleaved repeats per timing (at least 5).
        timing_window: seconds a timed window lasts at least (see
            :func:`~physid.contact.chapters.contact_model_timing.time_resolutions`).
    """

    data: tuple[int, int, int]
    lcp_data: tuple[int, int, int]
    compare_samples: int
    gradient_samples: int
    timing_batches: tuple[int, ...]
    timing_repeat: int
    timing_window: float

    def check(self) -> None:
        for name in ("data", "lcp_data"):
            object.__setattr__(self, name, _check_split(name, getattr(self, name)))
        batches = tuple(
            check_count(f"timing_batches[{i}]", b) for i, b in enumerate(self.timing_batches)
        )
        object.__setattr__(self, "timing_batches", batches)
        if self.timing_repeat < 5:
            raise ValueError(f"timing_repeat must be at least 5, got {self.timing_repeat!r}")


_FULL = ContactSizes(
    data=(800, 100, 100),
    lcp_data=(800, 100, 100),
    compare_samples=48,
    gradient_samples=6,
    timing_batches=(1, 16, 200),
    timing_repeat=5,
    timing_window=0.5,
)

SIZES = SizeTable(
    "contact-model chapter",
    quick=ContactSizes(
        data=(16, 4, 4),
        lcp_data=(8, 2, 2),
        compare_samples=6,
        gradient_samples=2,
        timing_batches=(1, 16),
        timing_repeat=5,
        timing_window=0.05,
    ),
    # The paper's data sizes (800/100/100 per task) are cheap enough to be the default.
    default=_FULL,
    paper=_FULL,
)


# ---------------------------------------------------------------------------------------------
# Data sets and their contact events.


@dataclass(frozen=True)
class TaskRun:
    """A task's data set, the contact events met while simulating it, and the time it took."""

    data: datasets.TaskData
    events: list[ContactEvent]
    seconds: float


def run_tasks(
    n: tuple[int, int, int], seed: int, names=TASK_NAMES, progress: bool = True
) -> dict[str, TaskRun]:
    """Generate the CM data set of every task in ``names``, recording its contact events."""
    n = _check_split("n", n)
    seed = check_seed("seed", seed)
    runs = {}
    for offset, name in enumerate(progress_bar(names, desc="tasks", disable=not progress)):
        events: list[ContactEvent] = []
        start = time.perf_counter()
        data = datasets.generate(name, *n, seed=seed + 100 * offset, on_event=events.append)
        runs[name] = TaskRun(data=data, events=events, seconds=time.perf_counter() - start)
    return runs


def robustness_data(
    n: tuple[int, int, int], seed: int, progress: bool = True
) -> dict[str, dict[str, datasets.TaskData]]:
    """LCP-generated data of :data:`ROBUSTNESS_TASKS`, clean and with each noise level."""
    n = _check_split("n", n)
    seed = check_seed("seed", seed)
    out = {}
    for offset, name in enumerate(
        progress_bar(ROBUSTNESS_TASKS, desc="LCP data", disable=not progress)
    ):
        clean = datasets.generate(name, *n, seed=seed + 1000 + offset, model="LCP")
        variants = {"clean": clean}
        for j, std in enumerate(NOISE_LEVELS):
            variants[f"noise {std:g}"] = datasets.add_noise(clean, std, seed=seed + 2000 + j)
        out[name] = variants
    return out


def dataset_rows(runs: dict[str, TaskRun], lcp: dict[str, dict[str, datasets.TaskData]]):
    """One row per data set: sizes, collision fractions, generation time and solver counts."""
    rows = []
    for name, run in runs.items():
        d = run.data
        rows.append(
            {
                "task": name,
                "model": d.model,
                "train/val/test": f"{len(d.train)}/{len(d.val)}/{len(d.test)}",
                "chunks with a collision": d.train.collision_fraction,
                "trajectories with a collision": d.trajectories_with_collision,
                "seconds": run.seconds,
                "fast exact": d.log.fast_exact,
                "fast, no gradient needed": d.log.fast_unpolished,
                "fallbacks": d.log.fallbacks,
            }
        )
    for name, variants in lcp.items():
        d = variants["clean"]
        rows.append(
            {
                "task": name,
                "model": "LCP (Newton)",
                "train/val/test": f"{len(d.train)}/{len(d.val)}/{len(d.test)}",
                "chunks with a collision": d.train.collision_fraction,
                "trajectories with a collision": d.trajectories_with_collision,
                "seconds": float("nan"),
                "fast exact": 0,
                "fast, no gradient needed": 0,
                "fallbacks": 0,
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Appendix E: A is positive semi-definite.


def psd_rows(runs: dict[str, TaskRun]) -> list[dict]:
    """Eigenvalues of A = J M̂⁻¹ Jᵀ, with M̂⁻¹ = M⁻¹ - M⁻¹Gᵀ(GM⁻¹Gᵀ)⁻¹GM⁻¹ computed directly,
    and the largest difference to the factorised A = FᵀF the model uses, relative to max |A|."""
    rows = []
    for name, run in runs.items():
        ratios, gaps = [], []
        for batch in stack_events(run.events):
            minv = batch.inv_mass
            if batch.constraint_jacobian is None:
                hat = minv.expand(batch.jacobian.shape[0], -1, -1)
            else:
                G = batch.constraint_jacobian
                mg = minv @ G.transpose(1, 2)
                hat = minv - mg @ torch.linalg.solve(G @ mg, mg.transpose(1, 2))
            A = batch.jacobian @ hat @ batch.jacobian.transpose(1, 2)
            values = torch.linalg.eigvalsh(0.5 * (A + A.transpose(1, 2)))
            ratios.append(values[:, 0] / values[:, -1])
            scale = A.abs().flatten(1).amax(-1)
            gaps.append((A - batch.space.A).abs().flatten(1).amax(-1) / scale)
        if not ratios:
            continue
        r = torch.cat(ratios)
        rows.append(
            {
                "task": name,
                "contact problems": len(r),
                "min λ_min/λ_max": float(r.min()),
                "singular (λ_min/λ_max < 1e-10)": float((r < 1e-10).double().mean()),
                "max |A − FᵀF| / max |A|": float(torch.cat(gaps).max()),
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Appendix D: Poisson's against Newton's hypothesis.


@dataclass(frozen=True)
class ImpactStudy:
    """Energy changes of the same impacts under Poisson's (CM) and Newton's (LCP) hypotheses."""

    task: str
    mu: float
    cor: float
    poisson: Tensor
    newton: Tensor
    reachable: Tensor

    def gain_fraction(self, which: str) -> float:
        gain = getattr(self, which) > 1e-10 * self.reachable.clamp_min(1e-12)
        return float(gain.double().mean())

    def max_relative_gain(self, which: str) -> float:
        return float((getattr(self, which) / self.reachable.clamp_min(1e-12)).max())


def restitution_study(run: TaskRun, mu: float, cor: float) -> ImpactStudy:
    """Re-solve every impact of ``run`` with coefficients (μ, e) and no penetration target."""
    mu = check_nonnegative("mu", mu)
    cor = check_in_range("cor", cor, 0.0, 1.0)
    poisson, newton, reach = [], [], []
    for batch in stack_events(run.events):
        s = batch.space
        space = replace(
            s,
            target=torch.zeros_like(s.target),
            mu=torch.full_like(s.mu, mu),
            cor=torch.full_like(s.cor, cor),
        )
        approaching = (space.velocity.reshape(space.batch, -1, space.k)[..., 0] < 0).any(-1)
        with torch.no_grad():
            p = impulse_energy(space, ContactModel().resolve(space).impulse)
            n = impulse_energy(space, LCPModel().resolve(space).impulse)
        poisson.append(p[approaching])
        newton.append(n[approaching])
        reach.append(contact_kinetic_energy(space)[approaching])
    return ImpactStudy(
        task=run.data.task,
        mu=mu,
        cor=cor,
        poisson=torch.cat(poisson),
        newton=torch.cat(newton),
        reachable=torch.cat(reach),
    )


# ---------------------------------------------------------------------------------------------
# Energy of elastic frictionless impacts, and Poisson's equality.


def elastic_energy_rows(runs: dict[str, TaskRun]) -> list[dict]:
    """Impulse energy changes in the tasks with e = 1, μ = 0, relative to the median initial
    kinetic energy: isolated and simultaneous impacts without compensation, and the largest
    gain with it.

    An isolated frictionless elastic impact conserves energy exactly. With several contacts at
    once, the restitution impulse minimises the energy over all impulses with f_n ≥ f^c_n, which
    may lie below the energy of f^c itself: simultaneous impacts can lose some energy.
    """
    rows = []
    for name in ("BP5-e", "CP3-e", "Gyro-e"):
        run = runs[name]
        system = make_task(name).system
        scale = float(kinetic_energy(run.data.test_v[:, 0], system.mass_matrix).median())
        gain, isolated, simultaneous = [], [], []
        for batch in stack_events(run.events):
            with torch.no_grad():
                gain.append(impulse_energy(batch.space, batch.impulse))
                plain = replace(batch.space, target=torch.zeros_like(batch.space.target))
                change = impulse_energy(plain, ContactModel().resolve(plain).impulse)
            (isolated if batch.space.n_contacts == 1 else simultaneous).append(change)

        def extreme(values, fn, scale=scale) -> float:
            return float(fn(torch.cat(values))) / scale if values else 0.0

        rows.append(
            {
                "task": name,
                "impacts": sum(len(g) for g in gain),
                "simultaneous": sum(len(g) for g in simultaneous),
                "median initial KE (J)": scale,
                "isolated, largest |ΔKE|/KE": extreme(isolated, lambda t: t.abs().max()),
                "simultaneous, largest loss/KE": extreme(simultaneous, lambda t: (-t).max()),
                "any, largest gain/KE": extreme(isolated + simultaneous, lambda t: t.max()),
                "with compensation, largest gain/KE": extreme(gain, lambda t: t.max()),
                "with compensation, largest |ΔKE|/KE": extreme(gain, lambda t: t.abs().max()),
            }
        )
    return rows


#: Tasks of :func:`target_projection_rows`: one without equality constraints, then the
#: constrained ones, where the two projections differ.
PROJECTION_TASKS = ("BP5", "CP3", "BD5", "Gyro")


def target_projection_rows(
    runs: dict[str, TaskRun], names=PROJECTION_TASKS, limit: int = 2000
) -> list[dict]:
    """The book's and the authors' projection of the penetration target v* on the same
    recorded contact problems (at most ``limit`` per task): each problem of a task's run
    re-solved with the target as the book takes it and as the authors' code projects it
    (:func:`~physid.contact.model.authors_target`), and the contact-space velocity after the
    impulse compared contact by contact (the norm over its components, m/s)."""
    rows = []
    for name in names:
        differences = []
        for batch in stack_events(runs[name].events, limit=limit):
            space = batch.space
            theirs = authors_target(space.target, batch.jacobian, batch.constraint_jacobian)
            with torch.no_grad():
                ours = ContactModel().resolve(space).velocity_after
                other = ContactModel().resolve(replace(space, target=theirs)).velocity_after
            gap = (ours - other).reshape(space.batch, -1, space.k).norm(dim=-1)
            differences.append(gap.flatten())
        gap = torch.cat(differences) if differences else torch.zeros(0, dtype=torch.float64)
        events = runs[name].events
        constrained = bool(events) and events[0].constraint_jacobian is not None
        rows.append(
            {
                "task": name,
                "equality constraints": "yes" if constrained else "no",
                "contacts": len(gap),
                "largest difference (m/s)": float(gap.max()) if len(gap) else float("nan"),
                "median difference (m/s)": float(gap.median()) if len(gap) else float("nan"),
            }
        )
    return rows


def poisson_equality(runs: dict[str, TaskRun], names=("BP5", "BD5")) -> dict[str, float]:
    """How often f^r_n = e f^c_n holds (6), for large e with small penetration and otherwise."""
    hits = {"large": [], "other": []}
    for name in names:
        for batch in stack_events(runs[name].events):
            s = batch.space
            with torch.no_grad():
                res = ContactModel().resolve(s)
            k = s.k
            fc = res.compression[..., 0]
            fr = res.restitution[..., 0]
            v_n = s.velocity.reshape(s.batch, -1, k)[..., 0]
            target = s.target.reshape(s.batch, -1, k)[..., 0]
            pressed = fc > 1e-9
            equal = (fr - s.cor * fc).abs() <= 1e-7 * fc.clamp_min(1e-12)
            large = (s.cor >= 0.5) & (target <= 0.1 * v_n.abs())
            hits["large"].append(equal[pressed & large])
            hits["other"].append(equal[pressed & ~large])
    out = {}
    for key, values in hits.items():
        v = torch.cat(values) if values else torch.zeros(0, dtype=torch.bool)
        out[f"{key} contacts"] = float(len(v))
        out[f"{key} equality fraction"] = float(v.double().mean()) if len(v) else float("nan")
    return out


# ---------------------------------------------------------------------------------------------
# The fast solver against cvxpylayers.


def _impulse_and_grads(model: ContactModel, space: ContactSpace, weights: Tensor, log):
    leaf = leaf_space(space)
    res = model.resolve(leaf, log)
    inputs = (leaf.factor, leaf.velocity, leaf.target, leaf.mu, leaf.cor)
    grads = torch.autograd.grad((res.impulse * weights).sum(), inputs, allow_unused=True)
    grads = [torch.zeros_like(t) if g is None else g for g, t in zip(grads, inputs, strict=True)]
    return res.impulse.detach(), grads


def solver_comparison(runs: dict[str, TaskRun], samples: int, seed: int) -> list[dict]:
    """Impulses and gradients of the fast solver against cvxpylayers on recorded problems.

    Gradients (of a random linear function of the impulses, with respect to the factor, the
    velocity, the target, μ and e) are compared separately on the problems whose contacts all
    have μ > 0 and on those with a frictional contact at μ = 0, where the solution is not
    differentiable in μ and diffcp's derivative at the degenerate cone is not reliable.
    """
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for name, run in runs.items():
        for variant in ("CM", "CMr"):
            log = SolverLog()
            df = scale_f = scale_g = 0.0
            dg = {True: 0.0, False: 0.0}
            count = {True: 0, False: 0}
            for batch in stack_events(run.events, limit=samples):
                s = batch.space
                weights = torch.randn(s.batch, s.n_contacts, s.k, generator=generator)
                weights = weights.to(s.velocity)
                f1, g1 = _impulse_and_grads(ContactModel(variant=variant), s, weights, log)
                f2, g2 = _impulse_and_grads(
                    ContactModel(variant=variant, solver="reference"), s, weights, SolverLog()
                )
                df = max(df, float((f1 - f2).abs().max()))
                scale_f = max(scale_f, float(f2.abs().max()))
                frictionless = ((s.mu == 0) & (s.k >= 2)).any(-1)
                for flag in (True, False):
                    rows_ = frictionless == flag
                    if not bool(rows_.any()):
                        continue
                    count[flag] += int(rows_.sum())
                    for a, b in zip(g1, g2, strict=True):
                        dg[flag] = max(dg[flag], float((a[rows_] - b[rows_]).abs().max()))
                        scale_g = max(scale_g, float(b[rows_].abs().max()))
            total = count[True] + count[False]
            if total:
                rows.append(
                    {
                        "task": name,
                        "variant": variant,
                        "problems": total,
                        "max |Δf|": df,
                        "max |f|": scale_f,
                        "max |Δ gradient|, μ > 0": dg[False] if count[False] else float("nan"),
                        "max |Δ gradient|, some μ = 0": dg[True] if count[True] else float("nan"),
                        "max |gradient|": scale_g,
                        "fallbacks": log.fallbacks,
                    }
                )
    return rows


def default_tolerance_error(run: TaskRun, samples: int) -> dict[str, float]:
    """Compression impulses of cvxpylayers at SCS's default tolerance against the exact ones."""
    batch = stack_events(run.events, limit=samples)[0]
    s = batch.space
    zeros = torch.zeros_like(s.mu)
    exact = fast.solve(s.A, s.velocity, s.mu, zeros, s.k).impulse
    loose = reference.solve(s.factor, s.velocity, s.mu, zeros, s.k, solver_args={})
    tight = reference.solve(s.factor, s.velocity, s.mu, zeros, s.k)
    scale = float(exact.abs().max())
    return {
        "default": float((loose - exact).abs().max()) / scale,
        "tight": float((tight - exact).abs().max()) / scale,
    }


#: The contact models compared by :func:`uniqueness_study`.
UNIQUENESS_MODELS = {
    "CM as stated": ContactModel(least_norm=False),
    "CM": ContactModel(),
    "CMr": ContactModel(variant="CMr"),
}


def uniqueness_study(run: TaskRun) -> dict[str, float]:
    """Gyroscope impacts: A is singular, so problem (5) may have a segment of minimisers.

    The compression problems whose active-set system is singular at the interior point's
    solution (the fast solver's polish fails there, as stated) are the ones with a whole segment
    of minimisers: the interior point ends in the relative interior of the set of minimisers,
    where moving along the segment leaves the active set's equations satisfied. (The direct
    path for one spatial contact may instead end at an end of the segment, where the cone's
    surface pins it, and verify there: a minimiser too, so it cannot tell.) On those problems,
    solved as stated, the interior point and cvxpylayers return different impulses with the same
    velocity; CM's least-norm rule and CMr both make the minimiser unique, and the two solvers
    agree. Keys ``"<model> <quantity>"`` give the largest difference between the solvers for
    each model of :data:`UNIQUENESS_MODELS`.
    """
    out = {"problems": 0.0, "non-unique": 0.0}
    spaces = []
    for batch in stack_events(run.events):
        s = batch.space
        zeros = torch.zeros_like(s.mu)
        solution = fast.solve(s.A, s.velocity, s.mu, zeros, s.k, direct=False)
        out["problems"] += s.batch
        keep = ~solution.polished
        out["non-unique"] += float(keep.sum())
        if bool(keep.any()):
            idx = keep.nonzero()[:, 0]
            spaces.append(
                ContactSpace(*(t[idx] for t in (s.factor, s.velocity, s.target, s.mu, s.cor)), s.k)
            )
    for label, model in UNIQUENESS_MODELS.items():
        diff = {"compression impulse": 0.0, "compression velocity": 0.0, "final velocity": 0.0}
        for s in spaces:
            with torch.no_grad():
                a = model.resolve(s)
                b = replace(model, solver="reference").resolve(s)
            gap = (a.compression - b.compression).flatten(1)
            pairs = {
                "compression impulse": gap,
                "compression velocity": (s.A @ gap[..., None])[..., 0],
                "final velocity": a.velocity_after - b.velocity_after,
            }
            for key, value in pairs.items():
                diff[key] = max(diff[key], float(value.abs().max()))
        for key, value in diff.items():
            out[f"{label} {key}"] = value if spaces else float("nan")
    ranks = [torch.linalg.matrix_rank(b.space.A, rtol=1e-10) for b in stack_events(run.events)]
    out["rank-deficient A"] = float(torch.cat([(r < 3).double() for r in ranks]).mean())
    return out


def signorini_gap(run: TaskRun) -> dict[str, float]:
    """Normal velocity after compression at pressed contacts (the Signorini condition asks 0).

    Returns the fraction of pressed contacts that separate after compression and the median
    ratio of that normal velocity to the approach speed among them.

    The KKT conditions of (5) give complementarity for the whole contact vector, f^cᵀ v^c = 0,
    not per component: with friction the normal velocity after compression can be positive.
    """
    gaps, speeds = [], []
    for batch in stack_events(run.events):
        s = batch.space
        with torch.no_grad():
            res = ContactModel().resolve(s)
        after = s.velocity + (s.A @ res.compression.flatten(1)[..., None])[..., 0]
        v_n = after.reshape(s.batch, -1, s.k)[..., 0]
        before = s.velocity.reshape(s.batch, -1, s.k)[..., 0]
        pressed = res.compression[..., 0] > 1e-9
        gaps.append(v_n[pressed])
        speeds.append(before[pressed].abs())
    gap, speed = torch.cat(gaps), torch.cat(speeds)
    positive = gap > 1e-6 * speed
    ratio = gap[positive] / speed[positive]
    return {
        "pressed contacts": float(len(gap)),
        "positive fraction": float(positive.double().mean()),
        "median ratio": float(ratio.median()) if len(ratio) else 0.0,
    }


def _difference(loss, mu: Tensor, cor: Tensor, which: str, idx, h: float = 1e-6) -> float:
    """Finite difference of ``loss`` in one entry: central inside the admissible range and
    second-order one-sided, into it, at the bounds μ = 0 and e ∈ {0, 1}."""
    value = mu if which == "mu" else cor
    lower = float(value[idx]) - 2 * h >= 0
    upper = which == "mu" or float(value[idx]) + 2 * h <= 1

    def at(delta: float) -> float:
        moved = value.clone()
        moved[idx] += delta
        with torch.no_grad():
            return float(loss(moved, cor) if which == "mu" else loss(mu, moved))

    if lower and upper:
        return (at(h) - at(-h)) / (2 * h)
    if upper:
        return (-3 * at(0.0) + 4 * at(h) - at(2 * h)) / (2 * h)
    return (3 * at(0.0) - 4 * at(-h) + at(-2 * h)) / (2 * h)


def gradient_check(
    runs: dict[str, TaskRun], samples: int, names=("BP5-e", "BP5", "CP3", "Gyro")
) -> dict[str, float]:
    """Autograd against finite differences of d(velocity after)/d(μ, e) on recorded problems.

    The gyroscope uses CMr (under CM its impulse is not unique). At μ = 0 and at e = 0 or 1 the
    differences are one-sided, into the admissible range.
    """
    worst = 0.0
    checked = 0
    for name in names:
        for batch in stack_events(runs[name].events, limit=samples):
            s = batch.space
            model = ContactModel(variant="CMr" if s.k == 3 else "CM")
            weights = torch.linspace(-1, 1, s.velocity.shape[1], dtype=s.velocity.dtype)

            def loss(mu: Tensor, cor: Tensor, s=s, model=model, weights=weights) -> Tensor:
                res = model.resolve(replace(s, mu=mu, cor=cor))
                return (res.velocity_after * weights).sum()

            mu = s.mu.detach().clone().requires_grad_(True)
            cor = s.cor.detach().clone().requires_grad_(True)
            grads = dict(
                zip(("mu", "cor"), torch.autograd.grad(loss(mu, cor), (mu, cor)), strict=True)
            )
            for which, grad in grads.items():
                fd = torch.zeros_like(grad)
                for idx in np.ndindex(*grad.shape):
                    fd[idx] = _difference(loss, s.mu, s.cor, which, idx)
                # Relative to the larger gradient, floored at the finite differences' noise.
                scale = max(float(fd.abs().max()), float(grad.abs().max()), 1e-6)
                worst = max(worst, float((grad - fd).abs().max()) / scale)
            checked += s.batch
    return {"problems": float(checked), "max relative error": worst}


