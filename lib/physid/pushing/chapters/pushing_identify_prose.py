"""What the prose of "Identifying mass and friction by pushing" (``book/pushing_identify.md``)
says about each result, as functions a test can check.

Each ``*_prose`` function takes results the chapter computed
(:mod:`physid.pushing.chapters.pushing_identify`, summarised by
:mod:`~physid.pushing.chapters.pushing_identify_claims`) and returns the numbers and the
phrases its prose quotes, by glue name, for :func:`physid.book.display.glue_all`. A number the
prose was written for a range of is a :class:`~physid.book.display.Bounded`; a count with its
noun comes from :func:`~physid.book.display.plural`. A phrase that depends on a result (whether
the time budget or the simulations end the runs before the paper's headline time, which
methods never improve, whether the finite-difference cost is the same for every object) is
decided here, not in a hidden cell. The settings the prose names (the search box and its start,
the engine's step, Algorithm 1's rate, the methods' steps, the paper's sizes) are read from the
library, so the text follows the code. :func:`lcp_cells`, :func:`fd_cost` and
:func:`converged_steps` are the numbers the chapter's claims share with its prose.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np

from physid.book.display import Bounded, plural
from physid.pushing import load_object, observations, target
from physid.pushing.bullet import SETUPS
from physid.pushing.chapters import pushing_identify as study
from physid.pushing.chapters.pushing_identify import (
    CostPoint,
    Directions,
    Identifiability,
    IdentifySizes,
    MethodRun,
    PushCountRun,
    UncertaintyMap,
    WorldFloor,
)
from physid.pushing.chapters.pushing_identify_claims import (
    CONVERGED_SHARE,
    FeatureContrasts,
    PooledCosines,
    ProtocolErrors,
    cosine_text,
    gap_rows,
    listing,
    mm,
    schedule_errors,
    slope_text,
    travel_correlations,
    world_floors,
)
from physid.pushing.identify import METHODS, travel_cap

__all__ = [
    "VARIANTS",
    "algorithm1_prose",
    "converged_steps",
    "cost_prose",
    "direction_prose",
    "fd_cost",
    "fig3_prose",
    "friction_model_prose",
    "gap_prose",
    "headline_prose",
    "identifiability_prose",
    "lcp_cells",
    "long_prose",
    "loss_prose",
    "maps_prose",
    "methods_prose",
    "protocol_prose",
    "push_counts_prose",
    "robot_prose",
    "schedule_prose",
    "search_prose",
    "uncertainty_prose",
    "variants_prose",
    "world_prose",
]


def _paper() -> IdentifySizes:
    """The paper's sizes, which the prose quotes beside the run's."""
    return study.SIZES["paper"]


def _in_box(unit: float, limits: tuple[float, float]) -> float:
    """A coordinate of the unit box as a value within ``limits``."""
    return limits[0] + unit * (limits[1] - limits[0])


def identifiability_prose(ident: Identifiability, factor: float, duration: float
                          ) -> dict[str, Any]:
    """What pushes can identify: the pushes of ``duration`` s, the global mass ``factor`` and
    the mean displacements (mm) of
    :func:`~physid.pushing.chapters.pushing_identify.identifiability`, with the range of the
    per-cell mass factors."""
    return {
        "ident_pushes_text": plural(ident.pushes, "random push", "random pushes"),
        "ident_duration": duration,
        "ident_factor": factor,
        "ident_global_mm": Bounded(1e3 * ident.global_scale, 0, np.inf),
        "ident_product_mm": Bounded(1e3 * ident.product_kept, 0, np.inf),
        "ident_masses_mm": Bounded(1e3 * ident.masses_alone, 0, np.inf),
        "mass_factor_low": observations.MASS_FACTOR[0],
        "mass_factor_high": observations.MASS_FACTOR[1],
    }


def search_prose() -> dict[str, Any]:
    """The authors' search box (masses in kg, frictions) and their start in it, every cell
    alike (:func:`~physid.pushing.target.start_point`)."""
    x0 = target.start_point(1)
    return {
        "mass_low": target.MASS_LIMITS[0],
        "mass_high": target.MASS_LIMITS[1],
        "friction_low": target.FRICTION_LIMITS[0],
        "friction_high": target.FRICTION_LIMITS[1],
        "start_mass": _in_box(x0[0], target.MASS_LIMITS),
        "start_friction": _in_box(x0[1], target.FRICTION_LIMITS),
    }


def loss_prose() -> dict[str, Any]:
    """Eq. (1) as the library computes it: the observation period, the engine's step, the
    steps of one restarted interval and the default noise of the target's likelihood (mm)."""
    noise = inspect.signature(target.PushingTarget).parameters["noise"].default
    return {
        "obs_period_s": observations.OBSERVATION_PERIOD,
        "engine_dt_ms": 1e3 * target.DT,
        "interval_steps_text": plural(round(observations.OBSERVATION_PERIOD / target.DT),
                                      "engine step"),
        "noise_mm": 1e3 * noise,
    }


