"""The claims of the chapter "Learning dynamics and contact with CLNN and CHNN"
(``book/contact_learning.md``), as functions of its results
(:mod:`physid.contact.chapters.contact_learning`).

Each function returns a :class:`~physid.book.claims.Verdict` that the chapter records with
:func:`~physid.book.claims.record`; the criterion lives here, where a test can show that it
holds and that it can fail. Two also return the sentence the chapter's prose glues beside the
claim (the authors' CM on the gyroscope, the BD5 mass ratios).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from physid.book.claims import Verdict
from physid.contact import datasets
from physid.contact.chapters.contact_learning import (
    BASELINES,
    CM_MODELS,
    energy_drift,
    task_label,
)
from physid.contact.learned import restitution_reach
from physid.contact.tasks import make_task
from physid.core.bench import Timing
from physid.core.validate import check_positive

__all__ = [
    "COEFFICIENT_TOL",
    "ENERGY_TOL",
    "NOISE_TOL",
    "RATIO_TOL",
    "SLOPE_LIMIT",
    "beats_baselines_claim",
    "energy_kept_claim",
    "coefficient_judgement",
    "learned_mu_e_claim",
    "linear_in_size_claim",
    "mass_ratio_claim",
    "robust_lcp_claim",
    "robust_noise_claim",
    "rope_contacts",
    "sample_efficient_claim",
]

#: How far a learned μ or e may lie from the truth (Table 2).
COEFFICIENT_TOL = 0.05
#: How far a learned mass ratio may lie from the truth, relative to it (Appendix I).
RATIO_TOL = 0.01
#: How much more than the truth's a CM model's relative energy drift may be (Fig. 5).
ENERGY_TOL = 0.01
#: The largest log-log slope of time per iteration against nodes that counts as linear (Table 3).
SLOPE_LIMIT = 1.2
#: How far μ or e learned from noisy observations may lie from the truth (Appendix K).
NOISE_TOL = 0.1

#: The tasks on which the authors' CM learned wrong coefficients (Table 2).
_GYRO_TASKS = ("Gyro-e", "Gyro")


def beats_baselines_claim(comparison: Sequence[Mapping[str, Any]], tasks: Sequence[str],
                          steps: int, paper_steps: int) -> Verdict:
    """Fig. 3: on every task of ``tasks``, the best CM model's 5-step error is below the best
    baseline's; ``comparison`` holds the rows of
    :func:`~physid.contact.chapters.contact_learning.best_cm_and_baseline` (their ``ratio`` is
    the best baseline's error over the best CM model's), after ``steps`` optimiser steps
    (the paper's ``paper_steps``)."""
    ratios = [r["ratio"] for r in comparison]
    losing = [r["task"] for r in comparison if not r["ratio"] > 1]
    compared = {task_label(r["task"]) for r in comparison}  # "Rope50" is the grid's "Rope"
    missing = [task for task in tasks if task_label(task) not in compared]
    holds = not losing and not missing
    better = sum(r > 1 for r in ratios)
    reasons = []
    if losing:
        reasons.append(f"A baseline is as good or better on {', '.join(losing)} after {steps} "
                       f"optimiser steps (the paper: {paper_steps}).")
    if missing:
        reasons.append(f"No CM model or no baseline was evaluated on {', '.join(missing)}.")
    return Verdict(
        "zhong2021-cm-beats-baselines",
        "On every task, the best model with the contact model predicts the test trajectories "
        "more accurately than every baseline (Fig. 3).",
        paper="CM models best on all tasks",
        ours=f"best CM model better on {better} of {len(ratios)} tasks; the best baseline's "
        f"error is {min(ratios):.2g}–{max(ratios):.2g} times the best CM model's",
        criterion="on every task of the grid, the best CM/CMr model's 5-step error is below "
        "every baseline's",
        holds=holds,
        cause="open",
        why=" ".join(reasons),
        numbers={"beat_tasks": better, "beat_min": min(ratios), "beat_max": max(ratios)},
    )


def _exact(model: str) -> bool:
    """Whether ``model`` has the exact contact model (CM-…), not the regularised CMr-…."""
    return model.startswith("CM-")


def _authors_cm_on_gyro(row: Mapping[str, Any]) -> bool:
    """Whether ``row`` is a CM model (not CMr) on a gyroscope, where the authors' CM failed."""
    return row["task"] in _GYRO_TASKS and row["model"].startswith("CM-")


def _mu_near(row: Mapping[str, Any], mu: float, tol: float) -> bool:
    """Whether the learned μ lies within ``tol`` of ``mu``; a μ of NaN (a task whose contacts
    have no friction, where μ acts on nothing) is not judged."""
    return math.isnan(row["μ"]) or abs(row["μ"] - mu) <= tol


def _near(row: Mapping[str, Any], mu: float, cor: float, tol: float) -> bool:
    return _mu_near(row, mu, tol) and abs(row["e"] - cor) <= tol


def coefficient_judgement(row: Mapping[str, Any], tol: float = COEFFICIENT_TOL) -> str:
    """How Table 2's rule judges one learned (μ, e) (a row of
    :func:`~physid.contact.chapters.contact_learning.coefficient_rows`): ``"truth"`` when it
    lies within ``tol`` of the truth; ``"authors'"`` when it does not, but the authors' own
    model did not reach the truth either and ours lies within ``tol`` of the authors' value (it
    reproduces their result); ``"missed"`` otherwise."""
    tol = check_positive("tol", tol)
    if _near(row, row["true μ"], row["true e"], tol):
        return "truth"
    theirs = (row.get("authors' μ", math.nan), row.get("authors' e", math.nan))
    authors_reached = any(math.isnan(v) for v in theirs) or (
        abs(theirs[0] - row["true μ"]) <= tol and abs(theirs[1] - row["true e"]) <= tol
    )
    if not authors_reached and _near(row, *theirs, tol):
        return "authors'"
    return "missed"


def _out_of_reach(row: Mapping[str, Any], reach: float, tol: float) -> bool:
    """Whether a missed pair is one whose μ is right and whose true e lay further from e's
    start than training could move it (``reach``,
    :func:`~physid.contact.learned.restitution_reach` of the run's steps)."""
    return _mu_near(row, row["true μ"], tol) and abs(row["true e"] - row["start e"]) > reach


def learned_mu_e_claim(coefficients: Sequence[Mapping[str, Any]], steps: int, lr: float,
                       lr_final: float | None = None, tol: float = COEFFICIENT_TOL,
                       ablation: Sequence[Mapping[str, Any]] = ()) -> tuple[Verdict, str]:
    """Table 2, judged as the paper judged it: every learned (μ, e) of ``coefficients`` (the
    rows of :func:`~physid.contact.chapters.contact_learning.coefficient_rows`) within ``tol``
    of the truth, or, where the authors' own model did not reach the truth, within ``tol`` of
    the authors' value (:func:`coefficient_judgement`); after ``steps`` optimiser steps at
    learning rate ``lr`` (decaying to ``lr_final`` when it is given).

    Whose failure a miss is: e moves at most the sum of the rates over 6 in training
    (:func:`~physid.contact.learned.restitution_reach`); when every missed pair has μ right
    and its true e further than that from e's start, no training of this length could pass,
    and the cause is the book's training length (``"setup"``). ``ablation`` holds the rows of
    the same function for runs trained again with one setting of the grid changed
    (:func:`~physid.contact.chapters.contact_learning.ablation_jobs`): where every missed
    pair has such a run that the rule accepts, the grid's training of those runs is what
    misses them (``"setup"``). Otherwise the cause is ``"open"``.

    Returns the verdict and the sentence on what CM learned on the gyroscopes."""
    reach = restitution_reach(steps, lr, lr_final)

    def _row_reach(row: Mapping[str, Any]) -> float:
        """The reach of the row's own run: its steps (``"steps"``, where the plateau rule
        stopped it early) of the ``steps``-step schedule."""
        return restitution_reach(row.get("steps", steps), lr, lr_final, planned=steps)

    rate = f"{lr:g}" if lr_final is None else f"{lr:g} decaying to {lr_final:g}"
    judged = [coefficient_judgement(r, tol) for r in coefficients]
    holds = bool(judged) and all(j != "missed" for j in judged)
    truth, theirs = judged.count("truth"), judged.count("authors'")
    gyro = "; ".join(f"{r['model']} on {r['task']}: μ = {r['μ']:.3f}, e = {r['e']:.3f}"
                     for r in coefficients if _authors_cm_on_gyro(r))
    missed = [r for r, j in zip(coefficients, judged, strict=True) if j == "missed"]
    cause = "open"
    if not judged:
        why = "No contact model was trained on a Table 2 task."
    elif missed and all(_out_of_reach(r, _row_reach(r), tol) for r in missed):
        cause = "setup"
        needed = max(math.ceil(6 * abs(r["true e"] - r["start e"]) / lr) for r in missed)
        why = (f"Every pair outside the tolerance has its μ right and a restitution that "
               f"could not get there in {steps} steps: e = r/6 + ½ moves at most "
               f"{reach:.3g} in {steps} AdamW steps at rate {rate}, and each "
               "started further from its truth: " + "; ".join(
                   f"{r['model']} on {r['task']} from e = {r['start e']:.3f} (true "
                   f"{r['true e']:g}) to {r['e']:.3f}, a move of "
                   f"{abs(r['e'] - r['start e']):.3f}" for r in missed)
               + f". The book's training is too short for them: at least {needed} steps at "
               f"the constant rate {lr:g} would let every one get there.")
    else:
        why = "Outside the tolerance of the truth and of the authors' value: " + "; ".join(
            f"{r['model']} on {r['task']} (μ = {r['μ']:.3f}, e = {r['e']:.3f}, "
            f"{r.get('steps', steps)} of at most {steps} optimiser steps)" for r in missed) + "."
        again = [a for a in ablation if any((a["task"], a["model"]) == (r["task"], r["model"])
                                            for r in missed)]
        if again:
            passed = {(a["task"], a["model"]) for a in again
                      if coefficient_judgement(a, tol) != "missed"}
            why += " Trained again with one setting of the grid changed: " + "; ".join(
                f"{a['model']} on {a['task']} learns μ = {a['μ']:.3f}, e = {a['e']:.3f} in "
                f"{a['steps']} steps, "
                + ("within the tolerance" if (a["task"], a["model"]) in passed else
                   "still outside it") for a in again) + "."
            if all((r["task"], r["model"]) in passed for r in missed):
                cause = "setup"
                why += " The grid's training of those runs is what misses them."
    verdict = Verdict(
        "zhong2021-learned-mu-e",
        "The learned friction and restitution coefficients match the true ones (Table 2) "
        "wherever the authors' models learned them, and the authors' own values where those "
        "did not (CM on the gyroscopes, μ ≈ 0.9 and e ≈ 0.65; CMr's e on the gyroscope, 0.89 "
        "for a true 0.8; the rope's e, 0.23–0.50 for a true 0).",
        paper="within about 0.03 on BP5-e, CP3-e, CP3 and for CMr on Gyro-e; CMr's e on Gyro "
        "0.892 and 0.893 (true 0.8); CM on the gyroscopes μ ≈ 0.9, e ≈ 0.65; the 10-node "
        "rope's e 0.23–0.50 (true 0)",
        ours=f"{truth} of {len(judged)} (model, task) pairs within {tol} of the truth, "
        f"{theirs} more within {tol} of the authors' value where theirs missed the truth; CM "
        f"on the gyroscope: {gyro or 'not trained'}",
        criterion=f"every trained pair within {tol} of the true μ and e, or, where the "
        f"authors' own model missed the truth by more than {tol}, within {tol} of the "
        "authors' value",
        holds=holds,
        cause=cause,
        why="" if holds else why,
        numbers={"coef_tol": tol, "coef_ok": truth, "coef_authors": theirs,
                 "coef_total": len(judged), "e_reach": reach},
    )
    return verdict, gyro or "not trained at this scale"


def mass_ratio_claim(bp5: Sequence[Mapping[str, Any]], bd5: Sequence[Mapping[str, Any]],
                     steps: int, paper_steps: int, ablation: Sequence[Mapping[str, Any]] = ()
                     ) -> tuple[Verdict, str]:
    """Appendix I: every CM model's mass ratios on BP5 within :data:`RATIO_TOL` of the truth;
    ``bp5`` and ``bd5`` are the rows of
    :func:`~physid.contact.chapters.contact_learning.mass_ratio_rows` on BP5 and BD5, after
    ``steps`` optimiser steps (the paper's ``paper_steps``).

    ``ablation`` (the rows of :func:`~physid.contact.chapters.contact_learning.ablation_rows`)
    separates the cause of a failure: where every failing CM model, trained on BP5 under
    another rule (length, schedule or checkpoint) or on more trajectories, meets the criterion,
    the grid's setting that the run changes is what fails it (``"setup"``); a failing model
    without such a run leaves the cause open (``_ablation_sentences``).

    Returns the verdict and the sentence on BD5, whose ratios the authors did not recover."""
    cm_bp5 = [r for r in bp5 if r["model"] in CM_MODELS]
    worst = max((r["largest error"] for r in cm_bp5), default=math.nan)
    holds = bool(cm_bp5) and worst <= RATIO_TOL
    cm_bd5 = [r for r in bd5 if r["model"] in CM_MODELS]
    if cm_bd5:
        worst_bd5 = max(r["largest error"] for r in cm_bd5)
        recovered = "are recovered" if worst_bd5 <= RATIO_TOL else "are not recovered either"
        bd5_sentence = (
            f"On BD5, with one inertia parametrisation throughout, the largest error is "
            f"{100 * worst_bd5:.2f} %: the ratios {recovered} at this scale (the authors' "
            "CM-CD-CLNN learned 1 : 3.30 : 10.51 : 14.01 : 17.80)."
        )
    else:
        bd5_sentence = "BD5 is not trained at this scale."
    why = (f"The largest error is {100 * worst:.2f} % after at most {steps} optimiser steps "
           f"(the paper: {paper_steps}).")
    outside = [r for r in cm_bp5 if r["largest error"] > RATIO_TOL]
    within = [r for r in cm_bp5 if r["largest error"] <= RATIO_TOL]
    if outside and within:
        why += " Outside the tolerance: " + ", ".join(
            f"{r['model']} {100 * r['largest error']:.2f} %" for r in outside
        ) + "; within it: " + ", ".join(
            f"{r['model']} {100 * r['largest error']:.3f} %" for r in within) + "."
    cause, tried = "open", _ablation_sentences(ablation, "BP5", {r["model"] for r in outside})
    if tried is not None and not holds:
        text, changed = tried
        why += text
        if changed:
            cause = "setup"
            why += f": {changed} is what fails the ratios."
        else:
            why += "."
    verdict = Verdict(
        "zhong2021-bp5-mass-ratio",
        "The CM models recover BP5's mass ratios 1 : 2 : 6 : 8 : 10 (Appendix I).",
        paper="2.0001, 6.0036, 8.0014, 10.0024 (CM-CD-CLNN)",
        ours=f"largest relative error {100 * worst:.2f} % over {len(cm_bp5)} CM models",
        criterion=f"every CM/CMr model's mass ratios within {100 * RATIO_TOL:.0f} % of the truth",
        holds=holds,
        cause=cause,
        why="" if holds else why,
        numbers={"bp5_worst": 100 * worst},
    )
    return verdict, bd5_sentence


def _ablation_sentences(rows: Sequence[Mapping[str, Any]], task: str, failing: set[str]
                        ) -> tuple[str, str] | None:
    """The mass-ratio errors of the ablation runs on ``task`` among ``rows``
    (:func:`~physid.contact.chapters.contact_learning.ablation_rows`), one sentence per
    ablation (its rule and number of training trajectories), and what in the grid's setting
    they show to fail the ratios: the settings that differ in the runs that bring every model
    of ``failing`` within :data:`RATIO_TOL` (``""`` where some failing model has no such run).
    None where no ablation ran on ``task``."""
    grid = {r["model"]: r for r in rows if r["task"] == task and r["rule"] == "grid"}
    tried = [r for r in rows if r["task"] == task and r["rule"] == "ablation"
             and r["largest mass-ratio error (%)"] is not None]
    if not tried:
        return None
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for r in tried:
        groups.setdefault((r["schedule"], r["trajectories"]), []).append(r)
    text = " " + ". ".join(
        f"Trained at most {max(r['steps'] for r in runs)} steps ({schedule}) on {trajectories} "
        "training trajectories, the largest errors are: "
        + ", ".join(f"{r['model']} {r['largest mass-ratio error (%)']:.2f} %" for r in runs)
        for (schedule, trajectories), runs in groups.items())
    fixing = [r for r in tried if r["model"] in failing
              and r["largest mass-ratio error (%)"] <= 100 * RATIO_TOL]
    if not failing or not failing <= {r["model"] for r in fixing}:
        return text, ""
    changed = []
    for r in fixing:
        base = grid.get(r["model"])
        if base is not None and base["trajectories"] != r["trajectories"]:
            changed.append(f"the grid's {base['trajectories']} training trajectories")
        if base is None or base["schedule"] != r["schedule"]:
            changed.append("the grid's training rule")
    return text, " and ".join(dict.fromkeys(changed))


def energy_kept_claim(grid: Sequence[Mapping[str, Any]], elastic: Sequence[str],
                      ablation: Sequence[Mapping[str, Any]] = ()) -> Verdict:
    """Fig. 5: on each task of ``elastic``, the energy drift
    (:func:`~physid.contact.chapters.contact_learning.energy_drift`) over the test horizon of
    every model with the exact contact model (CM-…; the paper says its regularised CMr loses
    energy at each collision) is at most the truth's plus :data:`ENERGY_TOL`, and every
    baseline's exceeds the best contact model's; ``grid`` holds the training results of every
    task and model.

    ``ablation`` (the rows of :func:`~physid.contact.chapters.contact_learning.ablation_rows`)
    separates the cause: where on every failing task each CM model trained under the
    ablation's rule keeps its drift within the truth's plus the tolerance, the grid's training
    is what fails the claim (``"setup"``); those runs are reported in ``why`` either way."""
    drift = {(r["job"]["task"], r["job"]["model"]): energy_drift(r) for r in grid
             if r["job"]["task"] in elastic and r["evaluation"] is not None}
    problems: dict[str, str] = {}  # failing task → what failed there
    for task in elastic:
        cm = {m: d["predicted"] for (t, m), d in drift.items() if t == task and m in CM_MODELS}
        base = {m: d["predicted"] for (t, m), d in drift.items() if t == task and m in BASELINES}
        if not cm or not base:
            problems[task] = f"{task}: no CM model or no baseline trained"
            continue
        truth = next(d["truth"] for (t, _), d in drift.items() if t == task)
        kept = all(v <= truth + ENERGY_TOL for m, v in cm.items() if _exact(m))
        drifting = all(v > min(cm.values()) for v in base.values())
        if not (kept and drifting):
            learned_e = [float(np.mean(r["learned"]["cor"])) for r in grid
                         if r["job"]["task"] == task and r["job"]["model"] in CM_MODELS]
            exact = [v for m, v in cm.items() if _exact(m)] or [math.nan]
            problems[task] = (
                f"{task}: CM drift {max(exact):.2g} (learned e "
                f"{min(learned_e):.2f}–{max(learned_e):.2f}, true 1), truth {truth:.2g}, "
                f"baselines {min(base.values()):.2g}–{max(base.values()):.2g}"
            )
    holds = not problems
    failing = list(problems)
    truths = {t: d["truth"] for (t, _), d in drift.items()}
    other = [r for r in ablation if r["rule"] == "ablation"
             and r["energy drift (%)"] is not None and r["task"] in failing]
    fixed = [t for t in failing if any(r["task"] == t and _exact(r["model"]) for r in other)
             and all(r["energy drift (%)"] <= 100 * (truths.get(t, math.inf) + ENERGY_TOL)
                     for r in other if r["task"] == t and _exact(r["model"]))]
    cause = "setup" if failing and len(fixed) == len(failing) else "open"
    authors_rule = "; ".join(
        f"trained {r['steps']} steps ({r['schedule']}), {r['model']} on {r['task']} learns "
        f"e = {r['e']:.2f} and drifts {r['energy drift (%)']:.2g} %" for r in other)
    cm_drifts = [d["predicted"] for (_, m), d in drift.items() if m in CM_MODELS and _exact(m)]
    cmr_drifts = [d["predicted"] for (_, m), d in drift.items() if m in CM_MODELS and not _exact(m)]
    cmr = f"; CMr up to {100 * max(cmr_drifts):.2g} %" if cmr_drifts else ""
    base_drifts = [d["predicted"] for (_, m), d in drift.items() if m in BASELINES]
    return Verdict(
        "zhong2021-learned-energy-kept",
        "Learned models with the contact model CM keep the energy of the elastic, frictionless "
        "systems over long horizons; the baselines drift (Fig. 5).",
        paper="CM models conserve energy best, baselines do not; CMr loses energy at each "
        "collision on CP3-e and Gyro-e",
        ours=f"largest CM drift {100 * max(cm_drifts):.2g} %{cmr}, smallest baseline drift "
        f"{100 * min(base_drifts):.2g} % over {grid[0]['evaluation']['steps']} steps"
        if cm_drifts and base_drifts else "not trained at this scale",
        criterion="on each elastic task, every CM (not CMr) model's mean |E(T) − E(0)| over "
        "the test trajectories, relative to their mean |E(0)|, is at most the truth's plus "
        f"{100 * ENERGY_TOL:.0f} %, and every baseline's exceeds the best CM or CMr model's",
        holds=holds,
        cause=cause,
        why="" if holds else "; ".join(problems.values()) + "."
        + (f" {authors_rule[0].upper()}{authors_rule[1:]}." if authors_rule else ""),
        numbers={
            "cm_drift": 100 * max(cm_drifts) if cm_drifts else math.nan,
            "base_drift": 100 * min(base_drifts) if base_drifts else math.nan,
        },
    )


def sample_efficient_claim(efficiency: Sequence[Mapping[str, Any]], epochs: int,
                           paper_epochs: int) -> Verdict:
    """Fig. 6: CM-CD-CLNN trained on the fewest trajectories predicts BP5 better than every
    baseline trained on the most; ``efficiency`` holds the rows of
    :func:`~physid.contact.chapters.contact_learning.efficiency_rows`, after ``epochs`` epochs
    (the paper's ``paper_epochs``)."""
    smallest = min(r["n_train"] for r in efficiency)
    largest = max(r["n_train"] for r in efficiency)
    cm_small = next(r["error"] for r in efficiency
                    if r["model"] == "CM-CD-CLNN" and r["n_train"] == smallest)
    base_large = {r["model"]: r["error"] for r in efficiency
                  if r["model"] in BASELINES and r["n_train"] == largest}
    holds = bool(base_large) and all(cm_small < e for e in base_large.values())
    best_base = min(base_large.values(), default=math.nan)
    return Verdict(
        "zhong2021-sample-efficient",
        "Trained on 25 trajectories, the contact model predicts BP5 better than every baseline "
        "trained on 800 (Fig. 6).",
        paper="CM at 25 better than baselines at 800",
        ours=f"CM-CD-CLNN at {smallest}: {cm_small:.3g}; best baseline at {largest}: "
        f"{best_base:.3g}",
        criterion=f"CM-CD-CLNN's 5-step error at {smallest} trajectories below every baseline's "
        f"at {largest}",
        holds=holds,
        cause="open",
        why="" if holds else f"At this scale the largest training set is {largest} trajectories "
        f"(the paper: 800), after {epochs} epochs (the paper: {paper_epochs}).",
        numbers={"eff_small": smallest, "eff_large": largest, "eff_cm": cm_small,
                 "eff_base": best_base},
    )


def rope_contacts(nodes: Sequence[int], batch: int, seed: int) -> dict[int, float]:
    """The mean number of contacts of a sample with contacts (as detected, without the
    dummies that pad a group of samples) in the data that
    :func:`~physid.contact.chapters.contact_learning.iteration_seconds` times on each rope of
    ``nodes`` nodes (``batch`` chunks drawn with ``seed``, the same draw)."""
    contacts = {}
    for n in nodes:
        counts = datasets.generate(make_task(f"Rope{n}"), batch, 0, 0, seed=seed)
        counts = counts.log.detected
        contacts[n] = sum(c * k for c, k in counts.items()) / max(1, sum(counts.values()))
    return contacts


def linear_in_size_claim(timings: Mapping[int, Timing], slope: float,
                         contacts: Mapping[int, float]) -> Verdict:
    """Table 3: the time per training iteration grows about linearly with the rope's nodes,
    the log-log ``slope`` of the median ``timings`` (by nodes) at most :data:`SLOPE_LIMIT`;
    ``contacts`` is :func:`rope_contacts` on the same ropes, which explains a steeper slope."""
    holds = slope <= SLOPE_LIMIT
    return Verdict(
        "zhong2021-linear-in-size",
        "The time per training iteration grows about linearly with the rope's number of nodes "
        "(Table 3).",
        paper="roughly linear in the number of nodes",
        ours=f"log-log slope {slope:.2f} over {min(timings)}–{max(timings)} nodes, seconds per "
        "iteration",
        criterion=f"log-log slope of seconds per iteration against nodes ≤ {SLOPE_LIMIT}",
        holds=holds,
        cause="open",
        why="" if holds else "Seconds per iteration: " + ", ".join(
            f"{t.median:.3g} at {n} nodes" for n, t in timings.items()
        ) + f"; the fitted slope is {slope:.2f}. A longer rope lies on the ground in more places: "
        "a sample with contacts has " + ", ".join(
            f"{contacts[n]:.1f} at {n} nodes" for n in timings
        ) + ", and each contact problem is one system over all of a sample's "
        "contacts, whose cost grows with their number, so the contact step grows faster than the "
        "rope.",
        numbers={"slope": slope, "nodes_small": min(contacts), "nodes_large": max(contacts),
                 "contacts_small": contacts[min(contacts)],
                 "contacts_large": contacts[max(contacts)]},
    )


def robust_lcp_claim(lcp_rows: Sequence[Mapping[str, Any]]) -> Verdict:
    """Appendix K: on each task of ``lcp_rows``, CM-CD-CLNN trained on data from the LCP model
    (``"LCP data"``) has a lower 5-step error than every baseline trained on the contact
    model's data (``"best baseline, CM data"``)."""
    worse = [r["task"] for r in lcp_rows if not r["LCP data"] < r["best baseline, CM data"]]
    holds = bool(lcp_rows) and not worse
    return Verdict(
        "zhong2021-robust-lcp-data",
        "A model with the contact model still learns well from data generated by the LCP model "
        "(Appendix K).",
        paper="errors of the same order as with CM data (e.g. CP3 3.73e-3 against 3.85e-3)",
        ours="; ".join(f"{r['task']}: {r['LCP data']:.2g} (CM data {r['CM data']:.2g})"
                       for r in lcp_rows) or "no task trained on LCP data",
        criterion="on each task, CM-CD-CLNN trained on LCP data beats every baseline trained on "
        "CM data",
        holds=holds,
        cause="open",
        why="" if holds else (
            "A baseline trained on CM data is better on " + ", ".join(
                f"{r['task']} ({r['best baseline, CM data']:.2g} against {r['LCP data']:.2g} "
                f"trained on LCP data, {r['CM data']:.2g} on CM data)"
                for r in lcp_rows if r["task"] in worse) + "." if worse
            else "No task was trained on LCP data at this scale."
        ),
    )


def robust_noise_claim(noise_rows: Sequence[Mapping[str, Any]],
                       tol: float = NOISE_TOL) -> Verdict:
    """Appendix K: at the smallest noise σ of ``noise_rows`` (one per task and σ, with the
    learned and the true μ and e), every task's learned μ and e within ``tol`` of the truth."""
    low = min(r["σ"] for r in noise_rows)
    outside = [r["task"] for r in noise_rows if r["σ"] == low
               and not (abs(r["μ"] - r["true μ"]) <= tol and abs(r["e"] - r["true e"]) <= tol)]
    holds = not outside
    return Verdict(
        "zhong2021-robust-noise",
        "The coefficients are still learned from noisy observations (σ = 0.01); at σ = 0.05 the "
        "authors' CM fails on BP5-e (e = 0.037).",
        paper="σ = 0.01: within about 0.07; σ = 0.05: fails on BP5-e",
        ours="; ".join(f"{r['task']} σ={r['σ']:g}: μ = {r['μ']:.3f}, e = {r['e']:.3f}"
                       for r in noise_rows),
        criterion=f"at σ = {low:g}, learned μ and e within {tol} of the truth on every task",
        holds=holds,
        cause="open",
        why="" if holds else f"Outside the tolerance at σ = {low:g}: {', '.join(outside)}.",
        numbers={"noise_low": low, "noise_tol": tol},
    )
