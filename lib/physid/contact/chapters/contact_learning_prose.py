"""What the prose of "Learning dynamics and contact with CLNN and CHNN"
(``book/contact_learning.md``) says about each result, as functions a test can check.

Each ``*_prose`` function takes results the chapter computed and returns the numbers and the
phrases its prose quotes, by glue name, for :func:`physid.book.display.glue_all`; a count with
its noun comes from :func:`~physid.book.display.plural`. A phrase that depends on a result
(whether this scale trains at the authors' learning rate, whether the rope's contacts make the
time per iteration grow faster than the rope) is decided here, not in a hidden cell.
:func:`optimiser_steps` is the number of steps a scale trains for, which the claims also take,
and :class:`ExplorerRollouts` rolls a trained model out for the chapter's explorer.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from physid.book.display import plural
from physid.contact import training
from physid.contact.chapters.contact_learning import (
    BASELINES,
    CHNN_MODELS,
    CM_MODELS,
    SCHEDULE_MODELS,
    LearnSizes,
    StudyResults,
    ablation_jobs,
    task_label,
)
from physid.contact.learned import restitution_reach
from physid.contact.tasks import TASK_NAMES, make_task

__all__ = [
    "AUTHORS_LR",
    "ExplorerRollouts",
    "ablation_result_prose",
    "ablations_prose",
    "explorer_prose",
    "optimiser_steps",
    "runs_prose",
    "scaling_prose",
    "schedule_prose",
    "sizes_prose",
]


def optimiser_steps(s: LearnSizes) -> int:
    """The optimiser steps of one run at the sizes ``s`` (at most, where the plateau rule
    stops it): a step per minibatch of ``s.batch_size`` chunks (the last one may be short),
    ``s.epochs`` times."""
    return s.epochs * math.ceil(s.n_train / s.batch_size)


def _length(s: LearnSizes) -> str:
    """How long a run trains at the sizes ``s``, in words."""
    steps = optimiser_steps(s)
    if s.patience is None:
        return f"for {s.epochs:,} epochs ({steps:,} optimiser steps for every model)."
    per_epoch = math.ceil(s.n_train / s.batch_size)
    gain = 100 * training.TrainConfig().min_improvement
    text = (f"for at most {s.epochs:,} epochs ({steps:,} optimiser steps), and a run stops "
            f"earlier once its validation loss has plateaued: after {s.patience} epochs "
            f"({s.patience * per_epoch:,} steps) in a row in which it did not fall {gain:g} % "
            "below the loss of the last epoch that did (training.plateaued), so each model "
            "stops where its own validation loss stops falling.")
    if s.baseline_epochs is not None and s.baseline_epochs != s.epochs:
        text += (f" The baselines' schedule is {s.baseline_epochs:,} epochs "
                 f"({s.baseline_epochs * per_epoch:,} steps): their validation losses flatten "
                 "well before the contact models' (measured beside study.BASELINE_EPOCHS).")
    return text


#: The authors' training rule: AdamW at a constant rate of 1e-3, the state of the lowest
#: validation loss kept (their code; the paper's sizes are in ``SIZES["paper"]``).
AUTHORS_LR = 1e-3


def _rule(lr: float, lr_final: float | None, checkpoint: str) -> str:
    rate = f"a constant rate of {lr:g}" if lr_final is None else (
        f"a rate that starts at {lr:g} and decays along a cosine to {lr_final:g} at the "
        "schedule's last step")
    kept = ("keeps the state of the lowest validation loss" if checkpoint == "best"
            else "keeps its last state")
    return f"{rate}, and each run {kept}"


def sizes_prose(s: LearnSizes, paper: LearnSizes, seed: int = 0) -> dict[str, Any]:
    """The sizes of this scale ``s`` beside the paper's, the rope and the models this scale
    trains, and the training rule in words beside the authors' (a constant rate of
    :data:`AUTHORS_LR`, the best validation state) with how far each lets a restitution move
    (:func:`~physid.contact.learned.restitution_reach`), here and over the paper's steps,
    against the distance BP5-e's restitution has from the start ``seed`` gives it to its
    truth, 1."""
    steps, paper_steps = optimiser_steps(s), optimiser_steps(paper)
    start_job = training.make_job(task="BP5-e", model="CM-CD-CLNN", model_seed=seed)
    start = float(np.mean(training.initial_parameters(start_job)["cor"]))
    paper_authors_reach = restitution_reach(paper_steps, AUTHORS_LR)
    verb = "less than" if paper_authors_reach < 1 - start else "no less than"
    paper_reach_text = (f"{verb} the {1 - start:.2f} that BP5-e's restitution has to travel "
                        f"from this seed's start ({start:.2f}) to its truth (1)")
    reach = restitution_reach(steps, s.lr, s.lr_final)
    authors_reach = restitution_reach(steps, AUTHORS_LR)
    if (s.lr, s.lr_final, s.checkpoint) == (AUTHORS_LR, None, "best"):
        rule_sentence = ("Training follows the authors' rule: a constant rate of "
                         f"{AUTHORS_LR:g}, and each run keeps the state of the lowest "
                         "validation loss.")
    else:
        rule_sentence = (
            f"Training uses {_rule(s.lr, s.lr_final, s.checkpoint)}; the authors used a "
            f"constant {AUTHORS_LR:g} and kept the state of the lowest validation loss. "
            f"In {steps:,} steps the authors' rate could move a restitution by at most "
            f"{authors_reach:.2f} (the speed limit below), this schedule by {reach:.2f}."
        )
    all_tasks = set(s.tasks) == set(TASK_NAMES)
    chnn = [m for m in CHNN_MODELS if m not in s.models]
    where = "every task" if all_tasks else _names(list(s.tasks))
    models_text = f"{_names(list(s.models))} on {where}"
    if chnn and s.chnn_tasks:
        models_text += f", and {_names(chnn)} on {_names(list(s.chnn_tasks))}"
    return {
        "n_train": s.n_train,
        "n_val": s.n_val,
        "n_test": s.n_test,
        "epochs": s.epochs,
        "batch": s.batch_size,
        "lr": s.lr,
        "paper_epochs": paper.epochs,
        "paper_batch": paper.batch_size,
        "paper_lr": AUTHORS_LR,
        "paper_n_train": paper.n_train,
        "rope_used": make_task(s.rope).description,
        "n_models": plural(len(s.models) + len(chnn) * bool(s.chnn_tasks), "model"),
        "n_tasks": plural(len(s.tasks), "task"),
        "models_text": models_text,
        "steps_per_run": steps,
        "length_text": _length(s),
        "paper_steps": paper_steps,
        "rule_sentence": rule_sentence,
        "e_reach_authors": authors_reach,
        "paper_rule_text": _rule(paper.lr, paper.lr_final, paper.checkpoint),
        "paper_reach": restitution_reach(paper_steps, paper.lr, paper.lr_final),
        "paper_authors_reach": paper_authors_reach,
        "paper_reach_text": paper_reach_text,
        "schedule_text": schedule_prose(s),
        "ablations_text": ablations_prose(s, paper),
    }


def schedule_prose(s: LearnSizes) -> str:
    """The schedule ablation in words: its models, tasks, steps and rule (named the authors'
    where it is theirs, and whether its runs may stop at a plateau)."""
    rule = {**s.rule(), **s.schedule_rule}
    steps = rule["epochs"] * math.ceil(s.n_train / s.batch_size)
    theirs = (rule["lr"], rule["lr_final"], rule["checkpoint"]) == (AUTHORS_LR, None, "best")
    length = "at most " if rule["patience"] is not None else ""
    same = " (the grid's budget)" if rule["epochs"] == s.epochs else ""
    return (f"{_names(list(SCHEDULE_MODELS))} trained on {_names(list(s.schedule_tasks))} for "
            f"{length}{steps:,} steps{same} with "
            + ("the authors' rule, " if theirs else "")
            + _rule(rule["lr"], rule["lr_final"], rule["checkpoint"]))


def ablations_prose(s: LearnSizes, paper: LearnSizes) -> str:
    """The single ablation runs in words
    (:func:`~physid.contact.chapters.contact_learning.ablation_jobs`): each model and task with
    what it changes in the grid's job (a number of trajectories named the paper's where it is
    theirs, the plateau rule's stop, another rule)."""
    parts = []
    for (_, model, changes), job in zip(s.ablations, ablation_jobs(s, 0), strict=True):
        what = []
        if "n_train" in changes:
            theirs = " (the paper's count)" if job["n_train"] == paper.n_train else ""
            what.append(f"on {job['n_train']:,} training trajectories{theirs} instead of "
                        f"{s.n_train:,}, for the grid's {training.planned_steps(job):,} planned "
                        "steps")
        if "patience" in changes and changes["patience"] is None:
            what.append(f"over its whole schedule of {training.planned_steps(job):,} steps, "
                        "without the plateau rule's stop")
        rule = {k: v for k, v in changes.items() if k not in ("n_train", "patience")}
        if rule:
            what.append(f"with {_rule(job['lr'], job['lr_final'], job['checkpoint'])}")
        parts.append(f"{model} on {task_label(job['task'])} {' and '.join(what)}")
    return "; ".join(parts) if parts else "no single ablation run at this scale"