def algorithm1_prose() -> dict[str, Any]:
    """Algorithm 1's rate α, its decay γ and its stopping loss ε, as the method runs them."""
    options = METHODS["algorithm1"].options
    return {
        "alg1_alpha": options["alpha"],
        "alg1_decay": options["decay"],
        "alg1_epsilon": options["epsilon"],
    }


def direction_prose(directions: Sequence[Directions], pooled: PooledCosines, iterations: int
                    ) -> dict[str, Any]:
    """The direction study: its objects, its ``iterations`` iterates, on how many pushes §6's
    assumptions held and the mean cosines of ``pooled`` (both readings)
    (:func:`~physid.pushing.chapters.pushing_identify_claims.pool_cosines`)."""
    return {
        "direction_objects_text": listing([f"the {d.object}" for d in directions]),
        "direction_iterates_text": plural(iterations, "iterate"),
        "direction_holds_text": f"{pooled.held} of the {plural(pooled.pushes, 'push', 'pushes')}",
        "direction_friction_text": cosine_text(pooled.friction),
        "direction_mass_text": cosine_text(pooled.mass),
        "direction_friction_not_text": cosine_text(pooled.friction_not),
        "direction_pinned_text": cosine_text(pooled.friction_pinned),
        "direction_pinned_mass_text": cosine_text(pooled.mass_pinned),
    }


def methods_prose(cells: int, name: str, n_train: int) -> dict[str, Any]:
    """The methods' table, for an object ``name`` of ``cells`` cells and ``n_train`` training
    pushes: the finite-difference steps (the authors' in kg of a mass), weighted sampling's
    spread and the authors' budget."""
    weighted = METHODS["weighted"].options
    return {
        "table_cells": cells,
        "table_object": name,
        "table_pushes_text": plural(n_train, "training push", "training pushes"),
        "fd_step_kg": METHODS["fd-authors"].options["step"]
        * (target.MASS_LIMITS[1] - target.MASS_LIMITS[0]),
        "fd_small_step": METHODS["fd-small"].options["step"],
        "weighted_sigma": weighted["sigma"],
        "weighted_min_sigma": weighted["min_sigma"],
        "authors_budget": _paper().budget.simulations,
    }


def lcp_cells(costs: Sequence[CostPoint]) -> list[int]:
    """The sizes (cells) at which the LCP formulation was timed."""
    return [p.cells for p in costs if np.isfinite(p.autograd_lcp)]


def cost_prose(costs: Sequence[CostPoint], slopes: dict[str, float]) -> dict[str, Any]:
    """The cost study: the push's duration, the sizes timed (all, and the LCP formulation's),
    the log-log ``slopes``
    (:func:`~physid.pushing.chapters.pushing_identify_claims.gradient_slopes`) and the seconds
    of Algorithm 1 and of the rigid formulation's exact gradient at the largest size (wall
    times, in milliseconds)."""
    cells = [p.cells for p in costs]
    return {
        "cost_push_s": study.COST_DURATION,
        "cost_min_cells": min(cells),
        "cost_max_cells": max(cells),
        "cost_lcp_max_cells": max(lcp_cells(costs)),
        "slope_alg1_text": slope_text(slopes["algorithm1"]),
        "slope_rigid_text": slope_text(slopes["autograd_rigid"]),
        "slope_lcp_text": slope_text(slopes["autograd_lcp"]),
        "cost_alg1_max_ms": Bounded(1e3 * costs[-1].algorithm1, 0, np.inf),
        "cost_rigid_max_ms": Bounded(1e3 * costs[-1].autograd_rigid, 0, np.inf),
    }


