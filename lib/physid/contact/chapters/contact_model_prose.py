"""What the prose of "A differentiable contact model" (``book/contact_model.md``) says about
each result, as functions a test can check.

Each ``*_prose`` function takes results the chapter computed and returns the numbers and the
phrases its prose quotes, by glue name, for :func:`physid.book.display.glue_all`. A number the
prose was written for a range of is a :class:`~physid.book.display.Bounded`; a count with its
noun comes from :func:`~physid.book.display.plural`. A phrase that depends on a result (whether
the naive inverse inertia stayed semi-definite, whether Newton's law gains energy at the tasks'
own coefficients, whether CM met non-unique problems, where the explorer's energy drift comes
from) is decided here, not in a hidden cell. :func:`inputs_prose` glues the tasks' settings the
prose names, so the text follows the code.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from physid.book.display import Bounded, plural
from physid.contact import active_sets, datasets, events, fast
from physid.contact.chapters import contact_model as ex
from physid.contact.chapters.contact_model import ImpactStudy, TaskRun
from physid.contact.chapters.contact_model_claims import elastic_reasons
from physid.contact.chapters.contact_model_gallery import EXPLORER_SECONDS, Trajectory
from physid.contact.chapters.contact_model_timing import BatchTiming
from physid.contact.model import COMPENSATION, LEAST_NORM, ContactModel
from physid.contact.reference import SOLVER_ARGS
from physid.contact.tasks import make_task

__all__ = [
    "budget_prose",
    "cmr_prose",
    "data_prose",
    "elastic_prose",
    "equality_prose",
    "gallery_prose",
    "inputs_prose",
    "jump_prose",
    "penetration_prose",
    "psd_prose",
    "restitution_prose",
    "signorini_prose",
    "single_problem_iterations",
    "solver_prose",
    "timing_prose",
]


def inputs_prose() -> dict[str, Any]:
    """The settings the prose names: the CP3 and gyroscope coefficients, the model's constants,
    the systems' geometry, the noise levels and the paper's data-set sizes."""
    cp3, gyro, rope, bp5 = (make_task(name) for name in ("CP3", "Gyro", "Rope", "BP5"))
    pendulum, gyro_system, chain = cp3.system, gyro.system, rope.system
    lengths = pendulum.lengths
    masses = bp5.system.masses
    return {
        "cp3_mu": float(cp3.mu[0]),
        "cp3_cor": float(cp3.cor[0]),
        "gyro_mu": float(gyro.mu[0]),
        "gyro_cor": float(gyro.cor[0]),
        "compensation_denominator": 1 / COMPENSATION,
        "cmr_eps": ContactModel().reg,
        "ground": pendulum.ground,
        "link_lengths": ", ".join(f"{length:g}" for length in lengths[:-1])
        + f" and {lengths[-1]:g}",
        "gyro_offset": gyro_system.com_offset,
        "gyro_rim": plural(gyro_system.rim_weights.shape[0], "point"),
        "gyro_wall": gyro_system.wall,
        "gyro_seconds": gyro.n_steps * gyro.dt,
        "rope_nodes": plural(chain.n_points, "mass", "masses"),
        "rope_bend": chain.bend,
        "rope_stretch_low": chain.stretch[0],
        "rope_stretch_high": chain.stretch[1],
        "noise_levels": " and ".join(f"{std:g}" for std in ex.NOISE_LEVELS),
        "paper_sizes": "/".join(str(n) for n in ex.SIZES["paper"].data),
        "bp_radius_min": min(bp5.system.radii_np),
        "bp_radius_max": max(bp5.system.radii_np),
        "bp_mass_ratios": ":".join(f"{m / masses.min():g}" for m in masses),
    }


def jump_prose(cp3: Trajectory, dt: float) -> dict[str, Any]:
    """The last bob's vertical velocity just before and after its first impulse in ``cp3``
    (a gallery trajectory), and the step ``dt`` it jumps within."""
    step = int(cp3.contact_steps[0])
    vy = cp3.v[:, -1]
    return {"jump_before": vy[step - 1], "jump_after": vy[step], "cp3_dt": dt}


def psd_prose(psd: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The naive against the factorised inverse inertia (the rows of
    :func:`~physid.contact.chapters.contact_model.psd_rows`): how many problems, the largest
    gap, the smallest eigenvalue ratio, the gyroscope's share of singular A, and whether the
    naive A ever came out indefinite."""
    psd_min = min(r["min λ_min/λ_max"] for r in psd)
    gyro = next(r for r in psd if r["task"] == "Gyro")
    return {
        "psd_problems_text": plural(sum(r["contact problems"] for r in psd), "contact problem"),
        "psd_min": Bounded(psd_min, -1.0, 1.0),
        "psd_gap": max(r["max |A − FᵀF| / max |A|"] for r in psd),
        "gyro_singular_pct": Bounded(100 * gyro["singular (λ_min/λ_max < 1e-10)"], 0, 100),
        "psd_naive_phrase": (
            "there rounding makes the naive A slightly indefinite, while FᵀF never is"
            if psd_min < 0
            else "even the naive A stayed semi-definite in these problems"
        ),
    }


