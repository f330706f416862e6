"""The learning chapter's prose: what it says about each result, each way it can come out."""

import dataclasses

import numpy as np
import pytest

from physid.book.display import glue_all
from physid.contact import training
from physid.contact.chapters import contact_learning as study
from physid.contact.chapters import contact_learning_prose as prose
from physid.contact.models import build
from physid.contact.tasks import make_task

#: The contact library computes in float64; tensors made here without a dtype follow.
pytestmark = pytest.mark.usefixtures("float64_default")


def test_optimiser_steps_counts_the_short_last_batch():
    s = dataclasses.replace(study.SIZES["quick"], n_train=17, batch_size=4, epochs=3)
    assert prose.optimiser_steps(s) == 15
    assert prose.optimiser_steps(study.SIZES["paper"]) == 4000


def test_sizes_prose_under_the_authors_rule():
    s, paper = study.SIZES["quick"], study.SIZES["paper"]
    s = dataclasses.replace(s, lr=1e-3, lr_final=None, checkpoint="best", tasks=("BP5",),
                            models=("CM-CD-CLNN", "IN-CP-SP"), ablations=())
    got = prose.sizes_prose(s, paper)
    assert got["rule_sentence"] == ("Training follows the authors' rule: a constant rate of "
                                    "0.001, and each run keeps the state of the lowest "
                                    "validation loss.")
    assert got["n_tasks"] == "1 task" and got["n_models"] == "2 models"
    assert got["models_text"] == "CM-CD-CLNN and IN-CP-SP on BP5"
    assert got["rope_used"] == make_task(s.rope).description
    assert got["paper_steps"] == 4000 and got["steps_per_run"] == prose.optimiser_steps(s)
    assert (got["n_train"], got["batch"], got["paper_n_train"]) == (s.n_train, s.batch_size, 800)
    assert got["paper_lr"] == 0.001
    assert got["paper_authors_reach"] == pytest.approx(4000 * 1e-3 / 6)
    assert got["paper_reach"] == pytest.approx(4000 * 0.011 / 12)
    start = training.initial_parameters(training.make_job(task="BP5-e", model="CM-CD-CLNN"))
    gap = 1 - float(np.mean(start["cor"]))
    assert got["paper_reach_text"].startswith(
        f"less than the {gap:.2f} that BP5-e's restitution has to travel from this seed's start")
    assert gap > got["paper_authors_reach"]


def test_sizes_prose_under_a_schedule_says_how_far_e_can_move():
    paper = study.SIZES["paper"]
    s = study.SIZES["default"]  # at most 800 steps under the cosine, with the plateau rule
    got = prose.sizes_prose(s, paper)
    assert got["rule_sentence"] == (
        "Training uses a rate that starts at 0.01 and decays along a cosine to 0.001 at the "
        "schedule's last step, and each run keeps the state of the lowest validation loss; the "
        "authors used a constant 0.001 and kept the state of the lowest validation loss. In 800 "
        "steps the authors' rate could move a restitution by at most 0.13 (the speed limit "
        "below), this schedule by 0.73.")
    assert got["length_text"].startswith(
        "for at most 200 epochs (800 optimiser steps), and a run stops earlier once its "
        "validation loss has plateaued: after 30 epochs (120 steps) in a row in which it did "
        "not fall 1 % below")
    assert got["length_text"].endswith(
        "The baselines' schedule is 80 epochs (320 steps): their validation losses flatten well "
        "before the contact models' (measured beside study.BASELINE_EPOCHS).")
    every = dataclasses.replace(s, patience=None, epochs=80, baseline_epochs=None)
    assert prose.sizes_prose(every, paper)["length_text"] == (
        "for 80 epochs (320 optimiser steps for every model).")
    assert got["models_text"] == (
        "CM-CD-CLNN, CMr-CD-CLNN, MLP-CD-CLNN, IN-CP-CLNN and IN-CP-SP on every task, and "
        "CM-CD-CHNN and CMr-CD-CHNN on BP5, CP3 and Gyro")
    assert got["n_models"] == "7 models"
    # The default's ablation: the authors' rule at the grid's budget.
    assert got["schedule_text"] == (
        "CM-CD-CLNN trained on BP5 and BP5-e for 800 steps (the grid's budget) with the "
        "authors' rule, a constant rate of 0.001, and each run keeps the state of the lowest "
        "validation loss")
    cosine = dataclasses.replace(s, patience=None, epochs=80, schedule_rule={
        "epochs": 200, "lr_final": 1e-3, "checkpoint": "last", "patience": 30})
    assert prose.sizes_prose(cosine, paper)["schedule_text"] == (
        "CM-CD-CLNN trained on BP5 and BP5-e for at most 800 steps with a rate that "
        "starts at 0.01 and decays along a cosine to 0.001 at the schedule's last step, and "
        "each run keeps its last state")