def _per_object(values: dict[str, float]) -> str:
    """'17.2 mm on the crimp and …'."""
    return listing([f"{mm(v)} on the {n}" for n, v in values.items()])


def protocol_prose(sizes: IdentifySizes, errors: ProtocolErrors) -> dict[str, Any]:
    """The protocol at this scale (``sizes``) beside the paper's: the ground truths' friction
    factors, the objects, experiments, pushes, budget and evaluations, the objects run for the
    maps only, and the test error at the start and of the truth (the floor) per object of
    ``errors``."""
    paper = _paper()
    return {
        "friction_factor_low": observations.FRICTION_FACTOR[0],
        "friction_factor_high": observations.FRICTION_FACTOR[1],
        "protocol_duration": sizes.duration,
        "protocol_objects_text": listing([f"the {n}" for n in errors.objects]),
        "protocol_experiments_text": plural(sizes.experiments, "experiment"),
        "headline_experiments_text": plural(sizes.headline_experiments, "experiment"),
        "paper_experiments_text": plural(paper.experiments, "experiment"),
        "protocol_train_text": plural(sizes.n_train, "training push", "training pushes"),
        "protocol_test_text": plural(sizes.n_test, "test push", "test pushes"),
        "paper_test_text": plural(paper.n_test, "test push", "test pushes"),
        "paper_train_text": plural(paper.n_train, "random training push",
                                   "random training pushes"),
        "budget_sims": sizes.budget.simulations,
        "budget_s": sizes.budget.seconds,
        "paper_budget_sims": paper.budget.simulations,
        "paper_budget_s": paper.budget.seconds,
        "n_eval": sizes.n_eval,
        "paper_n_eval": paper.n_eval,
        "map_objects_text": listing([f"the {n}" for n in sizes.map_objects])
        if sizes.map_objects else "no other object at this scale",
        "start_errors_text": _per_object(errors.start),
        "floor_errors_text": _per_object(errors.floor),
    }


def fig3_prose(errors: ProtocolErrors, methods: Sequence[str]) -> dict[str, Any]:
    """Fig. 3 in words: where Algorithm 1 and rigid exact-gradient descent end per object, and
    which of ``methods`` never improved the training loss (and so stayed at the start)."""
    no_step = [METHODS[m].label for m in methods if errors.improvements[m] == 0]
    many = len(no_step) > 1
    return {
        "alg1_summary_text": f"Algorithm 1 ends at {_per_object(errors.end['algorithm1'])}.",
        "rigid_summary_text": "Gradient descent with the exact gradient through the rigid "
        f"formulation, with the same budget, ends at {_per_object(errors.end['autograd-rigid'])}.",
        "stalled_text": (
            f"{listing(no_step)} {'find' if many else 'finds'} no improvement of the training "
            f"loss within the budget and {'stay' if many else 'stays'} at the start."
        ) if no_step else "Every method improves on the start at least once.",
    }


def fd_cost(objects: Sequence[str], n_train: int) -> int:
    """Simulations of one finite-difference gradient, (2k + 1) n, for the largest of
    ``objects`` (k its cells) and ``n_train`` training pushes."""
    return (2 * max(len(load_object(n)) for n in objects) + 1) * n_train


def _headline_budget(errors: ProtocolErrors, runs: Sequence[MethodRun]) -> str:
    """Why the headline error is read where it is: the time budget is shorter than
    :data:`~physid.pushing.chapters.pushing_identify.HEADLINE_SECONDS`, or every Algorithm 1
    run of the compared objects spent its simulations before it, or they reach it."""
    seconds, budget = study.HEADLINE_SECONDS, errors.budget
    if budget.seconds < seconds:
        return (f"the runs' time budget, {budget.seconds:g} s, is shorter than the paper's "
                f"{seconds:g} s, and their {budget.simulations} simulations end them sooner "
                "still, so this is the error at the end of the budget.")
    if all(r.used_seconds < seconds for r in runs
           if r.method == "algorithm1" and r.object in errors.objects):
        return (f"the runs' budget of {budget.simulations} simulations ends before {seconds:g} "
                "s, so this is the error at the end of the budget.")
    return f"the runs reach {seconds:g} s within their budget."