def ablation_result_prose(rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    """What the single ablation runs found, from their rows of
    :func:`~physid.contact.chapters.contact_learning.ablation_rows`: each run's largest
    mass-ratio error (BP5, BD5), else its learned e, with what it changed (the trajectories,
    the steps it trained), beside the grid's run of the same task and model."""
    grid = {(r["task"], r["model"]): r for r in rows if r["rule"] == "grid"}
    sentences = []
    for new in rows:
        if new["rule"] != "ablation":
            continue
        old = grid[(new["task"], new["model"])]
        if new["largest mass-ratio error (%)"] is not None:
            key, unit, name = "largest mass-ratio error (%)", " %", "a largest mass-ratio error of "
            digits = 2
        else:
            key, unit, name, digits = "e", "", "e = ", 3
        changed, was = [], []
        if new["trajectories"] != old["trajectories"]:
            changed.append(f"on {new['trajectories']:,} trajectories")
            was.append(f"{old['trajectories']:,}")
        if new["steps"] != old["steps"]:
            changed.append(f"after {new['steps']:,} steps")
            was.append(f"stopped at {old['steps']:,} steps")
        how = " and ".join(changed) or f"with {new['schedule']}"
        grid_run = ", ".join(["the grid's run", *was])
        sentences.append(
            f"{new['model']} on {task_label(new['task'])}: {name}{new[key]:.{digits}f}{unit} "
            f"{how} ({grid_run}: {old[key]:.{digits}f}{unit})")
    if not sentences:
        return {"ablation_result_text": "No single ablation ran at this scale."}
    return {"ablation_result_text": "; ".join(sentences) + "."}


def runs_prose(results: StudyResults) -> dict[str, Any]:
    """How the training went: the distinct runs (a job shared by two studies counts once),
    the optimiser steps skipped over all the studies' results, the grid's cvxpylayers
    fallbacks and diverged test rollouts (a grid run without an evaluation has none), and how
    many steps the grid's contact models and baselines trained (the plateau rule may stop a
    run before its schedule ends)."""
    parts = [getattr(results, f.name) for f in dataclasses.fields(results)]  # every study
    every = [r for part in parts for r in part]
    runs = len({repr(sorted(r["job"].items())) for r in every})
    stopped = []
    for label, models in (("the contact models", CM_MODELS), ("the baselines", BASELINES)):
        taken = [int(r["steps"]) for r in results.grid if r["job"]["model"] in models]
        early = sum(int(r["steps"]) < training.planned_steps(r["job"]) for r in results.grid
                    if r["job"]["model"] in models)
        if taken:
            stopped.append(f"{label} trained {min(taken):,}–{max(taken):,} steps "
                           f"({early} of {len(taken)} stopped by the plateau rule)")
    evaluations = [r["evaluation"] for r in results.grid if r["evaluation"] is not None]
    return {
        "n_runs": plural(runs, "training run"),
        "skipped_text": plural(sum(r["skipped_steps"] for r in every), "optimiser step"),
        "fallbacks_text": plural(
            sum(r["solver"]["fallbacks"] for r in results.grid), "cvxpylayers fallback"
        ),
        "diverged_text": plural(sum(e["diverged"] for e in evaluations), "test rollout"),
        "stopped_text": "; ".join(stopped) if stopped else "no run of the grid",
    }


#: How close a baseline's 5-step error must be to the no-contact reference's (relative) for
#: the chapter to say it learned nothing of contact.
SAME_AS_NO_CONTACT = 0.05


def _names(items: list[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``; ``"no task"`` for none."""
    if not items:
        return "no task"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def no_contact_prose(
    grid: list[dict[str, Any]], reference: Mapping[str, float]
) -> dict[str, Any]:
    """Where the grid's errors (Fig. 3, the 5-step error) stand against the true dynamics
    without contact (``reference``, task → error): the tasks where every baseline lies within
    :data:`SAME_AS_NO_CONTACT` of it, the tasks where it is exactly 0 (no test trajectory
    meets a contact in its first five steps), and the tasks where the best contact model is
    below it."""
    errors: dict[str, dict[str, float]] = {}
    for r in grid:
        if r["evaluation"] is not None:
            task = task_label(r["job"]["task"])
            errors.setdefault(task, {})[r["job"]["model"]] = float(
                r["evaluation"]["traj_rel_error"]
            )
    same, zero, below, compared = [], [], [], []
    for task, models in errors.items():
        ref = reference.get(task, math.nan)
        base = [e for m, e in models.items() if m in BASELINES]
        cm = [e for m, e in models.items() if m in CM_MODELS]
        if ref == 0.0:
            zero.append(task)
            continue
        if not math.isfinite(ref):
            continue
        if base and all(abs(e - ref) <= SAME_AS_NO_CONTACT * ref for e in base):
            same.append(f"{task} ({ref:.3g}; the baselines {min(base):.3g}–{max(base):.3g})")
        if cm:
            compared.append(task)
            if min(cm) < ref:
                below.append(task)
    return {
        "nocontact_same_text": _names(same),
        "nocontact_tolerance": 100 * SAME_AS_NO_CONTACT,
        "nocontact_zero_text": _names(zero),
        "nocontact_below_text": _names(below),
        "nocontact_compared": plural(len(compared), "task"),
    }


def scaling_prose(s: LearnSizes, slope: float) -> dict[str, Any]:
    """Table 3's batch and what its log-log ``slope`` says of the contacts' cost: above 1 the
    time grows faster than the rope, else the costs that do not grow with it still dominate."""
    return {
        "scaling_batch": s.scaling_batch,
        "contacts_effect": "so the time grows faster than the rope's length"
        if slope > 1
        else "yet at these sizes the costs that do not grow with the rope still dominate",
    }


def explorer_prose(key: tuple[str, str]) -> dict[str, Any]:
    """The explorer's default view, ``key`` = ``(task, model)``, as the caption names it."""
    task, model = key
    return {"explorer_key": f"{model} on {task}"}


#: The job's fields that name its data set (:func:`physid.contact.training.job_data`).
_DATA_FIELDS = ("task", "n_train", "n_val", "n_test", "data_seed", "data_model", "noise")


class ExplorerRollouts:
    """The ``rollouts`` of the chapter's explorer
    (:func:`~physid.contact.chapters.contact_learning_figures.rollout_explorer`).

    Called with a ``(task, model)`` key of ``results_by_key`` (fit results) and a 0-based test
    trajectory index, it rolls that run's trained model out from the trajectory's first state
    and returns ``(x_pred, x_true, dt, task)``. Each model is restored once, on first use.
    """

    def __init__(self, results_by_key: Mapping[tuple[str, str], Mapping[str, Any]]) -> None:
        self.results_by_key = results_by_key
        self._models: dict[tuple[str, str], nn.Module] = {}

    def __call__(
        self, key: tuple[str, str], index: int
    ) -> tuple[np.ndarray, np.ndarray, float, str]:
        result = self.results_by_key[key]
        if key not in self._models:
            self._models[key] = training.restore(result)
        data = training.job_data(**{k: result["job"][k] for k in _DATA_FIELDS})
        x_true = data.test_x[index].numpy()
        with torch.no_grad():
            xs, _ = self._models[key].rollout(
                data.test_x[index : index + 1, 0],
                data.test_v[index : index + 1, 0],
                len(x_true) - 1,
            )
        return xs[0].numpy(), x_true, make_task(key[0]).dt, key[0]