def _result(task, model, skipped=0, fallbacks=0, diverged=0, evaluated=True, steps=8):
    return {
        "job": {"task": task, "model": model, "epochs": 4, "n_train": 4, "batch_size": 2},
        "steps": steps,
        "skipped_steps": skipped,
        "solver": {"fallbacks": fallbacks},
        "evaluation": {"diverged": diverged} if evaluated else None,
    }


def test_runs_prose_counts_shared_jobs_once_and_skips_missing_evaluations():
    shared = _result("BP5", "CM-CD-CLNN", skipped=1, fallbacks=2, diverged=1)
    results = study.StudyResults(
        grid=[shared, _result("BP5", "IN-CP-SP", fallbacks=1, evaluated=False, steps=6),
              _result("CP3", "MLP-CD-CLNN", steps=4)],
        efficiency=[shared],
        lcp=[_result("CP3-e", "CM-CD-CLNN", skipped=3, diverged=5)],
        noise=[],
        schedule=[],
        ablations=[],
    )
    assert prose.runs_prose(results) == {
        "n_runs": "4 training runs",
        "skipped_text": "5 optimiser steps",  # the shared job's results, in both studies
        "fallbacks_text": "3 cvxpylayers fallbacks",
        "diverged_text": "1 test rollout",  # the grid's only
        # Of 8 planned steps, the baselines stopped by the plateau rule at 6 and 4.
        "stopped_text": "the contact models trained 8–8 steps (0 of 1 stopped by the plateau "
        "rule); the baselines trained 4–6 steps (2 of 2 stopped by the plateau rule)",
    }


@pytest.mark.parametrize("slope, start", [(1.2, "so the time grows"), (0.2, "yet at these")])
def test_scaling_prose_says_what_the_contacts_cost(slope, start):
    got = prose.scaling_prose(study.SIZES["quick"], slope)
    assert got["contacts_effect"].startswith(start)
    assert got["scaling_batch"] == study.SIZES["quick"].scaling_batch


def test_ablations_prose_says_what_each_run_changes():
    paper = study.SIZES["paper"]
    assert prose.ablations_prose(study.SIZES["default"], paper) == (
        "CMr-CD-CLNN on BP5 on 800 training trajectories (the paper's count) instead of 100, "
        "for the grid's 800 planned steps; CMr-CD-CHNN on BP5 on 800 training trajectories "
        "(the paper's count) instead of 100, for the grid's 800 planned steps; CMr-CD-CLNN on "
        "Rope over its whole schedule of 800 steps, without the plateau rule's stop")
    assert prose.ablations_prose(paper, paper) == "no single ablation run at this scale"