def headline_prose(errors: ProtocolErrors, runs: Sequence[MethodRun], long_text: str,
                   fd_simulations: int) -> dict[str, Any]:
    """§7.3's headline and baselines in words: the longer runs (``long_text``,
    :func:`~physid.pushing.chapters.pushing_identify_claims.longer_budget_text`), Algorithm 1's
    error within the headline time and why it is read there (``runs``: the protocol's), the
    sampling methods and Algorithm 1 at the budget's simulations, and the finite differences
    (``fd_simulations`` a gradient, :func:`fd_cost`) against Algorithm 1 at the end."""
    fd_text = listing([f"{mm(errors.final[m])} ({METHODS[m].label.lower()})"
                       for m in ("fd-authors", "fd-small")])
    return {
        "long_text": long_text,
        "headline_ours_text": mm(errors.headline["algorithm1"]),
        "headline_budget_text": _headline_budget(errors, runs),
        "random_text": mm(errors.at_budget["random"]),
        "weighted_text": mm(errors.at_budget["weighted"]),
        "alg1_at_budget_text": mm(errors.at_budget["algorithm1"]),
        "fd_cost_text": f"{fd_simulations:,}" if len(errors.objects) == 1
        else f"up to {fd_simulations:,}",
        "fd_text": f"{fd_text}, against {mm(errors.final['algorithm1'])} for Algorithm 1",
    }


def friction_model_prose(by_model: dict[int, ProtocolErrors]) -> dict[str, Any]:
    """The friction models of the headline in words (``by_model``:
    :func:`~physid.pushing.chapters.pushing_identify_claims.friction_model_errors`): per model,
    the floor and Algorithm 1's and exact-gradient descent's error within the headline's
    seconds, mean over the paper's objects."""
    parts = []
    for dirs, errors in by_model.items():
        floor = float(np.mean([errors.floor[n] for n in errors.paper_objects]))
        name = f"{dirs} directions" + (" (the paper's)" if dirs == study.PAPER_DIRS else "")
        parts.append(f"with {name} the floor is {mm(floor)}, Algorithm 1 reaches "
                     f"{mm(errors.headline['algorithm1'])} and exact-gradient descent "
                     f"{mm(errors.headline['autograd-rigid'])}")
    return {"friction_models_text": "; ".join(parts),
            "friction_model_counts_text": listing([str(d) for d in by_model])}


def schedule_prose(runs: Sequence[MethodRun]) -> dict[str, Any]:
    """The direction/schedule ablation in words (``runs``:
    :func:`~physid.pushing.chapters.pushing_identify.schedule_ablation`): each direction under
    each schedule, and how far each schedule lets a coordinate travel."""
    errors = schedule_errors(runs)
    alg1_mass, alg1_friction = travel_cap(study.schedule_options("algorithm1"))
    descent_mass, descent_friction = travel_cap(study.schedule_options("autograd-rigid"))

    def at(method: str, schedule: str) -> str:
        return mm(errors.get((method, schedule), float("nan")))

    return {
        "schedule_text": (
            f"Algorithm 1's direction reaches {at('algorithm1', 'algorithm1')} under its own "
            f"schedule and {at('algorithm1', 'autograd-rigid')} under exact descent's; the "
            f"exact gradient reaches {at('autograd-rigid', 'autograd-rigid')} under its own "
            f"and {at('autograd-rigid', 'algorithm1')} under Algorithm 1's"),
        "alg1_friction_cap": alg1_friction, "alg1_mass_cap": alg1_mass,
        "descent_friction_cap": descent_friction, "descent_mass_cap": descent_mass,
    }


