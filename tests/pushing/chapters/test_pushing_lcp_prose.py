"""The Part I chapter's prose driver: what the prose says about each result, each way it can
come out."""

from __future__ import annotations

import numpy as np
import pytest

from physid.book.display import Bounded
from physid.core.constants import GRAVITY
from physid.pushing import Push, rectangle
from physid.pushing.chapters import pushing_lcp as ex
from physid.pushing.chapters import pushing_lcp_prose as prose
from physid.pushing.finger import MODE_NAMES, ContactEvents

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MODELS = list(ex.FRICTION_MODELS)


def events(slid):
    slid = np.asarray(slid, bool)
    no = np.zeros_like(slid)
    zeros = np.zeros(len(slid))
    return ContactEvents(~no, slid, no, no, zeros, zeros, 0.002)


def formulation_gap(lcp_slid, rigid_slid):
    return ex.FormulationGap(
        max_difference=1e-9,
        max_stretch=1e-16,
        max_travel=0.05,
        min_normal_impulse={"lcp": 0.0, "rigid": 1e-6},
        events={"lcp": events(lcp_slid), "rigid": events(rigid_slid)},
        modes=np.zeros(len(MODE_NAMES), int),
    )


def bullet_gap(name, final_mm, seconds):
    """A BulletGap whose final error (mm) per model is ``final_mm[model]`` (one per push)."""
    n = len(final_mm[MODELS[0]])
    return ex.BulletGap(
        name=name,
        cells=10,
        times=np.array([0.0, 0.5]),
        errors={m: np.stack([np.zeros(n), 1e-3 * np.asarray(v)], -1) for m, v in final_mm.items()},
        travel=np.full(n, 0.06),
        events={m: events([False] * n) for m in MODELS},
        bullet_events=events([False] * n),
        modes={m: np.zeros(len(MODE_NAMES), int) for m in MODELS},
        min_normal_impulse={m: 0.0 for m in MODELS},
        seconds=seconds,
    )


def test_objects_prose_gives_the_range_of_cell_counts():
    objects = [rectangle(r, 3, 0.01, 0.01, 0.5) for r in (2, 4, 3)]
    assert prose.objects_prose(objects) == {"min_cells": 6, "max_cells": 12}


def test_finger_prose_derives_the_approach_and_bullets_default():
    words = prose.finger_prose()
    assert words["approach_ms"] == pytest.approx(
        words["finger_radius_mm"] / words["push_speed"]
    )
    assert words["authors_finger_mu"] * words["bullet_default_mu"] == pytest.approx(
        words["finger_mu"]
    )
    assert 0 < words["max_push_angle_deg"] < 90


@pytest.mark.parametrize(
    ("lcp_slid", "rigid_slid", "phrase"),
    [
        ([True], [True], "the push"),
        ([True, False], [True, False], "both pushes"),
        ([True, False, False], [True, False, False], "all 3 pushes"),
        ([True, False, False], [False, False, False], "2 of 3 pushes"),
        ([True], [False], "0 of 1 push"),
    ],
)
def test_formulation_prose_counts_where_the_formulations_agree(lcp_slid, rigid_slid, phrase):
    words = prose.formulation_prose(formulation_gap(lcp_slid, rigid_slid), len(lcp_slid), 0.2)
    assert words["formulation_slid_agree_text"] == phrase
    assert words["formulation_gap_m"] == Bounded(1e-9, 0, np.inf)
    assert words["rigid_min_normal"] == 1e-6 and words["lcp_duration"] == 0.2
    n = len(lcp_slid)
    assert words["lcp_pushes_text"] == ("1 push" if n == 1 else f"{n} pushes")


def test_sliding_prose_reads_the_square_and_the_rounder_polygon():
    coulomb = 1.0**2 / (2 * 0.5 * GRAVITY)
    distances = {4: coulomb * np.array([0.99, 1.2, 1.4]), 16: coulomb * np.array([1, 1.01, 1.02])}
    check = ex.SlidingCheck(1.0, 0.5, 1e-3, np.linspace(0, np.pi / 4, 3), distances)
    words = prose.sliding_prose(check)
    assert words["slide_angles_text"] == "3 directions" and words["many_dirs"] == 16
    assert words["axis_ratio"].value == pytest.approx(0.99)
    assert words["diagonal_pct"].value == pytest.approx(40)
    assert words["many_pct"].value == pytest.approx(2) and words["many_ratio"].value == 1.02
    assert words["coulomb_mm"] == pytest.approx(1e3 * coulomb) and words["slide_dt_ms"] == 1.0


