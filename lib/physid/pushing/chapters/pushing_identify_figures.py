"""Figures, a table and the interactive explorer of the identification chapter
(:mod:`physid.pushing.chapters.pushing_identify`).

Every function here draws results that are already computed
(:class:`~physid.pushing.chapters.pushing_identify.MethodRun`,
:class:`~physid.pushing.chapters.pushing_identify.Directions`, …):
none of them simulates.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, NullFormatter

from physid.book.display import explorer
from physid.core.validate import check_choice, check_count
from physid.pushing.chapters.pushing_identify import (
    CostPoint,
    Directions,
    MethodRun,
    PushCountRun,
    UncertaintyMap,
)
from physid.pushing.identify import METHODS
from physid.pushing.objects import CellObject, load_object

__all__ = [
    "AXES",
    "PUSH_SETS",
    "draw_run",
    "error_curve",
    "method_rows",
    "plot_directions",
    "plot_gradient_cost",
    "plot_maps",
    "plot_protocol",
    "plot_push_counts",
    "plot_run",
    "plot_train_test",
    "plot_uncertainty",
    "run_explorer",
    "simulations_per_step",
]

#: The two horizontal axes of Fig. 3: the budget spent in simulations and in wall time (s).
AXES = ("simulations", "seconds")

_COST_LABELS = {
    "algorithm1": METHODS["algorithm1"].label,
    "autograd_rigid": METHODS["autograd-rigid"].label,
    "autograd_lcp": METHODS["autograd-lcp"].label,
}


def _color(method: str) -> tuple[float, float, float, float]:
    """The method's colour: tab10's ten colours for the first ten registered methods (tab20's
    dark shades), then their light shades, so no two of twenty methods share one."""
    i = list(METHODS).index(method)
    return plt.get_cmap("tab20")((2 * i) % 20 + (i // 10) % 2)


# -- the methods table ---------------------------------------------------------------------


def simulations_per_step(name: str, k: int, n: int) -> str:
    """How many simulations (one push for its duration) one step of method ``name`` costs on
    an object of ``k`` cells with ``n`` training pushes, as a short text."""
    spec = METHODS.get(name, "name")
    k, n = check_count("k", k), check_count("n", n)
    o = spec.options
    if name.startswith("fd-"):
        return f"(2k + 1) n = {(2 * k + 1) * n}"
    if "batch" in o:
        return f"{o['batch']} n = {o['batch'] * n} (a batch of draws)"
    if "popsize" in o:
        return f"{o['popsize']} n = {o['popsize'] * n} (a generation)"
    if name == "algorithm1-interval":
        return f"2n = {2 * n} per pass (every push once, and once more to score the pass)"
    if name == "nelder-mead":
        return f"n = {n} per evaluation ((2k + 1) n = {(2 * k + 1) * n} to start)"
    return f"n = {n}"


def _what(name: str) -> str:
    if name == "algorithm1":
        return "Algorithm 1's direction from the forward simulation"
    if name == "algorithm1-interval":
        return ("each interval's own Algorithm 1 direction, an update after every interval "
                "(§6's loop as printed)")
    if name == "algorithm1-pinned":
        return ("Algorithm 1's direction, the rigid body turned about the finger's contact, "
                "from the forward simulation")
    if name == "autograd-rigid":
        return "exact gradient (the compiled adjoint of the rigid formulation)"
    if name.startswith("autograd"):
        return "exact gradient (autograd through the engine)"
    if name.startswith("fd-"):
        return "one-sided finite differences of the loss"
    return "the loss only"


def method_rows(k: int, n: int) -> list[dict]:
    """One row per registered method (:data:`~physid.pushing.identify.METHODS`): its label,
    whether it is in the paper, the formulation it simulates, what it uses of the loss, its
    options and the simulations one step costs for ``k`` cells and ``n`` training pushes."""
    rows = []
    for name, spec in METHODS.items():
        options = ", ".join(f"{key}={value:.3g}" if isinstance(value, float)
                            else f"{key}={value}" for key, value in spec.options.items())
        rows.append({
            "method": spec.label,
            "in the paper": spec.in_paper,
            "formulation": {"rigid": "rigid (2)", "lcp": "LCP (1)"}.get(spec.formulation,
                                                                       spec.formulation),
            "uses": _what(name),
            "options": options or "scipy's defaults",
            "simulations per step": simulations_per_step(name, k, n),
        })
    return rows


# -- §6: Algorithm 1's direction and its cost ----------------------------------------------


def plot_directions(directions: list[Directions]) -> Figure:
    """Cosine between Algorithm 1's direction and the exact gradient, for the frictions (left)
    and the masses (right), per training push and iterate, on pushes where §6's assumptions
    held and where they did not; one colour per object, the mean of each group as a bar."""
    if not directions:
        raise ValueError("directions must hold at least one Directions")
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.4), sharey=True)
    rng = np.random.default_rng(0)  # jitter only
    groups = [(True, "assumptions hold"), (False, "do not hold")]
    for ax, block in zip(axes, ("friction", "mass"), strict=True):
        for position, (flag, _) in enumerate(groups):
            values = []
            for index, d in enumerate(directions):
                cosines = np.asarray(getattr(d, block))[np.asarray(d.holds) == flag].ravel()
                cosines = cosines[np.isfinite(cosines)]
                values.append(cosines)
                x = position + rng.uniform(-0.15, 0.15, size=len(cosines))
                ax.plot(x, cosines, "o", ms=4, alpha=0.7, color=f"C{index}",
                        label=d.object if position == 0 else None)
            pooled = np.concatenate(values) if values else np.array([])
            if len(pooled):
                ax.hlines(pooled.mean(), position - 0.3, position + 0.3, color="k", lw=2)
        ax.axhline(1.0, color="0.5", ls="--", lw=1)
        ax.set_xticks(range(len(groups)), [label for _, label in groups])
        ax.set_xlim(-0.6, len(groups) - 0.4)
        ax.set_title(f"{block} block", fontsize="medium")
        ax.grid(axis="x", visible=False)
    axes[0].set_ylabel("cosine with the exact gradient (–)")
    handles, labels = axes[0].get_legend_handles_labels()
    handles += [Line2D([], [], color="k", lw=2), Line2D([], [], color="0.5", ls="--", lw=1)]
    labels += ["mean of the group", "the gradient's direction"]
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 4),
               frameon=False)
    return fig


def plot_gradient_cost(points: list[CostPoint]) -> Figure:
    """Seconds per gradient of Eq. (1) against the number of cells, log-log, for Algorithm 1
    and the exact gradient through each formulation (a formulation not timed at a size is left
    out)."""
    if not points:
        raise ValueError("points must hold at least one CostPoint")
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    cells = np.array([p.cells for p in points])
    for field, label in _COST_LABELS.items():
        seconds = np.array([getattr(p, field) for p in points], dtype=float)
        keep = np.isfinite(seconds)
        if keep.any():
            method = {"autograd_rigid": "autograd-rigid", "autograd_lcp": "autograd-lcp"}.get(
                field, field)
            ax.plot(cells[keep], seconds[keep], "o-", color=_color(method), label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(cells, [str(c) for c in cells])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("cells k")
    ax.set_ylabel("seconds per gradient (s)")
    ax.legend(frameon=False)
    return fig


# -- §7: Fig. 3 ----------------------------------------------------------------------------


#: The pushes an error curve is measured on: the test pushes or the training pushes.
PUSH_SETS = ("test", "train")


def _steps(run: MethodRun, axis: str, pushes: str = "test") -> tuple[np.ndarray, np.ndarray,
                                                                     float]:
    """The evaluated improvements of ``run`` on ``axis``: where each was found, its error on
    the ``pushes`` and where the run ended."""
    spent = np.asarray(run.simulations if axis == "simulations" else run.seconds, dtype=float)
    x = spent[np.asarray(run.evaluated, dtype=int)]
    end = float(run.used_simulations if axis == "simulations" else run.used_seconds)
    error = run.test_error if pushes == "test" else run.train_error
    return x, np.asarray(error, dtype=float), max(end, float(x[-1]))


def error_curve(runs: list[MethodRun], method: str, axis: str = "simulations",
                pushes: str = "test") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The error (m) on the ``pushes`` (:data:`PUSH_SETS`) of ``method`` as a step function of
    the budget spent on ``axis`` (:data:`AXES`): ``(x, mean, low, high)`` over its runs, each
    run holding the error of its last evaluated improvement (its best estimate so far) until
    the next and after its end; the curve runs to the furthest end."""
    check_choice("method", method, tuple(METHODS))
    check_choice("axis", axis, AXES)
    check_choice("pushes", pushes, PUSH_SETS)
    chosen = [r for r in runs if r.method == method]
    if not chosen:
        raise ValueError(f"runs hold no run of {method!r}")
    if pushes == "train" and any(len(r.train_error) != len(r.test_error) for r in chosen):
        raise ValueError(f"runs of {method!r} hold no training error at their improvements")
    steps = [_steps(r, axis, pushes) for r in chosen]
    grid = np.unique(np.concatenate([np.append(x, end) for x, _, end in steps]))
    values = np.stack([e[np.searchsorted(x, grid, side="right") - 1] for x, e, _ in steps])
    return grid, values.mean(0), values.min(0), values.max(0)


