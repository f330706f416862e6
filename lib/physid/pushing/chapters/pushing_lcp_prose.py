"""The prose driver of the Part I chapter "An LCP engine for pushed cell objects"
(``book/pushing_lcp.md``): what its prose says about each result, as functions a test can check.

Each ``*_prose`` function takes results the chapter computed and returns the numbers and the
phrases its prose quotes, by glue name, for :func:`physid.book.display.glue_all`. A number the
prose was written for a range of is a :class:`~physid.book.display.Bounded`. A phrase that
depends on a result (which way the offset box turns, whether more friction directions bring the
engine nearer pybullet, whether the finger pulled) is decided here, not in a hidden cell.
:func:`mass_scale_prose` runs the one study the prose quotes that the chapter does not show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from physid.book.display import Bounded, plural
from physid.core.validate import check_count
from physid.pushing import bullet, finger, pushes
from physid.pushing.chapters import pushing_lcp as ex
from physid.pushing.objects import CellObject
from physid.pushing.pushes import Push
from physid.pushing.simulate import simulate

__all__ = [
    "FAITHFUL",
    "MASS_FACTOR",
    "bullet_prose",
    "events_prose",
    "final_errors",
    "finger_prose",
    "formulation_prose",
    "mass_scale_prose",
    "modes_prose",
    "objects_prose",
    "sliding_prose",
    "speed_prose",
    "turns_prose",
]

#: The paper's friction model (four directions): the one the prose quotes events and modes for.
FAITHFUL = next(iter(ex.FRICTION_MODELS))

#: The factor :func:`mass_scale_prose` multiplies every mass by.
MASS_FACTOR = 10.0


def objects_prose(objects: Sequence[CellObject]) -> dict[str, Any]:
    """The range of the objects' cell counts."""
    counts = [len(obj) for obj in objects]
    return {"min_cells": min(counts), "max_cells": max(counts)}


def finger_prose() -> dict[str, Any]:
    """The finger's note: the push speed, the finger's size and frictions (the authors' finger,
    Bullet's default for the cells and their product, the engine's μ_c), how long a head-on
    push takes to reach the object, and the limits on a push's angle and clearance."""
    return {
        "push_speed": pushes.PUSH_SPEED,
        "finger_radius_mm": 1e3 * finger.FINGER_RADIUS,
        "authors_finger_mu": bullet.FINGER_LATERAL_FRICTION,
        "bullet_default_mu": finger.FINGER_FRICTION / bullet.FINGER_LATERAL_FRICTION,
        "finger_mu": finger.FINGER_FRICTION,
        "approach_ms": 1e3 * finger.FINGER_RADIUS / pushes.PUSH_SPEED,
        "max_push_angle_deg": np.degrees(pushes.MAX_PUSH_ANGLE),
        "clearance_mm": 1e3 * pushes.MIN_CLEARANCE,
    }


def formulation_prose(gap: ex.FormulationGap, n_pushes: int, duration: float) -> dict[str, Any]:
    """How the two formulations compare on ``n_pushes`` pushes of ``duration`` s: their
    largest difference, the LCP's joint stretch, each one's smallest normal impulse and on how
    many pushes they agree that the finger slid."""
    n_pushes = check_count("n_pushes", n_pushes)
    slid_agree = gap.events_agree["slid"]
    if slid_agree < n_pushes:
        agree_words = f"{slid_agree} of {plural(n_pushes, 'push', 'pushes')}"
    else:
        agree_words = {1: "the push", 2: "both pushes"}.get(n_pushes, f"all {n_pushes} pushes")
    return {
        "lcp_pushes_text": plural(n_pushes, "push", "pushes"),
        "lcp_duration": duration,
        "formulation_gap_m": Bounded(gap.max_difference, 0, np.inf),
        "joint_stretch_m": Bounded(gap.max_stretch, 0, np.inf),
        "lcp_min_normal": gap.min_normal_impulse["lcp"],
        "rigid_min_normal": gap.min_normal_impulse["rigid"],
        "formulation_slid_agree_text": agree_words,
    }


