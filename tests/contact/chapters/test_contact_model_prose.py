"""The contact-model chapter's prose: what it says about each result, each way it can come out."""

import numpy as np
import pytest
import torch

from physid.book.display import Bounded, glue_all
from physid.contact.chapters import contact_model as ex
from physid.contact.chapters import contact_model_prose as prose
from physid.contact.chapters.contact_model import ImpactStudy
from physid.contact.chapters.contact_model_gallery import EXPLORER_SECONDS, Trajectory
from physid.contact.chapters.contact_model_timing import BatchTiming
from physid.contact.model import LEAST_NORM
from physid.core.bench import Timing

#: The contact library computes in float64; tensors made here without a dtype follow.
pytestmark = pytest.mark.usefixtures("float64_default")


def test_inputs_prose_names_the_tasks_settings():
    inputs = prose.inputs_prose()
    assert inputs["cp3_mu"] == 0.5 and inputs["cp3_cor"] == 0.0
    assert inputs["link_lengths"] == "0.35, 0.4 and 0.35"
    assert inputs["gyro_rim"] == "20 points" and inputs["rope_nodes"] == "200 masses"
    assert inputs["compensation_denominator"] == 8.0
    assert inputs["noise_levels"] == "0.01 and 0.05" and inputs["paper_sizes"] == "800/100/100"
    assert inputs["bp_mass_ratios"].startswith("1:")
    assert inputs["bp_radius_min"] <= inputs["bp_radius_max"]


def test_jump_prose_reads_the_first_impulse():
    v = np.zeros((5, 3))
    v[:, -1] = [-1.0, -2.0, -3.0, 1.5, 1.0]
    traj = Trajectory("CP3", np.arange(5.0), v, v, np.zeros(5), np.array([3]))
    assert prose.jump_prose(traj, 0.01) == {"jump_before": -3.0, "jump_after": 1.5, "cp3_dt": 0.01}


def psd_row(task, smallest, singular=0.0):
    return {
        "task": task,
        "contact problems": 3,
        "max |A − FᵀF| / max |A|": 1e-16,
        "min λ_min/λ_max": smallest,
        "singular (λ_min/λ_max < 1e-10)": singular,
    }


@pytest.mark.parametrize("smallest, phrase", [(-1e-17, "there rounding"), (1e-3, "even the")])
def test_psd_prose_says_whether_the_naive_a_went_indefinite(smallest, phrase):
    psd = prose.psd_prose([psd_row("CP3", 0.5), psd_row("Gyro", smallest, 0.25)])
    assert psd["psd_problems_text"] == "6 contact problems"
    assert psd["psd_min"] == Bounded(smallest, -1.0, 1.0)
    assert psd["gyro_singular_pct"] == Bounded(25.0, 0, 100)
    assert psd["psd_naive_phrase"].startswith(phrase)


def test_signorini_prose_in_percent():
    got = prose.signorini_prose({"positive fraction": 0.25, "median ratio": 0.1})
    assert got == {"signorini_pct": 25.0, "signorini_ratio": 0.1}


def study(newton, poisson=(-1.0, -0.5)):
    return ImpactStudy(
        "CP3", 0.5, 1.0, torch.tensor(poisson), torch.tensor(newton), torch.tensor([1.0, 1.0])
    )


@pytest.mark.parametrize("own_gain, phrase", [(-0.1, "the gain needs"), (0.2, "fewer than")])
def test_restitution_prose_says_whether_newton_gains_at_the_tasks_coefficients(own_gain, phrase):
    studies = [study([0.5, -0.1]), study([-0.1, -0.2])]
    own = [study([own_gain, -0.1]), study([-0.1, -0.1])]
    got = prose.restitution_prose(studies, own, 0.5, 1.0)
    assert got["newton_cp3_pct"] == Bounded(50.0, 0, 100)
    assert got["newton_gyro_pct"] == Bounded(0.0, 0, 100)
    assert got["newton_cp3_max"] == 0.5
    assert got["newton_own_phrase"].startswith(phrase)
    assert got["poisson_max"] == 0.0  # Poisson's never gains: the negative maximum is clipped


def test_equality_prose_counts_the_pressed_contacts():
    got = prose.equality_prose(
        {
            "large equality fraction": 1.0,
            "large contacts": 1,
            "other equality fraction": 0.5,
            "other contacts": 4,
        }
    )
    assert got["equality_large_pct"] == Bounded(100.0, 0, 100)
    assert got["equality_large_n"] == "1 pressed contact"
    assert got["equality_other_n"] == "4 pressed contacts"