def _compared(runs: list[MethodRun], methods: tuple[str, ...] | None,
              objects: tuple[str, ...] | None) -> tuple[list[MethodRun], tuple[str, ...]]:
    """The runs on ``objects`` (default: every object of the comparison, those other methods
    than Algorithm 1 ran on) and ``methods`` (default: every method among them)."""
    if objects is None:
        objects = tuple(dict.fromkeys(r.object for r in runs if r.method != "algorithm1"))
        objects = objects or tuple(dict.fromkeys(r.object for r in runs))
    runs = [r for r in runs if r.object in objects]
    if methods is None:
        methods = tuple(m for m in METHODS if any(r.method == m for r in runs))
    if not runs or not methods:
        raise ValueError("runs hold no run of the given methods and objects")
    return runs, methods


def plot_protocol(runs: list[MethodRun], methods: tuple[str, ...] | None = None,
                  objects: tuple[str, ...] | None = None) -> Figure:
    """Fig. 3: test error against simulations (left) and wall time (right) for each of
    ``methods`` (default: every method in ``runs``), mean over the runs on ``objects``
    (default: every object of the comparison) with the min–max band, and each object's floor
    (the truth's own test error, dashed)."""
    runs, methods = _compared(runs, methods, objects)
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 4.2), sharey=True)
    floors = {r.object: r.floor for r in runs}
    for ax, axis in zip(axes, AXES, strict=True):
        for method in methods:
            x, mean, low, high = error_curve(runs, method, axis)
            color = _color(method)
            ax.plot(x, 1e3 * mean, color=color, lw=1.8, drawstyle="steps-post",
                    label=METHODS[method].label)
            if len(runs) > 1:
                ax.fill_between(x, 1e3 * low, 1e3 * high, color=color, alpha=0.12,
                                step="post", lw=0)
            ax.plot(x[-1], 1e3 * mean[-1], "o", color=color, ms=4)
        for name, floor in floors.items():
            ax.axhline(1e3 * floor, color="0.35", ls="--", lw=1)
            ax.annotate(f"{name} floor", (1.0, 1e3 * floor), xycoords=("axes fraction", "data"),
                        ha="right", va="bottom", fontsize="x-small", color="0.35")
        ax.set_xlabel("simulations" if axis == "simulations" else "wall time (s)")
    axes[0].set_ylabel("mean test cell-position error (mm)")
    axes[0].set_ylim(bottom=0)
    handles, labels = axes[0].get_legend_handles_labels()
    handles.append(Line2D([], [], color="0.35", ls="--", lw=1))
    labels.append("floor: the truth's own error")
    fig.legend(handles, labels, loc="outside lower center", ncols=2, frameon=False)
    return fig