def sliding_prose(sliding: ex.SlidingCheck) -> dict[str, Any]:
    """The sliding cell: its launch, Coulomb's distance, and how far it slides along an axis
    and the diagonal with four directions and at worst with the most directions checked."""
    many = max(sliding.distances)
    ratios4 = sliding.ratios(4)
    return {
        "slide_v0": sliding.v0,
        "slide_mu": sliding.mu,
        "slide_dt_ms": 1e3 * sliding.dt,
        "slide_angles_text": plural(len(sliding.angles), "direction", "directions"),
        "coulomb_mm": 1e3 * sliding.coulomb,
        "axis_ratio": Bounded(ratios4[0], 0.9, 1.1),
        "diagonal_ratio": Bounded(ratios4[-1], 1.0, 2.0),
        "many_dirs": many,
        "many_ratio": Bounded(sliding.ratios(many).max(), 0.9, 2.0),
        "many_pct": Bounded(100 * sliding.worst_deviation(many), 0, 100),
        "diagonal_pct": Bounded(100 * (ratios4[-1] - 1), 0, 100),
    }


def turns_prose(turns: ex.PushTurns) -> dict[str, Any]:
    """The centred and offset pushes of :data:`~physid.pushing.chapters.pushing_lcp.TURN_BOX`:
    the box, how little the centred push turns it, and which way and how far the offset one
    does."""
    offset_yaw = float(np.degrees(turns.yaw[1, -1]))
    return {
        "box_rows": ex.TURN_BOX["rows"],
        "box_cols": ex.TURN_BOX["cols"],
        "box_cell_mm": 1e3 * ex.TURN_BOX["cell_side"],
        "centred_yaw_deg": Bounded(float(np.degrees(np.abs(turns.yaw[0]).max())), 0, 180),
        "offset_mm": 1e3 * turns.offset,
        "offset_turn_sense": (
            "counter-clockwise (the side it is pushed on leads)"
            if offset_yaw > 0
            else "clockwise (the side it is pushed on lags)"
        ),
        "offset_yaw_deg": Bounded(abs(offset_yaw), 0, 360),
        "turn_duration": turns.times[-1],
    }


def final_errors(gaps: Sequence[ex.BulletGap]) -> dict[str, np.ndarray]:
    """Final cell-position error (m) of every push of every object, per friction model of
    :data:`~physid.pushing.chapters.pushing_lcp.FRICTION_MODELS`."""
    return {m: np.concatenate([g.final(m) for g in gaps]) for m in ex.FRICTION_MODELS}


def bullet_prose(
    gaps: Sequence[ex.BulletGap], pushes_per_object: int, duration: float
) -> dict[str, Any]:
    """The comparison with pybullet: its settings, the isotropic polygon and its cost, and
    the final error of each friction model (mean, median, worst) with whether the rounder
    polygon's mean falls below the paper's four directions'."""
    faithful, rounder, isotropic = ex.FRICTION_MODELS
    final = final_errors(gaps)
    return {
        "gap_pushes_text": plural(pushes_per_object, "random push", "random pushes"),
        "gap_duration": duration,
        "bullet_max_mu": bullet.MAX_FRICTION,
        "table_mu": bullet.TABLE_FRICTION,
        "bullet_dt_ms": 1e3 * bullet.BULLET_DT,
        "iso_dirs": ex.ISOTROPIC_DIRS,
        "iso_worst": 1 / np.cos(np.pi / ex.ISOTROPIC_DIRS),
        "iso_cost": Bounded(
            sum(g.seconds[isotropic] for g in gaps) / sum(g.seconds[rounder] for g in gaps),
            0,
            np.inf,
        ),
        "gap4_mm": 1e3 * final[faithful].mean(),
        "gap4_median_mm": 1e3 * np.median(final[faithful]),
        "gap4_max_mm": 1e3 * final[faithful].max(),
        "gap_many_verb": (
            "falls to" if final[rounder].mean() < final[faithful].mean() else "rises to"
        ),
        "gap_many_mm": 1e3 * final[rounder].mean(),
        "gap_many_median_mm": 1e3 * np.median(final[rounder]),
        "gap_iso_mm": 1e3 * final[isotropic].mean(),
        "gap_iso_median_mm": 1e3 * np.median(final[isotropic]),
        "gap_iso_max_mm": 1e3 * final[isotropic].max(),
        "travel_mm": 1e3 * np.concatenate([g.travel for g in gaps]).mean(),
        "paper_accuracy_mm": 1e3 * ex.PAPER_ACCURACY,
    }