def test_penetration_prose_in_millimetres():
    got = prose.penetration_prose({"times": np.array([0.0, 1.5]), "equilibrium": np.array(2e-3)})
    assert got == {"pen_seconds": 1.5, "pen_equilibrium_mm": 2.0}


def elastic_row(task, comp_gain, with_comp, loss=0.0):
    return {
        "task": task,
        "simultaneous": 2,
        "isolated, largest |ΔKE|/KE": 1e-14,
        "any, largest gain/KE": -1e-15,
        "simultaneous, largest loss/KE": loss,
        "with compensation, largest gain/KE": comp_gain,
        "with compensation, largest |ΔKE|/KE": with_comp,
    }


def test_elastic_prose_within_the_scale():
    rows = [elastic_row("BP5-e", 1e-6, 1e-6), elastic_row("Gyro-e", 3e-5, 3e-5)]
    got = prose.elastic_prose(rows)
    assert got["elastic_comp_task"] == "Gyro-e" and got["elastic_comp"] == 3e-5
    assert got["elastic_gain"] == 0.0
    assert got["elastic_simultaneous_text"] == "4 simultaneous impacts"
    assert got["elastic_verdict"] == "Every impulse stays within that scale."


def test_elastic_prose_names_what_breaks_the_scale():
    got = prose.elastic_prose([elastic_row("CP3-e", 0.05, 0.05, loss=0.02)])
    assert got["elastic_verdict"].startswith("Penetration compensation pushes")
    assert "in CP3-e, above 1 %" in got["elastic_verdict"]
    assert "Simultaneous impacts lose up to 2.0e-02" in got["elastic_verdict"]


def uniqueness(non_unique):
    return {
        "problems": 10,
        "non-unique": non_unique,
        "rank-deficient A": 0.4,
        "CM as stated compression impulse": 1e-3,
        "CM as stated compression velocity": 1e-12,
        "CM as stated final velocity": 2e-3,
        "CM final velocity": 1e-11,
    }


def test_cmr_prose_with_non_unique_problems():
    got = prose.cmr_prose(uniqueness(3))
    assert got["rank_pct"] == Bounded(40.0, 0, 100) and got["least_norm"] == LEAST_NORM
    assert got["nonunique_text"] == "3 of the 10 gyroscope compression problems"
    assert got["cm_phrase"] == (
        "Solving them as stated, cvxpylayers and our solver return compression impulses that "
        "differ by up to 1.0e-03 N·s, with the same velocity after compression (to 1.0e-12 "
        "m/s). The impulse's normal component fixes the lower bound (6) of the restitution "
        "impulse, though, so the final velocities differ by up to 2.0e-03 m/s: the outcome of "
        "problem (5) as stated depends on which minimiser the solver returns."
    )
    assert got["least_norm_phrase"].endswith("agree to 1.0e-11 m/s in the final velocities.")


def test_cmr_prose_without_non_unique_problems():
    got = prose.cmr_prose(uniqueness(0))
    assert got["nonunique_text"] == "0 of the 10 gyroscope compression problems"
    assert got["cm_phrase"].startswith("With none at this scale")
    assert got["least_norm_phrase"].startswith("No such problem")


class Log:
    problems, fast_exact, fast_enumerated, fast_unpolished, fallbacks = 4, 3, 2, 1, 1


class Data:
    log = Log()


class Run:
    data = Data()


def test_solver_prose_sums_the_logs_and_skips_missing_gradients():
    comparison = [
        {"max |Δf|": 1e-9, "max |Δ gradient|, μ > 0": np.nan, "max |Δ gradient|, some μ = 0": 0.5},
        {"max |Δf|": 2e-9, "max |Δ gradient|, μ > 0": 1e-8, "max |Δ gradient|, some μ = 0": np.nan},
    ]
    got = prose.solver_prose({"a": Run(), "b": Run()}, comparison, {"default": 1e-3, "tight": 1e-8})
    assert got["problems_total"] == "8 contact problems" and got["fast_exact"] == 6
    assert got["fast_enumerated"] == 4
    assert got["fallbacks_text"] == "2 cvxpylayers fallbacks"
    assert got["max_df"] == 2e-9 and got["max_dg"] == 1e-8 and got["max_dg_mu0"] == 0.5
    assert got["scs_default"] == 1e-3 and got["scs_tight"] == 1e-8