def plot_train_test(runs: list[MethodRun], methods: tuple[str, ...] | None = None,
                    objects: tuple[str, ...] | None = None) -> Figure:
    """The error on the training pushes (dotted) and on the test pushes (solid) against
    simulations, one panel per method of ``methods`` (default: every method in ``runs``), mean
    over the runs on ``objects`` (default: every object of the comparison), with the truth's
    mean error on each (the floors, grey)."""
    runs, methods = _compared(runs, methods, objects)
    columns = min(3, len(methods))
    rows = -(-len(methods) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(7.0, 1.9 * rows + 0.8), sharex=True,
                             sharey=True, squeeze=False)
    first = [r for r in runs if r.method == methods[0]]
    test_floor = 1e3 * float(np.mean([r.floor for r in first]))
    train_floor = 1e3 * float(np.mean([r.train_floor for r in first]))
    for ax, method in zip(axes.flat, methods, strict=False):
        color = _color(method)
        for pushes, style in (("train", ":"), ("test", "-")):
            x, mean, _, _ = error_curve(runs, method, "simulations", pushes)
            ax.plot(x, 1e3 * mean, color=color, lw=1.6, ls=style, drawstyle="steps-post")
            ax.plot(x[-1], 1e3 * mean[-1], "o", color=color, ms=3.5,
                    mfc=color if pushes == "test" else "white")
        ax.axhline(test_floor, color="0.35", lw=0.8)
        ax.axhline(train_floor, color="0.35", lw=0.8, ls=":")
        ax.set_title(METHODS[method].label, fontsize="small")
    for ax in axes.flat[len(methods):]:
        ax.set_axis_off()
    for ax in axes[-1]:
        ax.set_xlabel("simulations")
    for ax in axes[:, 0]:
        ax.set_ylabel("error (mm)")
    axes[0, 0].set_ylim(bottom=0)
    handles = [Line2D([], [], color="0.2", ls="-"), Line2D([], [], color="0.2", ls=":"),
               Line2D([], [], color="0.35", lw=0.8)]
    fig.legend(handles, ["test pushes", "training pushes", "the truth's (floors)"],
               loc="outside lower center", ncols=3, frameon=False)
    return fig