def events_prose(
    n_total: int,
    bullet_events: Mapping[str, int],
    engine_events: Mapping[str, Mapping[str, int]],
    agree: Mapping[str, Mapping[str, int]],
    min_normal_all: float,
) -> dict[str, Any]:
    """What the finger did on the ``n_total`` pushes: pybullet's event counts
    (``bullet_events``, by label of :func:`~physid.pushing.chapters.pushing_lcp.event_counts`),
    the engine's with the paper's four directions (``engine_events`` per model), on how many
    they agree that it slid (``agree`` per model) and whether the finger ever pulled (its
    smallest normal impulse ``min_normal_all`` in the rigid formulation)."""
    n_total = check_count("n_total", n_total)

    def of_total(count: int) -> str:
        return f"{count} of the {n_total}"

    engine = engine_events[FAITHFUL]
    return {
        "slide_tol_mm": 1e3 * finger.SLIDE_TOLERANCE,
        "events_pushes_text": plural(n_total, "push", "pushes"),
        "bullet_slid_text": of_total(bullet_events["slid"]),
        "bullet_lost_text": of_total(bullet_events["lost contact"]),
        "bullet_changed_text": of_total(bullet_events["changed side"]),
        "bullet_hold_text": of_total(bullet_events["assumptions hold"]),
        "engine_slid_text": of_total(engine["slid"]),
        "engine_lost_text": of_total(engine["lost contact"]),
        "engine_changed_text": of_total(engine["changed side"]),
        "slid_agree_text": of_total(agree[FAITHFUL]["slid"]),
        "pull_verdict": "never pulled" if min_normal_all >= 0 else "pulled on some step",
    }


def modes_prose(modes: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """How many steps the interior-point fallback took, of all the rigid formulation's steps
    (``modes``: per model, step counts in the order of
    :data:`~physid.pushing.finger.MODE_NAMES`), with the paper's four directions and with
    every model together."""
    coupled = finger.MODE_NAMES.index("coupled")

    def steps(fallback: Any, total: Any) -> str:
        return f"{plural(int(fallback), 'step')} of {int(total):,}"

    return {
        "coupled_text": steps(modes[FAITHFUL][coupled], modes[FAITHFUL].sum()),
        "coupled_all_text": steps(
            sum(counts[coupled] for counts in modes.values()),
            sum(counts.sum() for counts in modes.values()),
        ),
    }


def mass_scale_prose(obj: CellObject, push: Push, factor: float = MASS_FACTOR) -> dict[str, Any]:
    """Push ``obj`` with ``push`` as it is and with every mass times ``factor``: the factor
    and the largest difference of any cell's position (m), which the prose says is nil."""
    base = simulate(obj, push).positions
    scaled = simulate(obj, push, masses=factor * obj.masses).positions
    return {
        "mass_factor": factor,
        "mass_scale_gap_m": Bounded(float((scaled - base).abs().max()), 0, 1e-3),
    }


def speed_prose() -> dict[str, Any]:
    """The speed targets of the rigid formulation checked by ``benchmarks/pushing.py``."""
    return {
        "bench_cells": ex.BENCH_CELLS,
        "target_speedup": ex.TARGET_SPEEDUP,
        "target_grad": ex.TARGET_GRADIENT_COST,
        "target_batch": ex.TARGET_BATCH_SPEEDUP,
        "target_size": ex.TARGET_SIZE_SPEEDUP,
        "target_slide": ex.TARGET_SLIDE_COST,
    }