def world_prose(floors: Sequence[WorldFloor]) -> dict[str, Any]:
    """The world ablation in words (``floors``:
    :func:`~physid.pushing.chapters.pushing_identify.world_ablation`): per friction model, the
    floor in the book's setup and in each other setup (mean over the paper's objects), and the
    largest change each kind of choice makes: the friction model's (the book's setup) and each
    setup's against the book's (per model)."""
    means = world_floors(floors)
    models = sorted({d for _, d in means}, key=lambda d: (d != study.PAPER_DIRS, d))
    setups = [w for w in SETUPS if any(k[0] == w for k in means)]
    parts = []
    for dirs in models:
        name = f"{dirs} directions" + (" (the paper's)" if dirs == study.PAPER_DIRS else "")
        others = ", ".join(f"{mm(means[(w, dirs)])} with the {SETUPS[w].label}"
                           for w in setups if w != "book" and (w, dirs) in means)
        parts.append(f"with {name} the floor is {mm(means[('book', dirs)])} in the book's "
                     f"setup" + (f" and {others}" if others else ""))
    return {"world_text": "; ".join(parts),
            "world_setups_text": listing([SETUPS[w].label for w in setups])}


def long_prose(long: Sequence[MethodRun], simulations: int) -> dict[str, Any]:
    """The longer runs' budget (``simulations``) and what
    :data:`~physid.pushing.chapters.pushing_identify.HEADLINE_SECONDS` buys each method of
    ``long``: the simulations it ran per second there, mean over its runs, times the
    headline's seconds (a method whose runs simulated nothing, its first evaluation beyond the
    budget, is left out)."""
    seconds = study.HEADLINE_SECONDS
    buys = []
    for method in METHODS:
        runs = [r for r in long if r.method == method and r.used_seconds > 0
                and r.used_simulations > 0]
        if runs:
            rate = float(np.mean([r.used_simulations / r.used_seconds for r in runs]))
            buys.append(f"{METHODS[method].label}: about {seconds * rate:,.0f}")
    return {"long_budget_text": plural(simulations, "simulation"),
            "buys_text": f"{seconds:g} s buys, in simulations at the rate each method ran in "
            "the longer runs, " + "; ".join(buys)}


def gap_prose(long: Sequence[MethodRun], objects: Sequence[str], n_train: int
              ) -> dict[str, Any]:
    """The train–test gap in words: the parameters each object has against its ``n_train``
    training pushes; the truth's and Algorithm 1's and exact-gradient descent's errors on the
    training and the test pushes at the end of the longer runs (``long`` on ``objects``,
    :func:`~physid.pushing.chapters.pushing_identify_claims.gap_rows`), and how many methods
    end below the truth on their training pushes."""
    rows = {r["estimate"]: r for r in gap_rows(long, objects)}
    truth = rows.pop("the truth (floors)")
    below = [name for name, r in rows.items()
             if r["training pushes (mm)"] < truth["training pushes (mm)"]]

    def pair(r: dict) -> str:
        return (f"{r['training pushes (mm)']:.1f} mm on the training pushes and "
                f"{r['test pushes (mm)']:.1f} mm on the test pushes")

    headline = [METHODS[m].label for m in study.HEADLINE_METHODS]
    parts = [f"the truth's error is {pair(truth)}"]
    parts += [f"the last estimate of {name}, {pair(rows[name])}" for name in headline
              if name in rows]
    cells = {r.object: len(r.identified_map) for r in long if r.object in objects}
    return {
        "gap_text": "; ".join(parts) + ". "
        + (f"{plural(len(below), 'method')} end{'s' if len(below) == 1 else ''} below the "
           "truth on the training pushes "
           f"({listing(below)}): they fit the training pushes better than the truth does, "
           "which only the test pushes can show." if below else
           "No method ends below the truth on the training pushes."),
        "gap_params_text": "the masses and frictions of each object ("
        + ", ".join(f"{2 * k} on the {name}" for name, k in cells.items()) + ")",
        "gap_pushes_text": plural(n_train, "training push", "training pushes"),
    }


