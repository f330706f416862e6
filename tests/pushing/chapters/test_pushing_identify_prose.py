"""The identification chapter's prose: what it says about each result, each way it can come
out, on synthetic results (no simulation)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from physid.book.display import Bounded
from physid.pushing.budget import Budget
from physid.pushing.chapters import pushing_identify as study
from physid.pushing.chapters import pushing_identify_claims as claims
from physid.pushing.chapters import pushing_identify_prose as prose
from physid.pushing.chapters.pushing_identify import (
    CostPoint,
    Directions,
    Identifiability,
    MethodRun,
    PushCountRun,
    UncertaintyMap,
    WorldFloor,
)
from physid.pushing.identify import METHODS

QUICK = study.SIZES["quick"]
STALLED = ("fd-authors", "fd-small", "random")


def _errors(objects=("crimp",), budget=QUICK.budget, improvements=None):
    methods = ("algorithm1", "autograd-rigid", *STALLED, "weighted")
    per_object = {n: 0.019 for n in objects}
    return claims.ProtocolErrors(
        tuple(objects), budget, start=per_object,
        end={m: {n: 0.0172 if m == "algorithm1" else 0.0183 for n in objects}
             for m in methods},
        end_within={m: {n: 0.0172 if m == "algorithm1" else 0.0183 for n in objects}
                    for m in methods},
        floor={n: 0.0167 for n in objects},
        final={"algorithm1": 0.0172, "fd-authors": 0.019, "fd-small": 0.0191},
        at_budget={"algorithm1": 0.0172, "random": 0.019, "weighted": 0.0197},
        headline={"algorithm1": 0.0172},
        improvements={"algorithm1": 2, "autograd-rigid": 1, "weighted": 1, **dict.fromkeys(
            STALLED, 0), **(improvements or {})},
    )


def _alg1_run(used_seconds, obj="crimp"):
    empty = np.zeros(0)
    return MethodRun(obj, 0, "algorithm1", empty, empty, empty, empty, empty, empty, empty,
                     empty, empty, empty, empty, 0.0167, "", 8, used_seconds)


def test_identifiability_prose_states_the_pushes_and_displacements():
    text = prose.identifiability_prose(Identifiability("hammer", 4, 3e-12, 1.9e-5, 1e-3), 3.0,
                                       0.5)
    assert text["ident_pushes_text"] == "4 random pushes" and text["ident_factor"] == 3.0
    assert text["ident_global_mm"] == Bounded(3e-9, 0, np.inf)
    assert text["ident_masses_mm"] == Bounded(1.0, 0, np.inf) and text["ident_duration"] == 0.5
    assert (text["mass_factor_low"], text["mass_factor_high"]) == (0.5, 2.0)
    one = prose.identifiability_prose(Identifiability("hammer", 1, 0, 0, 0), 2.0, 1.0)
    assert one["ident_pushes_text"] == "1 random push"


def test_search_loss_and_algorithm1_prose_read_the_library():
    box = prose.search_prose()
    assert (box["mass_low"], box["mass_high"]) == (0.1, 5.0)
    assert box["start_mass"] == pytest.approx(2.45)
    assert box["start_friction"] == pytest.approx(0.5)
    loss = prose.loss_prose()
    assert loss["interval_steps_text"] == "5 engine steps"
    assert loss["engine_dt_ms"] == pytest.approx(10) and loss["noise_mm"] == pytest.approx(1)
    alg1 = prose.algorithm1_prose()
    assert alg1["alg1_decay"] == METHODS["algorithm1"].options["decay"]


@pytest.mark.parametrize("held_all", [True, False])
def test_direction_prose_says_where_the_assumptions_held(held_all):
    holds = np.array([True, held_all])
    crimp = Directions("crimp", np.array([[0.8], [0.4]]), np.array([[0.6], [0.2]]), holds,
                       ~holds, np.zeros(2, bool))
    hammer = replace(crimp, object="hammer")
    text = prose.direction_prose([crimp, hammer], claims.pool_cosines([crimp, hammer]), 1)
    assert text["direction_objects_text"] == "the crimp and the hammer"
    assert text["direction_iterates_text"] == "1 iterate"
    if held_all:
        assert text["direction_holds_text"] == "4 of the 4 pushes"
        assert text["direction_friction_text"] == "0.60"
        assert text["direction_friction_not_text"] == "not measured (no such push)"
    else:
        assert text["direction_holds_text"] == "2 of the 4 pushes"
        assert text["direction_mass_text"] == "0.60"
        assert text["direction_friction_not_text"] == "0.40"


def test_methods_prose_converts_the_authors_step_to_kilograms():
    text = prose.methods_prose(84, "crimp", 1)
    assert text["table_pushes_text"] == "1 training push" and text["table_cells"] == 84
    assert text["fd_step_kg"] == pytest.approx(0.5)
    assert text["authors_budget"] == study.SIZES["paper"].budget.simulations


@pytest.mark.parametrize("lcp_sizes", [1, 2])
def test_cost_prose_reads_the_sizes_and_the_slopes(lcp_sizes):
    costs = [CostPoint(10, 1e-3, 2e-3, 3e-3),
             CostPoint(24, 8e-3, 2.4e-2, 9e-3 if lcp_sizes == 2 else np.nan)]
    text = prose.cost_prose(costs, claims.gradient_slopes(costs))
    assert prose.lcp_cells(costs) == [10, 24][:lcp_sizes]
    assert (text["cost_min_cells"], text["cost_max_cells"]) == (10, 24)
    assert text["cost_lcp_max_cells"] == [10, 24][lcp_sizes - 1]
    assert text["cost_rigid_max_ms"] == Bounded(24.0, 0, np.inf)
    assert text["slope_alg1_text"] == f"{np.log(8) / np.log(2.4):.2f}"
    if lcp_sizes == 1:
        assert text["slope_lcp_text"] == "not measured (fewer than two sizes)"
    else:
        assert text["slope_lcp_text"] == f"{np.log(3) / np.log(2.4):.2f}"


@pytest.mark.parametrize("scale", ["quick", "default"])
def test_protocol_prose_names_the_map_objects_or_none(scale):
    text = prose.protocol_prose(study.SIZES[scale], _errors(("crimp", "hammer")))
    assert text["protocol_objects_text"] == "the crimp and the hammer"
    assert text["start_errors_text"] == "19.0 mm on the crimp and 19.0 mm on the hammer"
    assert text["floor_errors_text"].startswith("16.7 mm on the crimp")
    assert text["paper_train_text"] == "4 random training pushes"
    assert text["map_objects_text"] == (
        "no other object at this scale" if scale == "quick" else "the toolbox and the book")


@pytest.mark.parametrize("stalled", [0, 1, 3])
def test_fig3_prose_says_which_methods_never_improve(stalled):
    errors = _errors(improvements=dict.fromkeys(STALLED[stalled:], 1))
    text = prose.fig3_prose(errors, ("algorithm1", "autograd-rigid", *STALLED))
    assert text["alg1_summary_text"] == "Algorithm 1 ends at 17.2 mm on the crimp."
    assert text["rigid_summary_text"].endswith("ends at 18.3 mm on the crimp.")
    labels = [METHODS[m].label for m in STALLED]
    assert text["stalled_text"] == {
        0: "Every method improves on the start at least once.",
        1: f"{labels[0]} finds no improvement of the training loss within the budget and "
           "stays at the start.",
        3: f"{labels[0]}, {labels[1]} and {labels[2]} find no improvement of the training "
           "loss within the budget and stay at the start.",
    }[stalled]


def test_fd_cost_counts_the_largest_object():
    assert prose.fd_cost(["crimp"], 2) == 338
    assert prose.fd_cost(["crimp", "hammer"], 1) > 169


@pytest.mark.parametrize(("seconds", "used", "start"), [
    (10.0, 5.0, "the runs' time budget, 10 s, is shorter than the paper's 30 s"),
    (60.0, 5.0, "the runs' budget of 8 simulations ends before 30 s"),
    (60.0, 45.0, "the runs reach 30 s within their budget."),
])
def test_headline_prose_says_where_the_headline_is_read(seconds, used, start):
    errors = _errors(budget=Budget(simulations=8, seconds=seconds))
    runs = [_alg1_run(used), _alg1_run(100.0, obj="toolbox")]  # a map object: not compared
    text = prose.headline_prose(errors, runs, "Given more.", 338)
    assert text["headline_budget_text"].startswith(start)
    assert text["long_text"] == "Given more." and text["headline_ours_text"] == "17.2 mm"
    assert (text["random_text"], text["weighted_text"]) == ("19.0 mm", "19.7 mm")
    assert text["fd_cost_text"] == "338"
    assert text["fd_text"] == (
        f"19.0 mm ({METHODS['fd-authors'].label.lower()}) and 19.1 mm "
        f"({METHODS['fd-small'].label.lower()}), against 17.2 mm for Algorithm 1")


def test_headline_prose_bounds_the_finite_difference_cost_over_objects():
    text = prose.headline_prose(_errors(("crimp", "hammer")), [], "Given more.", 1234)
    assert text["fd_cost_text"] == "up to 1,234"


def test_maps_and_robot_prose():
    contrasts = claims.FeatureContrasts({"crimp": 2.934, "hammer": 1.5},
                                        {"crimp": 3.21, "hammer": 0.9}, {})
    text = prose.maps_prose(contrasts)
    assert text["contrast_text"] == "2.93 on the crimp and 1.50 on the hammer"
    assert text["truth_contrast_text"] == "3.21 on the crimp and 0.90 on the hammer"
    assert prose.robot_prose() == {"robot_train_text": "2 training pushes",
                                   "robot_test_text": "5 test pushes"}


def test_push_counts_prose_compares_the_fewest_and_the_most_pushes():
    one = PushCountRun(1, np.array([0.019, 0.0173, 0.0172]), 0.2)
    most = PushCountRun(4, np.array([0.019, 0.019, 0.0143]), 0.8)
    assert (prose.converged_steps(one), prose.converged_steps(most)) == (1, 2)
    text = prose.push_counts_prose([one, PushCountRun(2, one.test_error, 0.4), most], "crimp", 2)
    assert text["counts_list_text"] == "1, 2 and 4"
    assert (text["counts_one_text"], text["counts_most_text"]) == ("1 push", "4 pushes")
    assert text["counts_steps_text"] == "2 gradient steps"
    assert (text["counts_one_steps_text"], text["counts_most_steps_text"]) == ("1 step",
                                                                              "2 steps")
    assert (text["counts_one_sims_text"], text["counts_most_sims_text"]) == (
        "1 simulation", "8 simulations")
    assert text["counts_most_end_text"] == "14.3 mm"
    assert text["counts_one_s"] == Bounded(0.2, 0, np.inf)


def test_world_prose_gives_each_models_floor_per_setup():
    def floor(setup, dirs, value):
        return WorldFloor("crimp", 0, setup, dirs, np.array([value]), np.zeros(1, bool),
                          np.zeros(1, bool), np.zeros(1, bool))

    text = prose.world_prose([floor("book", 4, 0.02), floor("authors", 4, 0.03),
                              floor("book", 16, 0.01)])
    assert text["world_text"] == (
        "with 4 directions (the paper's) the floor is 20.0 mm in the book's setup and 30.0 mm "
        "with the box finger, rigid table (the authors'); with 16 directions the floor is "
        "10.0 mm in the book's setup")
    assert text["world_setups_text"].startswith("disc finger, compliant table (the book's) and")


def test_gap_prose_says_who_ends_below_the_truth_on_the_training_pushes():
    k = 3

    def run(method, train, test, used=8):
        return MethodRun("crimp", 0, method, np.array([0, used]), np.array([0.0, 1.0]),
                         np.array([0.02, 0.01]), np.array([0, 1]), np.array([0.02, test]),
                         np.zeros((2, k)), np.zeros((2, k, 2)), np.zeros((k, 2)),
                         np.zeros((k, 2)), np.zeros(k), np.zeros(k), 0.015, "spent", used, 1.0,
                         train_error=np.array([0.03, train]), train_floor=0.012)

    long = [run("algorithm1", 0.010, 0.018), run("autograd-rigid", 0.013, 0.016, used=4)]
    text = prose.gap_prose(long, ("crimp",), 4)
    assert text["gap_text"].startswith(
        "the truth's error is 12.0 mm on the training pushes and 15.0 mm on the test pushes; "
        "the last estimate of Algorithm 1 (analytic), 10.0 mm on the training pushes and "
        "18.0 mm on the test pushes;")
    assert text["gap_text"].endswith(
        "1 method ends below the truth on the training pushes (Algorithm 1 (analytic)): they "
        "fit the training pushes better than the truth does, which only the test pushes can "
        "show.")
    assert text["gap_params_text"] == "the masses and frictions of each object (6 on the crimp)"
    assert text["gap_pushes_text"] == "4 training pushes"
    idle = replace(long[0], method="fd-authors", used_simulations=0)
    buys = prose.long_prose([*long, idle], 1000)
    assert buys["long_budget_text"] == "1,000 simulations"
    assert buys["buys_text"] == ("30 s buys, in simulations at the rate each method ran in "
                                 "the longer runs, Algorithm 1 (analytic): about 240; Exact "
                                 "gradient (rigid formulation): about 120")


def test_uncertainty_prose_gives_the_correlations_per_push_count():
    maps = [UncertaintyMap("crimp", p, np.full(3, 1 / 3), np.array(spread), np.full(3, 0.1),
                           np.array([0.01, 0.02, 0.03]), np.full(3, 1 / 3), 2e-4, 1.0,
                           np.array(spread), 0)
            for p, spread in ((1, [0.3, 0.3, 0.2]), (4, [0.3, 0.2, 0.1]))]
    text = prose.uncertainty_prose(maps, study.SIZES["default"])
    assert text["uncertainty_text"].endswith(
        "with 4 training pushes the rank correlation of travel and spread is -1.00 on the "
        "crimp, and the mean spread 0.200")
    assert text["uncertainty_run_text"] == "60 iterations with 16 particles"


def test_variants_prose_lists_algorithm1_and_its_variants():
    errors = claims.ProtocolErrors(
        ("crimp",), Budget(simulations=8), start={"crimp": 0.02}, end={}, end_within={},
        floor={"crimp": 0.01}, final={}, at_budget={},
        headline={"algorithm1": 0.02, "algorithm1-interval": 0.017, "autograd-rigid": 0.018},
        improvements={})
    assert prose.variants_prose(errors)["variants_text"] == (
        "the library's Algorithm 1 (one step per pass) reaches 20.0 mm, the printed loop (an "
        "update per interval) 17.0 mm and exact-gradient descent 18.0 mm")