def test_ablation_result_prose_sets_each_run_beside_the_grid():
    def row(task, model, rule, n, steps, error, e=0.5):
        return {"task": task, "model": model, "rule": rule, "trajectories": n, "steps": steps,
                "largest mass-ratio error (%)": error, "e": e}

    rows = [row("BP5", "CMr-CD-CLNN", "grid", 100, 800, 6.17),
            row("BP5", "CMr-CD-CLNN", "ablation", 800, 800, 0.25),
            row("Rope50", "CMr-CD-CLNN", "grid", 100, 452, None, 0.059),
            row("Rope50", "CMr-CD-CLNN", "ablation", 100, 800, None, 0.027)]
    assert prose.ablation_result_prose(rows) == {"ablation_result_text": (
        "CMr-CD-CLNN on BP5: a largest mass-ratio error of 0.25 % on 800 trajectories (the "
        "grid's run, 100: 6.17 %); CMr-CD-CLNN on Rope: e = 0.027 after 800 steps (the grid's "
        "run, stopped at 452 steps: 0.059).")}
    assert prose.ablation_result_prose([]) == {
        "ablation_result_text": "No single ablation ran at this scale."}


def test_explorer_prose_names_model_then_task():
    assert prose.explorer_prose(("BP5", "CM-CD-CLNN")) == {"explorer_key": "CM-CD-CLNN on BP5"}


def test_every_prose_dict_glues(monkeypatch):
    glued = {}
    monkeypatch.setattr("myst_nb.glue", lambda name, value, display: glued.update({name: value}))
    quick = study.SIZES["quick"]
    glue_all(prose.sizes_prose(quick, study.SIZES["paper"]))
    glue_all(prose.scaling_prose(quick, 0.5))
    glue_all(prose.explorer_prose(("BP5", "CM-CD-CLNN")))
    assert glued["n_train"] == float(quick.n_train) and glued["scaling_batch"] == 4.0
    assert glued["explorer_key"] == "CM-CD-CLNN on BP5"


def test_explorer_rollouts_start_at_the_truth_and_restore_once(tmp_path, monkeypatch):
    monkeypatch.setenv("PHYSID_CACHE", str(tmp_path))
    job = training.make_job(task="BP5", model="CM-CD-CLNN", n_train=1, n_val=1, n_test=2)
    state = build("CM-CD-CLNN", "BP5", job["model_seed"]).state_dict()
    result = {"job": job, "state": {k: v.numpy() for k, v in state.items()}}
    rollouts = prose.ExplorerRollouts({("BP5", "CM-CD-CLNN"): result})
    x_pred, x_true, dt, name = rollouts(("BP5", "CM-CD-CLNN"), 1)
    assert name == "BP5" and dt == make_task("BP5").dt
    assert x_pred.shape == x_true.shape
    np.testing.assert_allclose(x_pred[0], x_true[0])
    model = rollouts._models[("BP5", "CM-CD-CLNN")]
    again, *_ = rollouts(("BP5", "CM-CD-CLNN"), 1)
    assert rollouts._models[("BP5", "CM-CD-CLNN")] is model
    np.testing.assert_array_equal(again, x_pred)


def test_no_contact_prose_says_where_the_baselines_learned_nothing():
    def run(task, model, error):
        return {"job": {"task": task, "model": model},
                "evaluation": {"traj_rel_error": error}}

    grid = [
        run("BP5", "CM-CD-CLNN", 0.5), run("BP5", "IN-CP-SP", 2.2), run("BP5", "MLP-CD-CLNN", 2.18),
        run("BD5", "CM-CD-CLNN", 1.5), run("BD5", "IN-CP-SP", 1.6),
        run("CP3", "CM-CD-CLNN", 0.01), run("CP3", "IN-CP-SP", 0.02),
        run("Rope50", "CM-CD-CLNN", 0.03), run("Rope50", "IN-CP-SP", 0.5),
    ]
    reference = {"BP5": 2.17, "BD5": 1.10, "CP3": 0.0, "Rope": 0.02}
    got = prose.no_contact_prose(grid, reference)
    assert got["nocontact_same_text"] == "BP5 (2.17; the baselines 2.18–2.2)"
    assert got["nocontact_zero_text"] == "CP3"
    assert got["nocontact_below_text"] == "BP5"  # BD5's and the rope's best are above
    assert got["nocontact_compared"] == "3 tasks" and got["nocontact_tolerance"] == 5.0
    none = prose.no_contact_prose(grid[:2], {"BP5": 0.1})
    assert none["nocontact_same_text"] == "no task" and none["nocontact_zero_text"] == "no task"