def uncertainty_prose(maps: Sequence[UncertaintyMap], sizes: IdentifySizes) -> dict[str, Any]:
    """The uncertainty maps in words: SVGD's particles and iterations (``sizes``), and per
    push count the rank correlation of travel and spread per object and the mean spread."""
    rho = travel_correlations(maps)
    counts = sorted({m.n_pushes for m in maps})
    parts = []
    for p in counts:
        chosen = [m for m in maps if m.n_pushes == p]
        listed = ", ".join(f"{rho[(m.object, p)]:.2f} on the {m.object}" for m in chosen)
        spread = float(np.mean([m.spread.mean() for m in chosen]))
        parts.append(f"with {plural(p, 'training push', 'training pushes')} the rank "
                     f"correlation of travel and spread is {listed}, and the mean spread "
                     f"{spread:.3f}")
    return {
        "uncertainty_text": "; ".join(parts),
        "uncertainty_run_text": (
            f"{plural(sizes.uncertainty_iterations, 'iteration')} with "
            f"{plural(sizes.uncertainty_particles, 'particle')}"),
    }


#: Algorithm 1 as the library runs it, §6's variants of it, and exact-gradient descent.
VARIANTS = ("algorithm1", "algorithm1-interval", "algorithm1-pinned", "autograd-rigid")


def variants_prose(errors: ProtocolErrors) -> dict[str, Any]:
    """Algorithm 1 and its variants (:data:`VARIANTS`, those ``errors`` holds) within the
    headline's seconds, mean over the paper's objects, in words."""
    names = {"algorithm1": "the library's Algorithm 1 (one step per pass) reaches",
             "algorithm1-interval": "the printed loop (an update per interval)",
             "algorithm1-pinned": "the pinned reading", "autograd-rigid":
             "exact-gradient descent"}
    parts = [f"{names[m]} {mm(errors.headline[m])}" for m in VARIANTS if m in errors.headline]
    return {"variants_text": listing(parts)}


def maps_prose(contrasts: FeatureContrasts) -> dict[str, Any]:
    """The maps' feature contrasts, identified (mean over experiments) and true, per object."""
    return {
        "contrast_text": listing([f"{v:.2f} on the {n}" for n, v in contrasts.identified.items()]),
        "truth_contrast_text": listing([f"{v:.2f} on the {n}" for n, v in contrasts.truth.items()]),
    }


def robot_prose() -> dict[str, Any]:
    """The pushes of the paper's real-robot runs."""
    paper = _paper()
    return {
        "robot_train_text": plural(paper.robot_train, "training push", "training pushes"),
        "robot_test_text": plural(paper.robot_test, "test push", "test pushes"),
    }


def converged_steps(run: PushCountRun) -> int:
    """Gradient steps ``run`` needs to make
    :data:`~physid.pushing.chapters.pushing_identify_claims.CONVERGED_SHARE` of its
    improvement of the test error."""
    return study.steps_to(run.test_error, CONVERGED_SHARE)


def push_counts_prose(counts: Sequence[PushCountRun], name: str, steps: int) -> dict[str, Any]:
    """Fig. 4b in words: the object ``name``, the numbers of training pushes, the ``steps``,
    and for the fewest and the most pushes the final test error, the steps to converge
    (:func:`converged_steps`), the simulations they cost (a step simulates every training
    push) and the seconds per step (wall times)."""
    one, most = counts[0], counts[-1]
    return {
        "counts_object": name,
        "counts_list_text": listing([str(c.n_train) for c in counts]),
        "counts_steps_text": plural(steps, "gradient step"),
        "counts_one_text": plural(one.n_train, "push", "pushes"),
        "counts_most_text": plural(most.n_train, "push", "pushes"),
        "counts_one_end_text": mm(one.test_error[-1]),
        "counts_most_end_text": mm(most.test_error[-1]),
        "counts_one_steps_text": plural(converged_steps(one), "step"),
        "counts_most_steps_text": plural(converged_steps(most), "step"),
        "counts_one_sims_text": plural(converged_steps(one) * one.n_train, "simulation"),
        "counts_most_sims_text": plural(converged_steps(most) * most.n_train, "simulation"),
        "counts_one_s": Bounded(one.seconds_per_step, 0, np.inf),
        "counts_most_s": Bounded(most.seconds_per_step, 0, np.inf),
    }