@pytest.mark.parametrize(("yaw", "sense"), [(0.5, "counter-clockwise"), (-0.5, "clockwise")])
def test_turns_prose_says_which_way_the_offset_push_turns(yaw, sense):
    box = rectangle(**ex.TURN_BOX)
    turns = ex.PushTurns(
        box=box, offset=0.04, times=np.array([0.0, 1.0]), positions=np.zeros((2, 2, 24, 2)),
        yaw=np.array([[0.0, -1e-9], [0.0, yaw]]),
    )
    words = prose.turns_prose(turns)
    assert words["offset_turn_sense"].startswith(sense + " (")
    assert words["offset_yaw_deg"] == Bounded(pytest.approx(np.degrees(0.5)), 0, 360)
    assert words["centred_yaw_deg"].value == pytest.approx(np.degrees(1e-9))
    assert (words["box_rows"], words["box_cols"], words["offset_mm"]) == (4, 6, 40)


@pytest.mark.parametrize(("rounder_mm", "verb"), [(2.0, "falls to"), (20.0, "rises to")])
def test_bullet_prose_compares_the_friction_models(rounder_mm, verb):
    faithful, rounder, isotropic = MODELS
    seconds = {"pybullet": 1.0, faithful: 1.0, rounder: 2.0, isotropic: 10.0}
    gaps = [
        bullet_gap("a", {faithful: [4, 10], rounder: [rounder_mm] * 2, isotropic: [1, 3]}, seconds),
        bullet_gap("b", {faithful: [6, 20], rounder: [rounder_mm] * 2, isotropic: [2, 6]}, seconds),
    ]
    final = prose.final_errors(gaps)
    assert list(final) == MODELS and final[faithful] == pytest.approx([4e-3, 10e-3, 6e-3, 20e-3])
    words = prose.bullet_prose(gaps, 2, 0.5)
    assert words["gap_many_verb"] == verb and words["gap_pushes_text"] == "2 random pushes"
    assert words["gap4_mm"] == pytest.approx(10) and words["gap4_median_mm"] == pytest.approx(8)
    assert words["gap4_max_mm"] == pytest.approx(20) and words["gap_iso_max_mm"] == pytest.approx(6)
    assert words["iso_cost"] == Bounded(5.0, 0, np.inf)
    assert words["travel_mm"] == pytest.approx(60) and words["paper_accuracy_mm"] == 15


@pytest.mark.parametrize(
    ("least", "verdict"), [(0.0, "never pulled"), (-1e-6, "pulled on some step")]
)
def test_events_prose_quotes_the_paper_model_and_the_pull_verdict(least, verdict):
    counts = {"touched": 10, "slid": 4, "lost contact": 0, "changed side": 1, "assumptions hold": 6}
    engine = {m: dict(counts, slid=i) for i, m in enumerate(MODELS)}
    agree = {m: {"slid": 9 - i} for i, m in enumerate(MODELS)}
    words = prose.events_prose(10, counts, engine, agree, least)
    assert words["pull_verdict"] == verdict
    assert words["bullet_slid_text"] == "4 of the 10" and words["bullet_hold_text"] == "6 of the 10"
    assert words["engine_slid_text"] == "0 of the 10" and words["slid_agree_text"] == "9 of the 10"
    assert words["events_pushes_text"] == "10 pushes"
    assert prose.events_prose(1, counts, engine, agree, 0.0)["events_pushes_text"] == "1 push"


def test_modes_prose_counts_the_fallback_steps():
    coupled = MODE_NAMES.index("coupled")
    modes = {m: np.full(len(MODE_NAMES), 100) for m in MODELS}
    modes[MODELS[0]][coupled] = 1
    words = prose.modes_prose(modes)
    assert words["coupled_text"] == f"1 step of {100 * (len(MODE_NAMES) - 1) + 1:,}"
    total = 3 * 100 * len(MODE_NAMES) - 99
    assert words["coupled_all_text"] == f"201 steps of {total:,}"


def test_mass_scale_prose_finds_no_difference():
    box = rectangle(2, 3, 0.02, 0.01, 0.4)
    words = prose.mass_scale_prose(box, Push((0.0, -0.02), (0.0, 1.0), duration=0.5), factor=5.0)
    assert words["mass_factor"] == 5.0
    assert words["mass_scale_gap_m"].value < 1e-9 and words["mass_scale_gap_m"].high == 1e-3


def test_speed_prose_states_the_targets():
    assert prose.speed_prose() == {
        "bench_cells": ex.BENCH_CELLS,
        "target_speedup": ex.TARGET_SPEEDUP,
        "target_grad": ex.TARGET_GRADIENT_COST,
        "target_batch": ex.TARGET_BATCH_SPEEDUP,
        "target_size": ex.TARGET_SIZE_SPEEDUP,
        "target_slide": ex.TARGET_SLIDE_COST,
    }