def test_timing_prose_reads_the_largest_and_the_single_batch():
    def timing(batch, fast, single):
        seconds = {
            "fast": Timing(fast),
            "cvxpylayers, batched": Timing((1.0, 1.0)),
            "cvxpylayers, per sample": Timing(single),
        }
        return BatchTiming(batch, seconds)

    got = prose.timing_prose(
        [timing(1, (1.0, 1.0), (2.0, 2.0)), timing(10, (0.1, 0.2), (2.0, 2.0))], 2, 0.5, 12
    )
    assert got["timing_repeat_text"] == "2 times" and got["timing_batch"] == 10
    assert got["timing_fast"] == pytest.approx(10 / 0.15)
    assert got["timing_ratio_low"] == 10 and got["timing_ratio_high"] == 20
    assert got["timing_one"] == 2.0
    assert got["ip_iterations_text"] == "12 interior-point iterations"
    assert got["planar_sets_text"] == "7 candidate active sets"


def test_single_problem_iterations_counts_the_interior_point():
    runs = ex.run_tasks((2, 1, 1), seed=0, names=("BP5",), progress=False)
    assert 0 < prose.single_problem_iterations(runs["BP5"]) <= 50


def test_gallery_prose_takes_the_largest_elastic_drift():
    def traj(energy):
        return Trajectory("x", np.zeros(3), np.zeros(3), np.zeros(3), np.asarray(energy), [])

    gallery = {name: traj([1.0, 1.0, 1.0]) for pair in ex.GALLERY for name in pair if name}
    gallery["CP3-e"] = traj([1.0, 1.25, 0.5])
    gallery["BD5"] = traj([1.0, 0.0, 0.0])  # not elastic: ignored
    assert prose.gallery_prose(gallery) == {"gallery_drift": 0.5}


@pytest.mark.parametrize(
    "reasons, phrase",
    [
        ((), "that holds for every task (between 35 % and 65 %)"),
        (("BP5 (20 %)", "Rope (90 %)"), "that holds for every task but BP5 (20 %); Rope (90 %)"),
    ],
)
def test_data_prose_says_whether_half_the_chunks_collide(reasons, phrase):
    got = prose.data_prose("quick", (6, 1, 1), reasons)
    assert got["half_phrase"] == phrase
    assert got["n_total_text"] == "8 trajectories" and got["run_sizes"] == "6/1/1"
    assert got["scale_name"] == "quick" and got["robust_tasks"] == ", ".join(ex.ROBUSTNESS_TASKS)
    assert got["chunk_states"].endswith("consecutive states")
    assert isinstance(got["p_collision"], Bounded)


def budget(flow, half_flow, kick):
    row = {
        "initial energy (J)": 2.0,
        "total change (J)": 0.02,
        "at impulses (J)": kick,
        "between impulses (J)": flow,
        "largest constraint residual (m²)": 1e-3,
    }
    return [
        {**row, "Δt (s)": 0.01, "compensation": "1/8"},
        {**row, "Δt (s)": 0.01, "compensation": "off", "at impulses (J)": 2 * kick},
        {**row, "Δt (s)": 0.005, "compensation": "1/8", "between impulses (J)": half_flow},
    ]


def test_budget_prose_blames_the_integrator_at_fourth_order():
    got = prose.budget_prose(budget(0.032, 0.002, -0.001))
    assert got["explorer_seconds"] == EXPLORER_SECONDS
    assert got["budget_e1"] == 2.02 and got["budget_pct"] == pytest.approx(1.0)
    assert got["budget_nocomp"] == -0.002 and got["budget_order"] == 16
    assert got["budget_verdict"].startswith("the drift comes from the integrator")
    assert got["budget_order_phrase"] == ", close to the 2⁴ = 16 of a fourth-order method"


def test_budget_prose_blames_the_contacts_off_fourth_order():
    got = prose.budget_prose(budget(0.004, 0.002, -0.001))
    assert got["budget_verdict"] == "the contact model accounts for a sizeable part of the change"
    assert got["budget_order_phrase"].startswith(" (the truncation error")


def test_every_prose_dict_glues(monkeypatch):
    glued = {}
    monkeypatch.setattr("myst_nb.glue", lambda name, value, display: glued.update({name: value}))
    glue_all(prose.cmr_prose(uniqueness(0)))
    assert glued["rank_pct"] == 40.0 and glued["least_norm"] == LEAST_NORM


def test_projection_prose_separates_the_constrained_tasks():
    rows = [
        {"task": "BP5", "equality constraints": "no", "largest difference (m/s)": 1e-15},
        {"task": "CP3", "equality constraints": "yes", "largest difference (m/s)": 0.07},
        {"task": "Gyro", "equality constraints": "yes", "largest difference (m/s)": 0.007},
    ]
    out = prose.projection_prose(rows)
    assert out["projection_free"] == 1e-15 and out["projection_free_tasks"] == "BP5"
    assert out["projection_tied"] == 0.07 and out["projection_tied_task"] == "CP3"
    assert out["projection_tied_tasks"] == "CP3, Gyro"