def signorini_prose(signorini: Mapping[str, float]) -> dict[str, Any]:
    """The share of CP3's pressed contacts that separate after compression, and their median
    normal velocity relative to the approach speed (from
    :func:`~physid.contact.chapters.contact_model.signorini_gap`)."""
    return {
        "signorini_pct": 100 * signorini["positive fraction"],
        "signorini_ratio": signorini["median ratio"],
    }


def restitution_prose(
    studies: Sequence[ImpactStudy], own: Sequence[ImpactStudy], study_mu: float, study_cor: float
) -> dict[str, Any]:
    """Newton's against Poisson's hypothesis: ``studies`` (CP3, then the gyroscope) at the
    rough, elastic setting (``study_mu``, ``study_cor``), ``own`` at the tasks' coefficients.
    The phrase says whether Newton's law still gains energy at the tasks' own coefficients."""
    gains = [s.gain_fraction("newton") for s in studies]
    own_gains = [s.gain_fraction("newton") for s in own]
    poisson_max = max(s.max_relative_gain("poisson") for s in [*studies, *own])
    return {
        "study_mu": study_mu,
        "study_cor": study_cor,
        "newton_cp3_pct": Bounded(100 * gains[0], 0, 100),
        "newton_cp3_max": studies[0].max_relative_gain("newton"),
        "newton_gyro_pct": Bounded(100 * gains[1], 0, 100),
        "newton_cp3_own_pct": Bounded(100 * own_gains[0], 0, 100),
        "newton_gyro_own_pct": Bounded(100 * own_gains[1], 0, 100),
        "newton_own_phrase": (
            "the gain needs friction strong enough to reverse the slip during an elastic "
            "impact, and the tasks' own coefficients do not give it"
            if max(own_gains) == 0
            else "fewer than at the rough, elastic setting, since the gain needs friction "
            "strong enough to reverse the slip during a bouncing impact"
        ),
        "poisson_max": max(poisson_max, 0.0),
    }


def equality_prose(equality: Mapping[str, float]) -> dict[str, Any]:
    """How often the restitution bound (6) is an equality, for large and for other
    coefficients (from :func:`~physid.contact.chapters.contact_model.poisson_equality`)."""
    return {
        "equality_large_pct": Bounded(100 * equality["large equality fraction"], 0, 100),
        "equality_large_n": plural(int(equality["large contacts"]), "pressed contact"),
        "equality_other_pct": Bounded(100 * equality["other equality fraction"], 0, 100),
        "equality_other_n": plural(int(equality["other contacts"]), "pressed contact"),
    }


