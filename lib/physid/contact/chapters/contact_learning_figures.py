"""Figures and the rollout explorer of the chapter "learning dynamics and contact with CLNN and
CHNN" (Figs. 3–6 and the Table 3 companion of Zhong, Dey & Chakraborty, NeurIPS 2021).

Every function draws results that are already computed (the dicts of
:func:`physid.contact.training.fit`, or rows made from them): none of them trains or simulates
a learned model. The figures take the book's style (:func:`physid.book.display.use_book_style`, set
by the chapter); no font size or dpi is set here.

Each model keeps one colour in every figure (:data:`COLOURS`, in the order of
:data:`~physid.contact.models.MODELS`): the four contact networks (CM-…, CMr-…) in cool
blues and teals, the three baselines in warm oranges and reds. An error that is infinite (a
rollout that diverged) is drawn as a triangle at the top of its axis with "∞" and the legend
entry "diverged (inf)"; a result without an evaluation is written as "n/a" at the bottom. Neither
is ever dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from physid.book.display import explorer
from physid.contact.chapters.contact_learning import NO_CONTACT, rule_label
from physid.contact.drawing import drawing_of
from physid.contact.models import MODELS
from physid.contact.tasks import TASK_NAMES, Task, make_task
from physid.contact.training import initial_parameters, learning_rate, planned_steps
from physid.core.validate import check_choice, check_count, check_positive

__all__ = [
    "COLOURS",
    "ENERGY_RANGE",
    "ERROR_KEYS",
    "efficiency_figure",
    "energy_figure",
    "error_bars",
    "rollout_explorer",
    "rollout_figure",
    "scaling_figure",
    "trace_figure",
]

#: One colour per model, in the order of :data:`~physid.contact.models.MODELS` (its entries'
#: ``colour``): the contact networks in blues and teals, the baselines in oranges and reds.
COLOURS = MODELS.view("colour")

#: The evaluation keys :func:`error_bars` draws, with their axis labels.
ERROR_KEYS: dict[str, str] = {
    "traj_rel_error": "traj. rel. error, sum over 5 steps (–)",
    "rel_error_50": "mean rel. error over 50 steps (–)",
}

_DIVERGED = "diverged (inf)"
_MISSING = "n/a: not evaluated"


# -- shared helpers ----------------------------------------------------------------------------


def _model_order(names: Iterable[str]) -> list[str]:
    present = set(names)
    return [m for m in MODELS if m in present]


def _task_order(names: Iterable[str]) -> list[str]:
    """The tasks of ``names`` in :data:`~physid.contact.tasks.TASK_NAMES` order, then any
    others (``Rope50``, …) in the order they first appear."""
    names = list(dict.fromkeys(names))
    return [t for t in TASK_NAMES if t in names] + [t for t in names if t not in TASK_NAMES]


def _check_results(results: Any) -> list[Mapping[str, Any]]:
    """``results`` as a list of fit results with a known task and model (ValueError naming
    ``results`` otherwise)."""
    if isinstance(results, Mapping) or not isinstance(results, Iterable):
        raise ValueError(f"results must be a list of fit results, got {type(results).__name__}")
    results = list(results)
    if not results:
        raise ValueError("results must hold at least one fit result, got none")
    for i, result in enumerate(results):
        job = result.get("job") if isinstance(result, Mapping) else None
        if not isinstance(job, Mapping) or "task" not in job or "model" not in job:
            raise ValueError(f"results[{i}] is not a fit result (no job with task and model)")
        if job["model"] not in MODELS:
            raise ValueError(f"results[{i}] has the unknown model {job['model']!r}")
        if "evaluation" not in result:
            raise ValueError(f"results[{i}] has no 'evaluation' (None when not evaluated)")
    return results


def _by_key(results: list[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """The results by (task, model); two results for one pair are a ValueError."""
    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for result in results:
        key = (result["job"]["task"], result["job"]["model"])
        if key in out:
            raise ValueError(
                f"results hold two results for task {key[0]!r} and model {key[1]!r}; "
                "pass one per pair (e.g. one n_train and noise level)"
            )
        out[key] = result
    return out


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


def _limits(values: Iterable[float], spans: Iterable[float] = ()) -> tuple[float, float]:
    """Log-axis limits around the finite positive ``values`` (and ``values ± spans``)."""
    finite = [v for v in values if math.isfinite(v) and v > 0]
    finite += [v for v in spans if math.isfinite(v) and v > 0]
    if not finite:
        return 0.1, 10.0
    return min(finite) / 3.0, max(finite) * 3.0


#: How far above the last finite value (a factor, on a log axis) the axis ends.
_HEADROOM = 3.0


def _mark_diverged(ax: Axes, x: float, top: float, colour: str) -> None:
    """A triangle with "∞" at the height ``top`` (just below the top of a log axis, see
    :data:`_HEADROOM`) for an inf error."""
    ax.plot([x], [top], marker="^", ms=8, color=colour, ls="none", clip_on=False)
    ax.annotate("∞", (x, top), xytext=(0, 5), textcoords="offset points", ha="center",
                va="bottom", color=colour, fontsize="small", annotation_clip=False)


def _mark_missing(ax: Axes, x: float, bottom: float) -> None:
    """"n/a" at the bottom of the axis for a result without an evaluation."""
    ax.annotate("n/a", (x, bottom), xytext=(0, 2), textcoords="offset points", ha="center",
                va="bottom", color="0.25", fontsize="x-small", rotation=90,
                annotation_clip=False)


def _reference_handles(shown: bool, zero: bool) -> tuple[list[Line2D], list[str]]:
    """Legend entries of the no-contact reference: its line, and its "0" mark where it is
    exactly zero (below a log axis)."""
    handles, labels = [], []
    if shown:
        handles.append(Line2D([], [], color="k", ls="--", lw=1.0))
        labels.append(NO_CONTACT)
    if zero:
        handles.append(Line2D([], [], marker="$0$", ms=8, color="k", ls="none"))
        labels.append(NO_CONTACT + ": exactly 0")
    return handles, labels


def _special_handles(diverged: bool, missing: bool) -> tuple[list[Line2D], list[str]]:
    handles, labels = [], []
    if diverged:
        handles.append(Line2D([], [], marker="^", ms=8, color="0.3", ls="none"))
        labels.append(_DIVERGED + ", at the top")
    if missing:
        handles.append(Line2D([], [], marker="$n/a$", ms=14, color="0.3", ls="none"))
        labels.append(_MISSING)
    return handles, labels


@lru_cache(maxsize=16)
def _task(name: str) -> Task:
    return make_task(name)


# -- Figs. 3 and 4: errors per task and model --------------------------------------------------


def error_bars(
    results: Sequence[Mapping[str, Any]],
    key: str = "traj_rel_error",
    reference: Mapping[str, float] | None = None,
) -> Figure:
    """Fig. 3 (``key="traj_rel_error"``, the sum of relative errors ‖ẑ_t − z_t‖ / ‖z_t‖ over
    the first 5 predicted steps) and Fig. 4 (``key="rel_error_50"``, their mean over 50
    steps) of the paper: one group of bars per task (in
    :data:`~physid.contact.tasks.TASK_NAMES` order, only the tasks present), one bar per model
    present, on a log axis, with the 95% interval of the mean
    over test trajectories (``<key>_ci``) as error bars (clipped at the axis's bottom).

    ``results`` holds one :func:`~physid.contact.training.fit` result per (task, model). An
    infinite error (a diverged rollout) is a triangle with "∞" at the top, a result without an
    evaluation "n/a" at the bottom. ``reference`` maps tasks to the error of the true dynamics
    without contact (:func:`~physid.contact.chapters.contact_learning.no_contact_rows`), drawn
    as a dashed line across the task's group ("0" at the bottom where it is exactly zero).
    """
    check_choice("key", key, tuple(ERROR_KEYS))
    results = _check_results(results)
    reference = _check_reference(reference)
    table = _by_key(results)
    tasks = _task_order(task for task, _ in table)
    models = _model_order(model for _, model in table)
    values = {k: r["evaluation"] for k, r in table.items()}
    means = {k: _float(e.get(key)) if e else math.nan for k, e in values.items()}
    cis = {k: _float(e.get(f"{key}_ci")) if e else math.nan for k, e in values.items()}
    bottom, top = _limits(list(means.values()) + [reference.get(t, math.nan) for t in tasks],
                          [means[k] - cis[k] for k in means] + [means[k] + cis[k] for k in means])

    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    width = 0.8 / len(models)
    diverged = missing = False
    for j, model in enumerate(models):
        colour = COLOURS[model]
        xs, heights, low, high = [], [], [], []
        for i, task in enumerate(tasks):
            if (task, model) not in table:
                continue
            x = i + (j - (len(models) - 1) / 2) * width
            mean, ci = means[(task, model)], cis[(task, model)]
            if math.isinf(mean):
                _mark_diverged(ax, x, top, colour)
                diverged = True
            elif values[(task, model)] is None or not math.isfinite(mean):
                _mark_missing(ax, x, bottom)
                missing = True
            else:
                ci = ci if math.isfinite(ci) else 0.0
                xs.append(x)
                heights.append(mean)
                low.append(min(ci, mean - bottom))
                high.append(ci)
        ax.bar(xs, heights, width=width, bottom=0, color=colour, label=model,
               yerr=[low, high] if xs else None, capsize=2, error_kw={"lw": 0.8})
    ax.set_yscale("log")
    ax.set_ylim(bottom, top * _HEADROOM)
    shown = zero = False
    for i, task in enumerate(tasks):
        value = reference.get(task, math.nan)
        if value == 0.0:
            ax.annotate("0", (i, bottom), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize="small", annotation_clip=False)
            zero = True
        elif math.isfinite(value):
            ax.hlines(value, i - 0.45, i + 0.45, colors="k", linestyles="--", lw=1.0, zorder=3)
            shown = True
    ax.set_xticks(range(len(tasks)), tasks)
    ax.set_xlim(-0.5, len(tasks) - 0.5)
    ax.grid(axis="x", visible=False)
    ax.set_ylabel(ERROR_KEYS[key])
    handles, labels = ax.get_legend_handles_labels()
    extra_handles, extra_labels = _special_handles(diverged, missing)
    line_handles, line_labels = _reference_handles(shown, zero)
    fig.legend(handles + line_handles + extra_handles, labels + line_labels + extra_labels,
               loc="outside lower center", ncols=4, frameon=False)
    return fig


def _check_reference(reference: Mapping[Any, float] | None) -> dict[Any, float]:
    """``reference`` as a dict of floats (empty for None); a ValueError for a negative or NaN
    value, a TypeError for anything but a mapping."""
    if reference is None:
        return {}
    if not isinstance(reference, Mapping):
        raise TypeError(f"reference must be a mapping, got {type(reference).__name__}")
    out = {}
    for k, v in reference.items():
        value = _float(v)
        if not value >= 0:
            raise ValueError(f"reference[{k!r}] must be a non-negative error, got {v!r}")
        out[k] = value
    return out


# -- Fig. 5: energy along the predicted trajectories ------------------------------------------


#: The range of Ē(t) / Ē(0) an energy panel shows: a model whose mean leaves it (a blow-up
#: reaches 1e250) runs off the axis and is named, with when it left and how far it went.
ENERGY_RANGE = (0.0, 2.0)


def _relative(energy: np.ndarray, ratio: bool) -> np.ndarray:
    """Ē(t) / Ē(0) (or Ē(t) − Ē(0) unless ``ratio``), Ē the mean over the rows (trajectories)
    of ``energy``."""
    mean = energy.mean(0)
    return mean / mean[0] if ratio else mean - mean[0]


def energy_figure(
    results: Sequence[Mapping[str, Any]], tasks: Sequence[str] = ("BP5-e", "CP3-e", "Gyro-e")
) -> Figure:
    """Fig. 5 of the paper: the true system's energy along each model's predicted test
    trajectories, relative to the initial energy, Ē(t) / Ē(0) with Ē the mean over the test
    trajectories, one panel per task of ``tasks`` present in ``results`` (the elastic,
    frictionless tasks, whose energy is conserved), the truth (``energy_true``) in black.

    The mean is taken before the ratio, since a single trajectory's energy can be near zero
    (the pendulum's potential is zero at its pivot). A model's trajectories that stopped being
    finite are left out of its mean and counted in a note above the legend; a model whose
    every rollout diverged, or that was not evaluated, is named there too. The ratio panels
    show :data:`ENERGY_RANGE`; a mean that leaves it is named in the note with the time it
    left and its most extreme value. If the truth's mean initial energy is not positive, that
    panel shows the change Ē(t) − Ē(0) (J) instead, on an axis that holds every curve.
    """
    if isinstance(tasks, str) or not isinstance(tasks, Sequence) or not tasks:
        raise ValueError(f"tasks must be a non-empty sequence of task names, got {tasks!r}")
    for task in tasks:
        check_choice("tasks", task, TASK_NAMES)
    results = _check_results(results)
    table = _by_key(results)
    present = [t for t in dict.fromkeys(tasks) if any(task == t for task, _ in table)]
    if not present:
        raise ValueError(f"tasks {list(tasks)} have no result in results")
    models = _model_order(model for _, model in table)
    fig, axes = plt.subplots(1, len(present), figsize=(7.0, 3.4), squeeze=False)
    all_notes: list[str] = []
    for ax, task in zip(axes[0], present, strict=True):
        notes = []
        evaluated = {m: table[(task, m)]["evaluation"] for m in models if (task, m) in table}
        truth = next((e["energy_true"] for e in evaluated.values() if e is not None), None)
        truth = None if truth is None else np.asarray(truth, dtype=float)
        if truth is not None and (truth.ndim != 2 or truth.shape[1] < 2):
            raise ValueError(
                f"results: energy_true of {task} must be (n_test, T+1), got shape {truth.shape}"
            )
        ratio = truth is None or bool(truth.mean(0)[0] > 0)
        dt = _task(task).dt
        if truth is not None:
            t = dt * np.arange(truth.shape[1])
            ax.plot(t, _relative(truth, ratio), color="k", lw=2, label="truth")
        for model, evaluation in evaluated.items():
            if evaluation is None:
                notes.append(f"{model}: not evaluated")
                continue
            energy = np.asarray(evaluation["energy_pred"], dtype=float)
            if energy.ndim != 2 or (truth is not None and energy.shape[1:] != truth.shape[1:]):
                raise ValueError(
                    f"results: energy_pred of {task}, {model} must be (n_test, "
                    f"{truth.shape[1] if truth is not None else 'T+1'}), got shape {energy.shape}"
                )
            finite = np.isfinite(energy).all(1)
            if not finite.any():
                notes.append(f"{model}: every rollout diverged")
                continue
            if not finite.all():
                notes.append(f"{model}: {(~finite).sum()} of {len(finite)} diverged, not in mean")
            t = dt * np.arange(energy.shape[1])
            curve = _relative(energy[finite], ratio)
            ax.plot(t, curve, color=COLOURS[model], lw=1.5, label=model)
            outside = (curve < ENERGY_RANGE[0]) | (curve > ENERGY_RANGE[1])
            if ratio and outside.any():
                extreme = curve[np.argmax(np.abs(curve - 1.0))]
                notes.append(
                    f"{model}: off the axis from t = {t[np.argmax(outside)]:.2f} s "
                    f"(reaches {extreme:.2g})"
                )
        if ratio:
            low, high = ENERGY_RANGE
            ax.set_ylim(low - 0.05 * (high - low), high + 0.05 * (high - low))
        ax.set_title(task)
        ax.set_xlabel("time (s)")
        if not ratio or ax is axes[0, 0]:
            ax.set_ylabel("E(t) / E(0) (–)" if ratio else "E(t) − E(0) (J)")
        all_notes += [f"{task}, {note}" for note in notes]
    handles: dict[str, Any] = {}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    order = ["truth", *models]
    labels = [label for label in order if label in handles]
    legend = fig.legend([handles[label] for label in labels], labels,
                        loc="outside lower center", ncols=min(len(labels), 4), frameon=False)
    if all_notes:  # above the entries, in the legend's layout box
        legend.set_title("\n".join(all_notes), prop={"size": "small"})
    return fig


# -- Fig. 6: data efficiency -------------------------------------------------------------------


def _check_rows(rows: Any, keys: tuple[str, ...]) -> list[Mapping[str, Any]]:
    if isinstance(rows, Mapping) or not isinstance(rows, Iterable):
        raise ValueError(f"rows must be a list of dicts, got {type(rows).__name__}")
    rows = list(rows)
    if not rows:
        raise ValueError("rows must hold at least one row, got none")
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping) or any(k not in row for k in keys):
            raise ValueError(f"rows[{i}] must be a dict with the keys {list(keys)}, got {row!r}")
    return rows


def efficiency_figure(
    rows: Sequence[Mapping[str, Any]],
    ylabel: str = "traj. rel. error (–)",
    reference: Mapping[int, float] | None = None,
) -> Figure:
    """Fig. 6 of the paper: the test error against the number of training trajectories,
    log-log, one line per model with its 95% interval as a band.

    ``rows`` are dicts ``{"model", "n_train", "error", "ci"}``, one per model and ``n_train``;
    ``ylabel`` names the error. An infinite error is a triangle with "∞" at the top, a NaN
    error (not evaluated) "n/a" at the bottom. ``reference`` maps numbers of training
    trajectories to the error of the true dynamics without contact on the same test
    trajectories, drawn as a dashed black line.
    """
    rows = _check_rows(rows, ("model", "n_train", "error", "ci"))
    reference = _check_reference(reference)
    seen = set()
    for i, row in enumerate(rows):
        MODELS.check(row["model"], f"rows[{i}]['model']")
        pair = (row["model"], check_count(f"rows[{i}]['n_train']", row["n_train"]))
        if pair in seen:
            raise ValueError(f"rows hold two rows for model {pair[0]!r} with n_train {pair[1]}")
        seen.add(pair)
    errors = [_float(r["error"]) for r in rows]
    cis = [_float(r["ci"]) for r in rows]
    bottom, top = _limits(errors + list(reference.values()),
                          [e - c for e, c in zip(errors, cis, strict=True)]
                          + [e + c for e, c in zip(errors, cis, strict=True)])
    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    if reference:
        counts = sorted(reference)
        ax.plot(counts, [max(reference[n], bottom) for n in counts], "--", color="k", lw=1.0,
                label=NO_CONTACT)
    diverged = missing = False
    for model in _model_order(r["model"] for r in rows):
        chosen = sorted((r for r in rows if r["model"] == model), key=lambda r: r["n_train"])
        n = np.array([r["n_train"] for r in chosen], dtype=float)
        error = np.array([_float(r["error"]) for r in chosen])
        ci = np.array([_float(r["ci"]) for r in chosen])
        ci = np.where(np.isfinite(ci), ci, 0.0)
        colour = COLOURS[model]
        good = np.isfinite(error)
        ax.plot(n[good], error[good], "o-", color=colour, lw=1.5, ms=4, label=model)
        if good.any():
            low = np.maximum(error[good] - ci[good], bottom)
            ax.fill_between(n[good], low, error[good] + ci[good], color=colour, alpha=0.15, lw=0)
        for x, e in zip(n, error, strict=True):
            if math.isinf(e):
                _mark_diverged(ax, x, top, colour)
                diverged = True
            elif math.isnan(e):
                _mark_missing(ax, x, bottom)
                missing = True
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(bottom, top * _HEADROOM)
    counts = sorted({int(r["n_train"]) for r in rows})
    ax.set_xticks(counts, [str(c) for c in counts])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("training trajectories")
    ax.set_ylabel(ylabel)
    handles, labels = ax.get_legend_handles_labels()
    extra_handles, extra_labels = _special_handles(diverged, missing)
    fig.legend(handles + extra_handles, labels + extra_labels, loc="outside right center",
               frameon=False)
    return fig


# -- Table 3: seconds per iteration against the rope's size -----------------------------------


def scaling_figure(rows: Sequence[Mapping[str, Any]], slope: float) -> Figure:
    """The companion of the paper's Table 3: seconds per training iteration against the
    number of rope nodes, log-log, with the spread of the repeats as error bars and the fitted
    power law of the given ``slope`` (seconds ∝ nodes^slope) through the points, annotated.

    ``rows`` are dicts ``{"nodes", "seconds", "spread"}``.
    """
    rows = _check_rows(rows, ("nodes", "seconds", "spread"))
    slope = float(slope)
    if not math.isfinite(slope):
        raise ValueError(f"slope must be finite, got {slope!r}")
    rows = sorted(rows, key=lambda r: r["nodes"])
    nodes = np.array([check_count(f"rows[{i}]['nodes']", r["nodes"]) for i, r in enumerate(rows)],
                     dtype=float)
    seconds = np.array([check_positive(f"rows[{i}]['seconds']", r["seconds"])
                        for i, r in enumerate(rows)])
    spread = np.array([_float(r["spread"]) for r in rows])
    if np.any(spread < 0):
        raise ValueError(f"rows: every 'spread' must be >= 0, got {spread.tolist()}")
    spread = np.where(np.isfinite(spread), spread, 0.0)
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    ax.errorbar(nodes, seconds, yerr=[np.minimum(spread, 0.9 * seconds), spread], fmt="o",
                color="C0", capsize=3, ms=5, label="measured (bars: spread)")
    intercept = float(np.mean(np.log(seconds) - slope * np.log(nodes)))
    grid = np.geomspace(nodes.min() / 1.2, nodes.max() * 1.2, 50)
    ax.plot(grid, np.exp(intercept) * grid**slope, "--", color="0.3", lw=1.2,
            label="power law fitted in log-log")
    middle = math.sqrt(nodes.min() * nodes.max())
    ax.annotate(f"slope {slope:.2f}\n(seconds ∝ nodes$^{{{slope:.2f}}}$)",
                (middle, math.exp(intercept) * middle**slope), xytext=(-10, 10),
                textcoords="offset points", ha="right", va="bottom", color="0.3")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = [int(n) for n in nodes]
    ax.set_xticks(ticks, [str(n) for n in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("rope nodes")
    ax.set_ylabel("seconds per training iteration (s)")
    ax.legend(frameon=False, loc="lower right")
    return fig


# -- one rollout against the truth ------------------------------------------------------------


#: The rules of :func:`trace_figure`: the grid's run and the ablation's.
_RULE_STYLES = {"grid": "--", "ablation": "-"}


def trace_figure(grid: Sequence[Mapping[str, Any]], schedule: Sequence[Mapping[str, Any]],
                 model: str = "CM-CD-CLNN", tolerance: float = 0.01) -> Figure:
    """How training moves the learned parameters, under the grid's rule (the run of ``grid``)
    and the ablation's (the run of ``schedule``,
    :func:`~physid.contact.chapters.contact_learning.schedule_jobs`), against the optimiser
    step: left, the mean learned restitution on BP5-e with the speed limit (dotted: its start
    plus :func:`~physid.contact.learned.restitution_reach` of the steps so far, up to 1);
    right, the largest relative mass-ratio error on BP5 (log axis) with ``tolerance``. A task
    without both runs says so in its panel."""
    grid, schedule = _check_results(grid), _check_results(schedule)
    tolerance = check_positive("tolerance", tolerance)
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.0, 4.2))
    for ax, task in ((left, "BP5-e"), (right, "BP5")):
        runs = {}
        for label, part in (("grid", grid), ("ablation", schedule)):
            found = [r for r in part if (r["job"]["task"], r["job"]["model"]) == (task, model)]
            if found and found[0].get("trace"):
                runs[label] = found[0]
        ax.set_title(f"{model} on {task}", fontsize=9)
        ax.set_xlabel("optimiser step")
        if len(runs) < 2:
            ax.text(0.5, 0.5, "not trained at this scale", ha="center", va="center",
                    transform=ax.transAxes, color="0.4")
            continue
        for label, result in runs.items():
            job, trace = result["job"], result["trace"]
            epochs = len(trace["cor"])
            per_epoch = int(result["steps"]) / epochs
            steps = per_epoch * np.arange(1, epochs + 1)
            name = f"{label}: {rule_label(job)}, {int(result['steps'])} steps"
            if task == "BP5-e":
                e = np.asarray(trace["cor"], float).reshape(epochs, -1).mean(axis=1)
                ax.plot(steps, e, _RULE_STYLES[label], color="C0", label=name)
                start = float(np.mean(initial_parameters(job)["cor"]))
                total = planned_steps(job)  # the schedule's length, however far it ran
                rates = [learning_rate(job["lr"], job["lr_final"], k, total) for k in range(total)]
                reach = np.cumsum(rates)[np.asarray(steps, int) - 1] / 6.0  # restitution_reach
                ax.plot(steps, np.minimum(start + reach, 1.0), ":",
                        color="0.6" if label == "grid" else "0.3",
                        label=f"speed limit, {label}")
                ax.set_ylabel("learned e (–)")
                ax.set_ylim(0, 1.05)
            else:
                truth = np.asarray(make_task(task).system.masses, float)
                ratios = np.asarray(trace["mass_ratios"], float)
                error = np.max(np.abs(ratios / (truth / truth[0]) - 1), axis=1)
                ax.semilogy(steps, 100 * error, _RULE_STYLES[label], color="C1", label=name)
                ax.set_ylabel("largest mass-ratio error (%)")
        if task == "BP5":
            ax.axhline(100 * tolerance, color="0.5", lw=0.8, ls=":", label="the claim's tolerance")
        # Below the panel: the rules' labels are longer than the curves leave room for.
        ax.legend(fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22))
    fig.tight_layout()
    return fig


def _include(ax: Axes, extent: tuple[np.ndarray, float] | None) -> None:
    """Widen the axes' limits to every drawn point of ``extent`` (points and margin); None
    leaves axes that scale themselves."""
    if extent is None:
        return
    points, margin = extent
    for limits, set_limits, values in ((ax.get_xlim(), ax.set_xlim, points[:, 0]),
                                       (ax.get_ylim(), ax.set_ylim, points[:, 1])):
        set_limits(min(limits[0], values.min() - margin), max(limits[1], values.max() + margin))


def rollout_figure(
    task_name: str, x_pred: Any, x_true: Any, dt: float, title: str | None = None
) -> Figure:
    """One test trajectory of a learned model against the truth (the rollouts behind the
    paper's Figs. 3 and 4): the x and y coordinates of every body centre, bob, the
    gyroscope's centre or 4 rope nodes over time (truth solid, prediction dashed), and the
    configuration at the last step the prediction is finite (truth solid and filled,
    prediction dashed), in the task's scene (the gyroscope from above).

    Args:
        task_name: a task of :func:`~physid.contact.tasks.make_task`.
        x_pred: ``(T+1, N)`` predicted positions (may stop being finite: a diverged rollout).
        x_true: ``(T+1, N)`` true positions.
        dt: time step (s).
        title: the figure's title (default: the task's name).
    """
    if not isinstance(task_name, str):
        raise ValueError(f"task_name must be a task's name, got {task_name!r}")
    task = _task(task_name)
    dt = check_positive("dt", dt)
    x_true = np.asarray(x_true, dtype=float)
    x_pred = np.asarray(x_pred, dtype=float)
    n = task.system.n_coords
    if x_true.ndim != 2 or x_true.shape[1] != n or len(x_true) < 2:
        raise ValueError(f"x_true must have shape (T+1, {n}) with T >= 1, got {x_true.shape}")
    if x_pred.shape != x_true.shape:
        raise ValueError(f"x_pred must have the shape of x_true {x_true.shape}, got {x_pred.shape}")
    if not np.isfinite(x_true).all():
        raise ValueError("x_true must be finite")
    finite = np.isfinite(x_pred).all(1)
    last = len(x_pred) - 1 if finite.all() else int(np.argmin(finite)) - 1
    x_pred = np.where(np.isfinite(x_pred), x_pred, np.nan)
    t = dt * np.arange(len(x_true))
    system = task.system
    drawing = drawing_of(system)
    labels, true_points = drawing.tracked(system, x_true)
    _, pred_points = drawing.tracked(system, x_pred)

    fig, axes = plt.subplots(1, 3, figsize=(7.5, 3.2), width_ratios=(1, 1, 1.05))
    for coord, ax in enumerate(axes[:2]):
        for k in range(len(labels)):
            colour = f"C{k}" if len(labels) > 1 else "C0"
            ax.plot(t, true_points[:, k, coord], "-", color=colour, lw=1.5)
            ax.plot(t, pred_points[:, k, coord], "--", color=colour, lw=1.5)
        low, high = true_points[..., coord].min(), true_points[..., coord].max()
        span = max(high - low, 0.05)
        pred = pred_points[..., coord]
        if np.isfinite(pred).any():
            low, high = min(low, np.nanmin(pred)), max(high, np.nanmax(pred))
        low = max(low, true_points[..., coord].min() - span)
        high = min(high, true_points[..., coord].max() + span)
        pad = 0.05 * (high - low)
        ax.set_ylim(low - pad, high + pad)
        if last < len(x_pred) - 1:
            ax.axvline(t[last], color="0.3", lw=0.8, ls=":")
        ax.set_xlabel("time (s)")
        ax.set_ylabel(f"{'xy'[coord]} (m)")
    snapshot = axes[2]
    drawing.scene(snapshot, system)
    snapshot.set_aspect("equal", adjustable=drawing.adjustable)
    shown = [x_true[max(last, 0)]] + ([x_pred[last]] if last >= 0 else [])
    for k, x in enumerate(shown):
        drawing.snapshot(snapshot, system, x, predicted=k == 1)
    _include(snapshot, drawing.extent(system, shown))
    view = drawing.view
    if last == len(x_pred) - 1:
        snapshot.set_title(f"last step, t = {t[last]:.2f} s{view}", fontsize="small")
    elif last >= 0:
        snapshot.set_title(f"t = {t[last]:.2f} s, last finite step{view}", fontsize="small")
        axes[0].set_title(f"prediction diverges after t = {t[last]:.2f} s", fontsize="small")
    else:
        snapshot.set_title("the prediction is never finite", fontsize="small")
    snapshot.set_xlabel("x (m)")
    snapshot.set_ylabel("y (m)")
    handles = [Line2D([], [], color="k", ls="-"), Line2D([], [], color="k", ls="--")]
    names = ["truth", "prediction"]
    if len(labels) > 1:
        handles += [Line2D([], [], color=f"C{k}", lw=4) for k in range(len(labels))]
        names += labels
    fig.legend(handles, names, loc="outside lower center", ncols=min(len(names), 7),
               frameon=False)
    fig.suptitle(title if title is not None else task.name)
    return fig


def _no_result(task: str, model: str) -> Figure:
    fig, ax = plt.subplots(figsize=(7.5, 1.5))
    ax.set_axis_off()
    ax.text(0.5, 0.5, f"No result for {model} on {task}.", ha="center", va="center",
            transform=ax.transAxes)
    return fig


def rollout_explorer(
    results_by_key: Mapping[tuple[str, str], Mapping[str, Any]],
    rollouts: Callable[[tuple[str, str], int], tuple[Any, Any, float, str]],
    n_test: int,
):
    """Dropdowns over the task and the model and a slider over the test trajectory (1 to
    ``n_test``), redrawing :func:`rollout_figure` for that learned model's rollout against the
    truth, titled with the trajectory's traj. rel. error (Fig. 3's error of that trajectory).

    Args:
        results_by_key: fit results by ``(task, model)``.
        rollouts: ``rollouts((task, model), index)`` returns ``(x_pred, x_true, dt,
            task_name)`` for the 0-based test trajectory ``index``.
        n_test: the number of test trajectories.

    A (task, model) pair without a result draws a note saying so.
    """
    import ipywidgets as widgets

    if not isinstance(results_by_key, Mapping) or not results_by_key:
        raise ValueError("results_by_key must be a non-empty dict of results by (task, model)")
    for key in results_by_key:
        if not (isinstance(key, tuple) and len(key) == 2 and key[1] in MODELS):
            raise ValueError(f"results_by_key keys must be (task, model) pairs, got {key!r}")
    if not callable(rollouts):
        raise TypeError(f"rollouts must be callable, got {type(rollouts).__name__}")
    n_test = check_count("n_test", n_test)
    tasks = _task_order(task for task, _ in results_by_key)
    models = _model_order(model for _, model in results_by_key)
    first = min(results_by_key, key=lambda k: (tasks.index(k[0]), models.index(k[1])))

    def draw(task: str, model: str, test: int) -> Figure:
        key = (task, model)
        if key not in results_by_key:
            return _no_result(task, model)
        index = test - 1
        x_pred, x_true, dt, task_name = rollouts(key, index)
        evaluation = results_by_key[key].get("evaluation") or {}
        errors = evaluation.get("traj_rel_errors")
        title = f"{model} on {task}, test trajectory {test}"
        if errors is not None and index < len(errors):
            title += f": traj. rel. error {float(errors[index]):.3g}"
        return rollout_figure(task_name, x_pred, x_true, dt, title=title)

    return explorer(
        draw,
        task=widgets.Dropdown(options=tasks, value=first[0], description="task"),
        model=widgets.Dropdown(options=models, value=first[1], description="model"),
        test=widgets.IntSlider(value=1, min=1, max=n_test, step=1, description="test traj.",
                               continuous_update=False),
    )