# -- Fig. 4a: the maps ---------------------------------------------------------------------

_OBJECTS: dict[str, CellObject] = {}


def _object(name: str) -> CellObject:
    if name not in _OBJECTS:
        _OBJECTS[name] = load_object(name)
    return _OBJECTS[name]


def _map_image(obj: CellObject, values: np.ndarray) -> np.ndarray:
    """``values`` (k,) on the object's grid (rows, columns), NaN where there is no cell."""
    grid = np.asarray(obj.grid)
    values = np.asarray(values, dtype=float)
    if values.shape != (len(grid),):
        raise ValueError(f"values must have shape ({len(grid)},) for {obj.name}, got "
                         f"{values.shape}")
    top = grid.min(0)
    image = np.full(tuple(grid.max(0) - top + 1), np.nan)
    image[grid[:, 0] - top[0], grid[:, 1] - top[1]] = values
    return image


def _show_map(ax: plt.Axes, obj: CellObject, values: np.ndarray, norm: Normalize,
              cmap: str = "coolwarm"):
    image = ax.imshow(_map_image(obj, values), cmap=cmap, norm=norm, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return image


def _map_axes(names: list[str], columns: int, per_ratio: float, base: float
              ) -> tuple[Figure, np.ndarray, list[CellObject]]:
    """A figure of one row of ``columns`` map panels per object of ``names``, each row as
    tall as its object's grid is (within bounds): the figure, its axes and the objects."""
    objects = [_object(n) for n in names]
    ratios = [(np.ptp(o.grid[:, 0]) + 1) / (np.ptp(o.grid[:, 1]) + 1) for o in objects]
    ratios = [min(max(r, 0.2), 1.2) for r in ratios]
    fig, axes = plt.subplots(len(objects), columns,
                             figsize=(7.0, base + per_ratio * sum(ratios)),
                             height_ratios=ratios, squeeze=False)
    return fig, axes, objects


def plot_maps(runs: list[MethodRun], method: str = "algorithm1", experiment: int = 0) -> Figure:
    """Fig. 4a: each object's identified map μ·M / Σ μ·M (left) beside the truth's (right),
    drawn on its cell grid, from the runs of ``method`` on ``experiment``; one colour scale
    per object, shared by its two maps."""
    chosen = [r for r in runs if r.method == method and r.experiment == experiment]
    if not chosen:
        raise ValueError(f"runs hold no run of {method!r} on experiment {experiment}")
    fig, axes, objects = _map_axes([r.object for r in chosen], 2, 3.0, 1.0)
    for row, (run, obj) in enumerate(zip(chosen, objects, strict=True)):
        scale = 1e2 * len(obj)  # shares as % of a uniform cell's share
        both = np.concatenate([run.identified_map, run.true_map]) * scale
        norm = Normalize(float(both.min()), float(both.max()))
        _show_map(axes[row, 0], obj, run.identified_map * scale, norm)
        image = _show_map(axes[row, 1], obj, run.true_map * scale, norm)
        axes[row, 0].set_title(f"{run.object}: identified", fontsize="medium")
        axes[row, 1].set_title(f"{run.object}: truth", fontsize="medium")
        fig.colorbar(image, ax=axes[row, :], shrink=0.9, pad=0.02,
                     label="k μ·M / Σ μ·M (%)")
    return fig


def plot_uncertainty(maps: list[UncertaintyMap], n_pushes: int | None = None) -> Figure:
    """Beyond the paper: per object (rows), SVGD's mean map of μ·M (left), its posterior
    spread (middle) and the distance each cell travelled in the training pushes (right), from
    the runs of ``maps`` with ``n_pushes`` training pushes (default: the most)."""
    if not maps:
        raise ValueError("maps must hold at least one UncertaintyMap")
    n_pushes = max(m.n_pushes for m in maps) if n_pushes is None else n_pushes
    chosen = [m for m in maps if m.n_pushes == n_pushes]
    if not chosen:
        raise ValueError(f"maps hold no run with {n_pushes} training pushes")
    fig, axes, objects = _map_axes([m.object for m in chosen], 3, 2.4, 1.2)
    panels = (("mean", "k μ·M / Σ μ·M (%)", "coolwarm"), ("spread", "spread (%)", "viridis"),
              ("travel", "travel (cm)", "magma"))
    for row, (m, obj) in enumerate(zip(chosen, objects, strict=True)):
        values = {"mean": 1e2 * len(obj) * m.mean, "spread": 1e2 * m.spread,
                  "travel": 1e2 * m.travel}
        for col, (key, label, cmap) in enumerate(panels):
            ax = axes[row, col]
            norm = Normalize(float(values[key].min()), float(values[key].max()))
            image = _show_map(ax, obj, values[key], norm, cmap)
            ax.set_title(f"{m.object}: {key}", fontsize="small")
            fig.colorbar(image, ax=ax, shrink=0.8, pad=0.02, label=label)
    return fig


# -- Fig. 4b -------------------------------------------------------------------------------


def plot_push_counts(counts: list[PushCountRun]) -> Figure:
    """Fig. 4b: test error against gradient steps of Algorithm 1, one line per number of
    training pushes."""
    if not counts:
        raise ValueError("counts must hold at least one PushCountRun")
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    cmap = plt.get_cmap("viridis")
    for index, run in enumerate(counts):
        color = cmap(index / max(len(counts) - 1, 1))
        steps = np.arange(len(run.test_error))
        word = "push" if run.n_train == 1 else "pushes"
        ax.plot(steps, 1e3 * np.asarray(run.test_error), "o-", ms=4, color=color,
                label=f"{run.n_train} training {word}")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("gradient steps")
    ax.set_ylabel("mean test cell-position error (mm)")
    ax.legend(frameon=False)
    return fig


# -- the explorer --------------------------------------------------------------------------


def plot_run(run: MethodRun, improvement: int = -1) -> Figure:
    """One evaluated improvement of ``run`` (negative counts from the last): its identified
    map (left) and the final cells it predicts for the first test push (right) over pybullet's
    and the cells before the push."""
    n = len(run.evaluated)
    if not -n <= improvement < n:
        raise ValueError(f"improvement must be in [{-n}, {n}), got {improvement}")
    index = improvement % n
    obj = _object(run.object)
    fig, (ax_map, ax_push) = plt.subplots(1, 2, figsize=(7.0, 3.8),
                                          width_ratios=(1.0, 1.25))
    scale = 1e2 * len(obj)
    values = np.concatenate([run.maps[index], run.true_map]) * scale
    image = _show_map(ax_map, obj, run.maps[index] * scale,
                      Normalize(float(values.min()), float(values.max())))
    fig.colorbar(image, ax=ax_map, location="bottom", shrink=0.9, label="k μ·M / Σ μ·M (%)")
    step = run.evaluated[index]
    ax_map.set_title(f"{run.object}, {METHODS[run.method].label}\nimprovement {index + 1} of "
                     f"{n}: {int(run.simulations[step])} simulations, "
                     f"{run.seconds[step]:.1f} s", fontsize="small")
    side = 1e3 * obj.cell_side
    mm = {key: 1e3 * np.asarray(getattr(run, key)) for key in ("start", "observed")}
    predicted = 1e3 * np.asarray(run.predicted[index])
    marker = dict(marker="s", ls="none", ms=max(2.0, min(6.0, 0.25 * side)))
    ax_push.plot(*mm["start"].T, color="0.8", **marker)
    ax_push.plot(*mm["observed"].T, color="k", alpha=0.5, **marker)
    ax_push.plot(*predicted.T, color="C3", alpha=0.6, **marker)
    ax_push.set_aspect("equal", adjustable="datalim")
    ax_push.set_xlabel("x (mm)")
    ax_push.set_ylabel("y (mm)")
    ax_push.set_title(f"first test push: test error {1e3 * run.test_error[index]:.1f} mm",
                      fontsize="small")
    handles = [Patch(color="0.8", label="before the push"),
               Patch(color="k", alpha=0.5, label="pybullet"),
               Patch(color="C3", alpha=0.6, label="predicted")]
    ax_push.legend(handles=handles, frameon=False, fontsize="small", loc="best")
    return fig


def draw_run(runs: list[MethodRun], name: str, method: str, improvement: int) -> Figure:
    """The explorer's figure: :func:`plot_run` of the experiment-0 run of ``method`` on object
    ``name`` at evaluated improvement ``improvement`` (clipped to the run's last; negative
    counts from the last); a figure that says so where ``runs`` hold no such run."""
    check_choice("method", method, tuple(METHODS))
    chosen = [r for r in runs if r.object == name and r.method == method and r.experiment == 0]
    if not chosen:  # e.g. an object that only Algorithm 1 ran on: say so
        fig, ax = plt.subplots(figsize=(7.0, 3.8))
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"No run of {METHODS[method].label} on the {name} in these runs.",
                ha="center", va="center", transform=ax.transAxes)
        return fig
    run = chosen[0]
    n = len(run.evaluated)
    return plot_run(run, max(min(improvement, n - 1), -n))


def run_explorer(runs: list[MethodRun], name: str = "hammer", method: str = "algorithm1"):
    """An object, a method and a slider over the evaluated improvements of the experiment-0
    runs in ``runs``, redrawing :func:`draw_run` (the identified map and the first test push's
    predicted cells); no simulation. A ``name`` or ``method`` not in ``runs`` falls back to
    the first there; the slider starts at the last improvement."""
    import ipywidgets as widgets

    first = [r for r in runs if r.experiment == 0]
    if not first:
        raise ValueError("runs hold no experiment-0 run")
    names = list(dict.fromkeys(r.object for r in first))
    methods = [m for m in METHODS if any(r.method == m for r in first)]
    name = name if name in names else names[0]
    method = method if method in methods else methods[0]
    longest = max(len(r.evaluated) for r in first)
    return explorer(
        lambda name, method, improvement: draw_run(runs, name, method, improvement - 1),
        name=widgets.Dropdown(options=names, value=name, description="object"),
        method=widgets.Dropdown(options=[(METHODS[m].label, m) for m in methods], value=method,
                                description="method"),
        improvement=widgets.IntSlider(value=longest, min=1, max=longest, step=1,
                                      description="improvement", continuous_update=False),
    )