def penetration_prose(penetration: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The length of the release from rest and the resting penetration (mm) where the
    correction balances the fall per step (from
    :func:`~physid.contact.chapters.contact_model_gallery.penetration_study`)."""
    return {
        "pen_seconds": penetration["times"][-1],
        "pen_equilibrium_mm": 1e3 * float(penetration["equilibrium"]),
    }


def projection_prose(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The book's projection of the penetration target against the authors' (the rows of
    :func:`~physid.contact.chapters.contact_model.target_projection_rows`): the largest
    difference without equality constraints, and the largest with them and its task."""
    free = [r for r in rows if r["equality constraints"] == "no"]
    tied = [r for r in rows if r["equality constraints"] == "yes"]
    worst = max(tied, key=lambda r: r["largest difference (m/s)"])
    return {
        "projection_free": max(r["largest difference (m/s)"] for r in free),
        "projection_free_tasks": ", ".join(r["task"] for r in free),
        "projection_tied": worst["largest difference (m/s)"],
        "projection_tied_task": worst["task"],
        "projection_tied_tasks": ", ".join(r["task"] for r in tied),
    }


def elastic_prose(elastic: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The energy changes of the impulses in the elastic, frictionless tasks (the rows of
    :func:`~physid.contact.chapters.contact_model.elastic_energy_rows`), and the verdict at
    the 1 % an energy plot can show: within it, or the reasons it is not."""
    isolated = max(r["isolated, largest |ΔKE|/KE"] for r in elastic)
    loss = max(max(r["simultaneous, largest loss/KE"] for r in elastic), 0.0)
    comp_row = max(elastic, key=lambda r: r["with compensation, largest gain/KE"])
    comp = max(comp_row["with compensation, largest gain/KE"], 0.0)
    with_comp = max(r["with compensation, largest |ΔKE|/KE"] for r in elastic)
    return {
        "elastic_isolated": isolated,
        "elastic_gain": max(max(r["any, largest gain/KE"] for r in elastic), 0.0),
        "elastic_loss": loss,
        "elastic_simultaneous_text": plural(
            sum(r["simultaneous"] for r in elastic), "simultaneous impact"
        ),
        "elastic_comp": comp,
        "elastic_comp_task": comp_row["task"],
        "elastic_with": with_comp,
        "elastic_verdict": (
            "Every impulse stays within that scale."
            if with_comp <= 1e-2
            else " ".join(elastic_reasons(isolated, loss, comp, comp_row["task"], with_comp))
        ),
    }


def cmr_prose(uniqueness: Mapping[str, float]) -> dict[str, Any]:
    """CM against CMr on the gyroscope (from
    :func:`~physid.contact.chapters.contact_model.uniqueness_study`): the share of
    rank-deficient A, the non-unique problems, and what the solvers' disagreement under CM as
    stated and their agreement under least-norm CM read as, with or without such problems."""
    n_nonunique = int(uniqueness["non-unique"])
    problems = plural(int(uniqueness["problems"]), "gyroscope compression problem")
    if n_nonunique:
        cm_phrase = (
            "Solving them as stated, cvxpylayers and our solver return compression impulses "
            f"that differ by up to {uniqueness['CM as stated compression impulse']:.1e} N·s, "
            "with the same velocity after compression (to "
            f"{uniqueness['CM as stated compression velocity']:.1e} m/s). The impulse's normal "
            "component fixes the lower bound (6) of the restitution impulse, though, so the "
            f"final velocities differ by up to {uniqueness['CM as stated final velocity']:.1e} "
            "m/s: the outcome of problem (5) as stated depends on which minimiser the solver "
            "returns."
        )
        least_norm_phrase = (
            "On the gyroscope's non-unique problems the two solvers then agree to "
            f"{uniqueness['CM final velocity']:.1e} m/s in the final velocities."
        )
    else:
        cm_phrase = "With none at this scale, the two solvers cannot disagree under CM."
        least_norm_phrase = "No such problem came up at this scale to show it."
    return {
        "rank_pct": Bounded(100 * uniqueness["rank-deficient A"], 0, 100),
        "nonunique_text": f"{n_nonunique:,} of the {problems}",
        "least_norm": LEAST_NORM,
        "cm_phrase": cm_phrase,
        "least_norm_phrase": least_norm_phrase,
    }


def solver_prose(
    runs: Mapping[str, TaskRun],
    comparison: Sequence[Mapping[str, Any]],
    tolerance: Mapping[str, float],
) -> dict[str, Any]:
    """How the data sets' contact problems were solved (the runs' solver logs), how far the
    fast solver and cvxpylayers differ (the rows of
    :func:`~physid.contact.chapters.contact_model.solver_comparison`; ``max_dg`` is also the
    input of the differentiability claim), and SCS's error at its default and at our tolerance
    (``tolerance``, from :func:`~physid.contact.chapters.contact_model.default_tolerance_error`)."""
    logs = [run.data.log for run in runs.values()]
    return {
        "problems_total": plural(sum(log.problems for log in logs), "contact problem"),
        "fast_exact": sum(log.fast_exact for log in logs),
        "fast_enumerated": sum(log.fast_enumerated for log in logs),
        "fast_unpolished": sum(log.fast_unpolished for log in logs),
        "fallbacks_text": plural(sum(log.fallbacks for log in logs), "cvxpylayers fallback"),
        "max_df": max(r["max |Δf|"] for r in comparison),
        "max_dg": np.nanmax([r["max |Δ gradient|, μ > 0"] for r in comparison]),
        "max_dg_mu0": np.nanmax([r["max |Δ gradient|, some μ = 0"] for r in comparison]),
        "scs_default": tolerance["default"],
        "scs_tight": tolerance["tight"],
        "scs_eps": SOLVER_ARGS["eps"],
    }


def single_problem_iterations(run: TaskRun) -> int:
    """The interior-point iterations the fast solver runs on the first recorded contact
    problem of ``run``, without a lower bound and without enumerating its active sets: the
    interior point's fixed cost for one phase."""
    pool = events.stack_events(run.events)[0].space
    lower = torch.zeros_like(pool.mu[:1])
    return fast.solve(
        pool.A[:1], pool.velocity[:1], pool.mu[:1], lower, pool.k, direct=False
    ).iterations


def timing_prose(
    timings: Sequence[BatchTiming], repeat: int, window: float, iterations: int
) -> dict[str, Any]:
    """The timing study's numbers: its ``repeat`` and ``window``, the rates at the largest
    batch, the speed-up over per-sample cvxpylayers there (median and range) and for a single
    problem, and the interior-point ``iterations`` of one phase."""
    last, first = timings[-1], timings[0]
    per_sample = last.speedup("cvxpylayers, per sample")
    return {
        "timing_repeat_text": plural(repeat, "time"),
        "timing_window": window,
        "timing_batch": last.batch,
        "timing_fast": last.rate("fast"),
        "timing_batched": last.rate("cvxpylayers, batched"),
        "timing_single": last.rate("cvxpylayers, per sample"),
        "timing_ratio": per_sample.median,
        "timing_ratio_low": per_sample.low,
        "timing_ratio_high": per_sample.high,
        "timing_one": first.speedup("cvxpylayers, per sample").median,
        "ip_iterations_text": plural(iterations, "interior-point iteration"),
        "planar_sets_text": plural(active_sets.set_count(1, 2), "candidate active set"),
    }


def gallery_prose(gallery: Mapping[str, Trajectory]) -> dict[str, Any]:
    """The largest energy drift (J) over the elastic, frictionless trajectories of the
    gallery (:data:`~physid.contact.chapters.contact_model.GALLERY`)."""
    drifts = [
        float(np.abs(gallery[elastic].energy - gallery[elastic].energy[0]).max())
        for _, elastic in ex.GALLERY
        if elastic is not None
    ]
    return {"gallery_drift": max(drifts)}


def data_prose(
    scale: str, data_sizes: Sequence[int], half_reasons: Sequence[str]
) -> dict[str, Any]:
    """The data sets as the prose states them: the generator's chunk length and collision
    probability, the build's ``scale`` and ``data_sizes`` (training, validation, test), the
    robustness tasks, and whether about half the chunks collide (``half_reasons``: the
    tasks that miss it, from the claim)."""
    defaults = inspect.signature(datasets.generate).parameters
    return {
        "chunk_states": plural(defaults["chunk_len"].default, "consecutive state"),
        "p_collision": Bounded(defaults["p_collision"].default, 0, 1),
        "n_total_text": plural(sum(data_sizes), "trajectory", "trajectories"),
        "scale_name": scale,
        "run_sizes": "/".join(str(n) for n in data_sizes),
        "robust_tasks": ", ".join(ex.ROBUSTNESS_TASKS),
        "half_phrase": (
            "that holds for every task but " + "; ".join(half_reasons)
            if half_reasons
            else "that holds for every task (between 35 % and 65 %)"
        ),
    }


def budget_prose(budget: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Where the explorer's energy goes (the rows of
    :func:`~physid.contact.chapters.contact_model_gallery.energy_budget`, its first row the
    base run): the energies, the changes at and between impulses, the largest constraint
    residual, which of the two dominates, and how the change between impulses falls when the
    step is halved, against the 16 of a fourth-order method."""
    base = budget[0]
    dt = base["Δt (s)"]
    nocomp = next(r for r in budget if r["Δt (s)"] == dt and r["compensation"] == "off")
    half_step = next(r for r in budget if r["Δt (s)"] == dt / 2 and r["compensation"] == "1/8")
    flow, kick = abs(base["between impulses (J)"]), abs(base["at impulses (J)"])
    order = base["between impulses (J)"] / half_step["between impulses (J)"]
    return {
        "explorer_seconds": EXPLORER_SECONDS,
        "budget_e0": base["initial energy (J)"],
        "budget_e1": base["initial energy (J)"] + base["total change (J)"],
        "budget_pct": 100 * base["total change (J)"] / base["initial energy (J)"],
        "budget_impulse": base["at impulses (J)"],
        "budget_nocomp": nocomp["at impulses (J)"],
        "budget_residual": base["largest constraint residual (m²)"],
        "budget_flow": base["between impulses (J)"],
        "budget_verdict": (
            "the drift comes from the integrator, which conserves energy only up to its "
            "truncation error, and not from the contact model"
            if flow > 10 * kick
            else "the contact model accounts for a sizeable part of the change"
        ),
        "budget_order": order,
        "budget_order_phrase": (
            ", close to the 2⁴ = 16 of a fourth-order method"
            if 8 <= order <= 32
            else " (the truncation error of a fourth-order method alone would give 16)"
        ),
    }
