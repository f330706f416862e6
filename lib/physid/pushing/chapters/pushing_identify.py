"""The protocol of §7 and the studies of the identification chapter, as independent jobs.

* :func:`run_protocol`: objects × experiments × methods (Fig. 3, Fig. 4a), each run one job of
  :func:`physid.core.sweeps.run_jobs` (local cores, or a Dask cluster);
* :func:`push_counts`: Algorithm 1 with 1 to 8 training pushes (Fig. 4b);
* :func:`direction_study`: the cosine between Algorithm 1's direction and the exact gradient
  of Eq. (1), per push and iteration, against whether §6's assumptions held on the push;
* :func:`gradient_cost`: seconds per gradient against the number of cells;
* :func:`uncertainty_maps`: SVGD (Part II) on the pushing target, from Algorithm 1's estimate:
  each cell's posterior spread of μ·M beside how far the training pushes moved it, and the
  Laplace approximation's at the same point (:func:`laplace_spread`);
* :func:`world_ablation`: the truth's test error (the floor) with the test pushes run again in
  each pybullet setup (:data:`physid.pushing.bullet.SETUPS`), per friction model: which part
  of the floor is the engine's friction model and which the "real world"'s making.

Sizes per scale are in :data:`SIZES`; the pybullet data of every experiment is cached on disk
(:func:`physid.pushing.observations.make_experiment`). Each public study is a stage of
:data:`CLOCK`, whose table closes the chapter.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from physid.core.scales import Sizes, SizeTable
from physid.core.seeds import name_stream
from physid.core.stages import StageClock
from physid.core.sweeps import run_jobs
from physid.core.threads import one_torch_thread
from physid.core.validate import check_choice, check_count, check_positive, check_seed
from physid.inference.estimators import make_estimator
from physid.pushing.budget import Budget
from physid.pushing.bullet import SETUPS
from physid.pushing.identify import METHODS, identify
from physid.pushing.objects import OBJECT_NAMES, CellObject, from_mask, load_object
from physid.pushing.observations import (
    MASS_FACTOR,
    Experiment,
    draw_truth,
    make_experiment,
    observe,
)
from physid.pushing.pushes import Push, random_pushes
from physid.pushing.simulate import cell_position_error, simulate
from physid.pushing.target import READINGS, PushingTarget, identifiable_map, start_point

__all__ = [
    "BLOCK_CELL",
    "CLOCK",
    "BLOCK_WIDTH",
    "COST_DURATION",
    "DESCENT_METHOD",
    "HEADLINE_ERROR",
    "HEADLINE_METHODS",
    "HEADLINE_SECONDS",
    "PAPER_DIRS",
    "REGION_FEATURES",
    "SCHEDULE_OPTIONS",
    "SIZES",
    "TARGET_ANALYTIC_SPEEDUP",
    "UNCERTAINTY_JITTER",
    "UNCERTAINTY_STEPSIZE",
    "UNIT_BOX_PRECISION",
    "UncertaintyMap",
    "WorldFloor",
    "CostPoint",
    "Directions",
    "Identifiability",
    "IdentifySizes",
    "LONG_EVAL",
    "MethodRun",
    "PushCountRun",
    "block",
    "direction_study",
    "feature_contrast",
    "friction_models",
    "gradient_cost",
    "identifiability",
    "laplace_spread",
    "log_slope",
    "long_methods",
    "long_runs",
    "mean_error",
    "push_counts",
    "robot_standin",
    "schedule_ablation",
    "schedule_options",
    "run_protocol",
    "shows_feature",
    "steps_to",
    "uncertainty_maps",
    "uncertainty_target",
    "world_ablation",
]

#: The paper's headline: under 1.5 cm mean cell error …
HEADLINE_ERROR = 0.015
#: … within 30 s of computation.
HEADLINE_SECONDS = 30.0
#: Seconds of the one push the cost study times a gradient on (:func:`gradient_cost`).
COST_DURATION = 0.3
#: Benchmark target: Algorithm 1 reaches the error it reaches at least this many times sooner
#: than gradient descent with autograd through the LCP formulation (benchmarks/pushing.py).
TARGET_ANALYTIC_SPEEDUP = 10.0

#: §7.3's features of each object's map: the region (a material letter of the drawing, and
#: what it is) whose mean μ·M should stand out, and whether it should be higher (True) or
#: lower (False) than the rest of the object.
REGION_FEATURES = {
    "hammer": ("H", "the iron head", True),
    "crimp": ("C", "the iron head", True),
    "ranch": ("m", "the floating shaft", False),
    "toolbox": ("L", "the heavy tools' side", True),
    "book": ("T", "the thicker side", True),
}


#: The directions of the paper's friction polygon D (§5).
PAPER_DIRS = 4


@dataclass(frozen=True)
class IdentifySizes(Sizes):
    """Sizes of the identification chapter at one scale.

    ``objects`` run every method of ``methods``; ``map_objects`` run Algorithm 1 only (for
    Fig. 4a); ``experiments`` ground truths per object, each with ``n_train`` training and
    ``n_test`` test pushes of ``duration`` s; every run gets ``budget``; the test error is
    evaluated at up to ``n_eval`` improvements of each run. ``push_counts`` and ``steps`` size
    Fig. 4b; ``cosine_iterations`` the direction study; ``cells`` the cost study (with
    ``lcp_cells`` the sizes the LCP formulation is timed at and ``cost_repeats`` repeats);
    ``robot_objects``, ``robot_train`` and ``robot_test`` the simulated stand-in for the real
    robot's runs; ``long_budget`` (simulations) the longer runs of :func:`long_runs`;
    ``friction_models`` the directions of D the headline's methods identify with
    (:func:`friction_models`, the paper's 4 first) on ``headline_experiments`` experiments per
    object (the headline's statistic is a mean over them, the paper's 10 at default and at the
    paper's scale; the other studies keep ``experiments``); ``setups`` the pybullet setups of
    :func:`world_ablation`; ``uncertainty_pushes`` the training pushes (the first ones) and
    ``uncertainty_particles`` and ``uncertainty_iterations`` the SVGD runs of
    :func:`uncertainty_maps`; ``n_jobs`` local workers.
    """

    objects: tuple[str, ...]
    map_objects: tuple[str, ...]
    methods: tuple[str, ...]
    experiments: int
    n_train: int
    n_test: int
    duration: float
    budget: Budget
    n_eval: int
    push_counts: tuple[int, ...]
    steps: int
    cosine_iterations: int
    cells: tuple[int, ...]
    lcp_cells: tuple[int, ...]
    cost_repeats: int
    robot_objects: tuple[str, ...] = ("hammer", "toolbox", "book")
    robot_train: int = 2
    robot_test: int = 5
    long_budget: int = 120
    friction_models: tuple[int, ...] = (PAPER_DIRS, 16)
    headline_experiments: int = 1
    setups: tuple[str, ...] = tuple(SETUPS)
    uncertainty_pushes: tuple[int, ...] = (1, 4)
    uncertainty_particles: int = 16
    uncertainty_iterations: int = 60
    n_jobs: int = 2

    def check(self) -> None:
        """Every name of ``setups`` is a registered pybullet setup; ``uncertainty_pushes``
        are counts of training pushes the experiments have."""
        for name in self.setups:
            SETUPS.check(name, "setups")
        check_count("headline_experiments", self.headline_experiments)
        for n in self.uncertainty_pushes:
            check_count("uncertainty_pushes", n)
            if n > self.n_train:
                raise ValueError(f"uncertainty_pushes must be at most n_train = {self.n_train}, "
                                 f"got {self.uncertainty_pushes}")


_ALL = tuple(METHODS)
#: The wall time of each study the chapter runs (:class:`physid.core.stages.StageClock`).
CLOCK = StageClock()

#: The methods of the headline, run with every friction model of ``friction_models``.
HEADLINE_METHODS = ("algorithm1", "autograd-rigid")
_PAPER_OBJECTS = ("hammer", "crimp", "ranch")

#: Sizes per scale ("paper": the paper's ten experiments, four training and twelve test
#: pushes, and the authors' budget of 100 simulations).
SIZES = SizeTable(
    "identification chapter",
    quick=IdentifySizes(
        objects=("crimp",), map_objects=(), methods=_ALL, experiments=1, n_train=2,
        n_test=2, duration=0.5, budget=Budget(simulations=8, seconds=10.0), n_eval=2,
        push_counts=(1, 2), steps=2, cosine_iterations=1, cells=(10, 24), lcp_cells=(10,),
        cost_repeats=1, robot_objects=("crimp",), robot_train=1, robot_test=1,
        long_budget=8, setups=("book", "authors"), uncertainty_pushes=(1, 2),
        uncertainty_particles=4, uncertainty_iterations=3,
    ),
    default=IdentifySizes(
        objects=_PAPER_OBJECTS, map_objects=("toolbox", "book"), methods=_ALL, experiments=1,
        n_train=4, n_test=6, duration=1.0, budget=Budget(simulations=40, seconds=30.0),
        n_eval=3, push_counts=(1, 2, 4, 8), steps=6, cosine_iterations=3,
        cells=(10, 24, 48, 88, 127), lcp_cells=(10, 24, 48), cost_repeats=3,
        long_budget=1000, headline_experiments=10,
    ),
    paper=IdentifySizes(
        objects=_PAPER_OBJECTS, map_objects=("toolbox", "book"), methods=_ALL,
        experiments=10, n_train=4, n_test=12, duration=1.0,
        budget=Budget(simulations=100, seconds=60.0), n_eval=6,
        push_counts=(1, 2, 3, 4, 5, 6, 7, 8), steps=10, cosine_iterations=5,
        cells=(10, 24, 48, 88, 127), lcp_cells=(10, 24, 48, 88, 127), cost_repeats=5,
        long_budget=1000, headline_experiments=10,
    ),
)


def _experiment(name: str, index: int, s: IdentifySizes, seed: int,
                n_train: int | None = None, n_test: int | None = None) -> Experiment:
    """Experiment ``index`` of ``name`` at the sizes ``s`` (pybullet data cached on disk)."""
    return make_experiment(name, index, s.n_train if n_train is None else n_train,
                           s.n_test if n_test is None else n_test, s.duration, seed)


def _eval_points(n: int, n_eval: int) -> list[int]:
    """Up to ``n_eval`` indices of ``n`` improvements: the first, the last and log-spaced
    ones between."""
    if n <= n_eval:
        return list(range(n))
    inner = np.unique(np.round(np.geomspace(1, n - 1, n_eval)).astype(int))
    return sorted({0, n - 1, *inner.tolist()})[: max(n_eval, 2)]


@dataclass(frozen=True)
class MethodRun:
    """One method on one experiment: its improvements (simulations, seconds, training loss
    (m)), the test error (m) at the improvements ``evaluated``, with the identifiable maps
    there (``maps``, (E, k)) and the final cell positions they predict for the first test push
    (``predicted``, (E, k, 2)) beside pybullet's (``observed``, (k, 2)) and the cells before
    the push (``start``, (k, 2)); the identified and true identifiable maps (k,), the truth's
    own test error (the model's floor), why it stopped, what it used, the friction model
    (the directions of D) it identified and predicted with, and the method whose step
    schedule it took (``schedule``; its own when empty, :func:`schedule_ablation`). Per test
    push (B,): the truth's error (``floor_pushes``, whose mean is ``floor``) and whether the
    finger slid along the object, lost contact or changed side in pybullet (``test_slid``,
    ``test_lost_contact``, ``test_changed_side``). ``train_error`` (E,) is the test error's
    statistic on the training pushes at the same improvements, ``train_floor`` the truth's:
    the train–test gap."""

    object: str
    experiment: int
    method: str
    simulations: np.ndarray
    seconds: np.ndarray
    loss: np.ndarray
    evaluated: np.ndarray
    test_error: np.ndarray
    maps: np.ndarray
    predicted: np.ndarray
    observed: np.ndarray
    start: np.ndarray
    identified_map: np.ndarray
    true_map: np.ndarray
    floor: float
    stopped: str
    used_simulations: int
    used_seconds: float
    friction_dirs: int = PAPER_DIRS
    schedule: str = ""
    floor_pushes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    test_slid: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    test_lost_contact: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    test_changed_side: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    train_error: np.ndarray = field(default_factory=lambda: np.zeros(0))
    train_floor: float = float("nan")

    def test_error_at(self, simulations: float | None = None,
                      seconds: float | None = None) -> float:
        """The test error of the last evaluated improvement within the limits."""
        ok = np.ones(len(self.evaluated), bool)
        if simulations is not None:
            ok &= self.simulations[self.evaluated] <= simulations
        if seconds is not None:
            ok &= self.seconds[self.evaluated] <= seconds
        return float(self.test_error[np.flatnonzero(ok)[-1]]) if ok.any() else float("nan")


def _run_method(name: str, index: int, method: str, s: IdentifySizes, seed: int,
                n_train: int | None = None, n_test: int | None = None,
                budget: Budget | None = None, n_eval: int | None = None,
                friction_dirs: int = PAPER_DIRS, schedule: str = "") -> MethodRun:
    with one_torch_thread():
        ex = _experiment(name, index, s, seed, n_train, n_test)
        options = schedule_options(schedule) if schedule else None
        run = identify(method, ex.train, budget or s.budget, seed=seed, options=options,
                       friction_dirs=friction_dirs)
        h = run.history
        points = _eval_points(len(h.estimates), n_eval or s.n_eval)
        target = PushingTarget(ex.train, friction_dirs=friction_dirs)
        x = torch.as_tensor(np.array([h.estimates[i] for i in points]))
        masses, frictions = target.physical(x)
        final = target.final_positions(masses, frictions, ex.test)
        observed = ex.test.positions[:, -1].expand_as(final)
        test = cell_position_error(final, observed).mean(1).numpy()
        floors = target.push_errors(ex.obj.masses[None], ex.obj.frictions[None], ex.test)
        train = target.final_error(masses, frictions).numpy()
        train_floor = float(target.final_error(ex.obj.masses[None], ex.obj.frictions[None])[0])
    return MethodRun(
        name, index, method, np.array(h.simulations), np.array(h.seconds), np.array(h.loss),
        np.array(points), test, identifiable_map(masses, frictions).numpy(),
        final[:, 0].numpy(), ex.test.positions[0, -1].numpy(), ex.test.positions[0, 0].numpy(),
        identifiable_map(torch.as_tensor(run.masses), torch.as_tensor(run.frictions)).numpy(),
        identifiable_map(ex.obj.masses, ex.obj.frictions).numpy(), float(floors.mean(1)[0]),
        run.stopped, run.simulations, run.seconds, friction_dirs, schedule, floors[0].numpy(),
        ex.test.slid.numpy(), ex.test.lost_contact.numpy(), ex.test.changed_side.numpy(),
        train, train_floor,
    )


def _prepare(name: str, index: int, s: IdentifySizes, seed: int, n_train: int | None = None,
             n_test: int | None = None) -> None:
    _experiment(name, index, s, seed, n_train, n_test)


@CLOCK.stage
def run_protocol(scale: str, seed: int = 0, scheduler: object = None,
                 methods: tuple[str, ...] | None = None, friction_dirs: int = PAPER_DIRS,
                 map_objects: bool = True, experiments: Sequence[int] | None = None
                 ) -> list[MethodRun]:
    """Every method of ``methods`` (default: the scale's, all registered) on every experiment
    of ``SIZES[scale].objects`` (the indices ``experiments``, by default the scale's
    ``range(experiments)``) and, with ``map_objects``, Algorithm 1 on the
    ``map_objects``, identifying and predicting with the friction polygon of
    ``friction_dirs`` directions (the paper's 4 by default): the pybullet data first
    (cached), then one job per run, locally or on the Dask cluster ``scheduler``
    (:func:`physid.core.sweeps.run_jobs`)."""
    s = SIZES[scale]
    seed = check_seed("seed", seed)
    friction_dirs = check_count("friction_dirs", friction_dirs, minimum=3)
    if not isinstance(map_objects, bool):
        raise TypeError(f"map_objects must be True or False, got {map_objects!r}")
    if methods is None:
        methods = s.methods
    if isinstance(methods, str) or not methods:
        raise ValueError(f"methods must be a non-empty tuple of method names, got {methods!r}")
    for name in methods:
        check_choice("methods", name, tuple(METHODS))
    if experiments is None:
        experiments = range(s.experiments)
    if isinstance(experiments, str) or not len(experiments):
        raise ValueError(f"experiments must be a non-empty sequence of indices, got "
                         f"{experiments!r}")
    indices = [check_count("experiments", i, minimum=0) for i in experiments]
    maps = s.map_objects if map_objects else ()
    prepared = [dict(name=n, index=i, s=s, seed=seed) for n in s.objects + maps
                for i in indices]
    run_jobs(_prepare, prepared, n_jobs=s.n_jobs, scheduler=scheduler)
    common = dict(s=s, seed=seed, friction_dirs=friction_dirs)
    jobs = [dict(name=n, index=i, method=m, **common) for n in s.objects
            for i in indices for m in methods]
    jobs += [dict(name=n, index=i, method="algorithm1", **common) for n in maps
             for i in indices]
    return run_jobs(_run_method, jobs, n_jobs=s.n_jobs, scheduler=scheduler,
                    desc="identification")


@CLOCK.stage
def friction_models(scale: str, seed: int = 0, scheduler: object = None,
                    runs: list[MethodRun] | None = None) -> list[MethodRun]:
    """The headline's methods (:data:`HEADLINE_METHODS`) on the first
    ``SIZES[scale].headline_experiments`` experiments of the protocol's objects with every
    friction model of ``SIZES[scale].friction_models``: the same pushes, truths, starts and
    budgets, only the engine's directions of D differ (the floor too, since the truth is run in
    the same engine). Runs of :func:`run_protocol` passed in ``runs`` are reused for the
    experiments and models they cover."""
    s = SIZES[scale]
    seed = check_seed("seed", seed)
    runs = list(runs or [])
    if not all(isinstance(r, MethodRun) for r in runs):
        raise TypeError("runs must be a list of MethodRun")
    per_experiment = len(s.objects) * len(HEADLINE_METHODS)
    out = []
    for dirs in s.friction_models:
        have = [r for r in runs if r.friction_dirs == dirs and r.method in HEADLINE_METHODS
                and r.object in s.objects and not r.schedule
                and r.experiment < s.headline_experiments]
        missing = [i for i in range(s.headline_experiments)
                   if sum(r.experiment == i for r in have) < per_experiment]
        have = [r for r in have if r.experiment not in missing]
        if missing:
            have += run_protocol(scale, seed, scheduler, HEADLINE_METHODS, dirs,
                                 map_objects=False, experiments=missing)
        out += sorted(have, key=lambda r: (r.object, r.experiment, r.method))
    return out


#: The options of a step schedule (:func:`physid.pushing.identify.travel_cap`).
SCHEDULE_OPTIONS = ("alpha", "decay", "mass_power")


def schedule_options(method: str) -> dict:
    """The step schedule of the registered ``method`` (its rate, decay and mass power), to run
    another method with."""
    options = METHODS.get(method, "method").options
    return {key: options[key] for key in SCHEDULE_OPTIONS}


@CLOCK.stage
def schedule_ablation(scale: str, seed: int = 0, scheduler: object = None,
                      runs: list[MethodRun] | None = None) -> list[MethodRun]:
    """Direction against schedule: each of the headline's directions (Algorithm 1's, the
    exact gradient's) under each of their step schedules (:func:`schedule_options`), on the
    protocol's experiments with the paper's friction model. The two runs of each object
    with their own schedule are taken from ``runs`` (:func:`run_protocol`) when there."""
    s = SIZES[scale]
    seed = check_seed("seed", seed)
    runs = list(runs or [])
    if not all(isinstance(r, MethodRun) for r in runs):
        raise TypeError("runs must be a list of MethodRun")
    own = {(r.object, r.experiment, r.method): r for r in runs
           if r.friction_dirs == PAPER_DIRS and not r.schedule and r.object in s.objects}
    cells = [(n, i, m, sched) for n in s.objects for i in range(s.experiments)
             for m in HEADLINE_METHODS
             for sched in sorted(HEADLINE_METHODS, key=lambda other, m=m: other != m)]
    missing = [(n, i, m, sched) for n, i, m, sched in cells
               if m != sched or (n, i, m) not in own]
    run_jobs(_prepare, [dict(name=n, index=i, s=s, seed=seed) for n in s.objects
                        for i in range(s.experiments)], n_jobs=s.n_jobs, scheduler=scheduler)
    done = run_jobs(_run_method, [dict(name=n, index=i, method=m, s=s, seed=seed,
                                       schedule="" if m == sched else sched)
                                  for n, i, m, sched in missing],
                    n_jobs=s.n_jobs, scheduler=scheduler, desc="schedules")
    new = dict(zip(missing, done, strict=True))
    return [new[c] if c in new else own[c[:3]] for c in cells]


@CLOCK.stage
def robot_standin(scale: str, seed: int = 0, scheduler: object = None) -> list[MethodRun]:
    """The sizes of the paper's real-robot runs in simulation: Algorithm 1 and autograd through
    formulation 2 with ``robot_train`` training and ``robot_test`` test pushes on each of
    ``robot_objects`` (first experiment)."""
    s = SIZES[scale]
    seed = check_seed("seed", seed)
    sized = dict(n_train=s.robot_train, n_test=s.robot_test)
    run_jobs(_prepare, [dict(name=n, index=0, s=s, seed=seed, **sized)
                        for n in s.robot_objects], n_jobs=s.n_jobs, scheduler=scheduler)
    jobs = [dict(name=n, index=0, method=m, s=s, seed=seed, **sized) for n in s.robot_objects
            for m in ("algorithm1", "autograd-rigid")]
    return run_jobs(_run_method, jobs, n_jobs=s.n_jobs, scheduler=scheduler)


@dataclass(frozen=True)
class WorldFloor:
    """The truth's test error per push (``floor_pushes``, (B,), m) of one experiment's test
    pushes run in the pybullet ``setup`` and predicted with ``friction_dirs`` directions of D,
    and per push whether the finger slid along the object, lost contact or changed side
    there."""

    object: str
    experiment: int
    setup: str
    friction_dirs: int
    floor_pushes: np.ndarray
    slid: np.ndarray
    lost_contact: np.ndarray
    changed_side: np.ndarray


def _world_floors(name: str, index: int, setup: str, s: IdentifySizes, seed: int
                  ) -> list[WorldFloor]:
    with one_torch_thread():
        ex = _experiment(name, index, s, seed)
        test = observe(ex.obj, ex.test.pushes, ex.obj.masses, ex.obj.frictions, setup=setup)
        floors = []
        for dirs in s.friction_models:
            errors = PushingTarget(ex.train, friction_dirs=dirs).push_errors(
                ex.obj.masses[None], ex.obj.frictions[None], test)
            floors.append(WorldFloor(name, index, setup, dirs, errors[0].numpy(),
                                     test.slid.numpy(), test.lost_contact.numpy(),
                                     test.changed_side.numpy()))
    return floors


@CLOCK.stage
def world_ablation(scale: str, seed: int = 0, scheduler: object = None) -> list[WorldFloor]:
    """The protocol's test pushes on every experiment of ``SIZES[scale].objects``, run again
    in each pybullet setup of ``setups`` (the same truths and pushes; the book's setup gives
    the protocol's own floor) and predicted by the truth with each friction model of
    ``friction_models``: one :class:`WorldFloor` per object, experiment, setup and model, one
    job per object, experiment and setup."""
    s = SIZES[scale]
    seed = check_seed("seed", seed)
    run_jobs(_prepare, [dict(name=n, index=i, s=s, seed=seed) for n in s.objects
                        for i in range(s.experiments)], n_jobs=s.n_jobs, scheduler=scheduler)
    jobs = [dict(name=n, index=i, setup=w, s=s, seed=seed) for n in s.objects
            for i in range(s.experiments) for w in s.setups]
    done = run_jobs(_world_floors, jobs, n_jobs=s.n_jobs, scheduler=scheduler,
                    desc="pybullet setups")
    return [floor for floors in done for floor in floors]


#: The start of :func:`uncertainty_maps`: Algorithm 1's estimate, each coordinate moved by a
#: normal draw of this standard deviation (unit box), clipped to the box.
UNCERTAINTY_JITTER = 0.05
#: SVGD's AdaGrad step (unit box) in :func:`uncertainty_maps`.
UNCERTAINTY_STEPSIZE = 0.02
#: The precision of the uniform prior on the unit box (its variance is 1/12), which
#: :func:`laplace_spread` adds to the curvature.
UNIT_BOX_PRECISION = 12.0


@dataclass(frozen=True)
class UncertaintyMap:
    """SVGD's particles over one experiment's map from its first ``n_pushes`` training pushes,
    per cell (k,): the mean identifiable map μ·M / Σ μ·M over the particles (``mean``), its
    standard deviation over them times k, in units of a uniform cell's share (``spread``), the
    same at the start (``start_spread``), the distance the cell travelled in those pushes in
    pybullet (``travel``, m) and the true map (``true_map``); the Laplace scale of the
    likelihood (``scale``, m: the loss of Algorithm 1's estimate) and SVGD's seconds; beside
    SVGD, the Laplace approximation's spread at Algorithm 1's estimate, SVGD's start
    (``laplace_spread``, :func:`laplace_spread`: no sampler involved) and the number of
    directions in which the likelihood curves the wrong way there
    (``negative_curvature``); with the most training pushes, the same at the end of a longer
    descent of the same loss from the authors' start (exact-gradient descent through the rigid
    formulation, ``long_budget`` simulations: ``descended_spread``, ``descended_negative``;
    empty and −1 with fewer pushes)."""

    object: str
    n_pushes: int
    mean: np.ndarray
    spread: np.ndarray
    start_spread: np.ndarray
    travel: np.ndarray
    true_map: np.ndarray
    scale: float
    seconds: float
    laplace_spread: np.ndarray
    negative_curvature: int
    descended_spread: np.ndarray = field(default_factory=lambda: np.zeros(0))
    descended_negative: int = -1


@CLOCK.stage
def laplace_spread(target: PushingTarget, x: torch.Tensor, hessian: torch.Tensor
                   ) -> tuple[np.ndarray, int]:
    """The Laplace approximation's spread of each cell's share of μ·M at the point ``x``
    (2k,) of ``target``'s unit box, in :class:`UncertaintyMap`'s units (k standard deviations
    of the share), and the number of negative eigenvalues of ``hessian``.

    ``hessian`` (2k, 2k) is that of the negative log-likelihood at ``x``
    (:meth:`~physid.pushing.target.PushingTarget.hessian`); with its eigenpairs ``(λ, V)`` the
    posterior is approximated by ``N(x, Σ)``, ``Σ = V diag(1 / (max(λ, 0) + 12)) Vᵀ``: a
    direction of negative curvature keeps the prior's variance only (1/12, the uniform prior on
    the unit box, :data:`UNIT_BOX_PRECISION`). The share's spread is ``k √diag(J Σ Jᵀ)``, ``J`` the
    Jacobian of :func:`~physid.pushing.target.identifiable_map` at ``x``."""
    if not isinstance(target, PushingTarget):
        raise TypeError(f"target must be a PushingTarget, got {type(target).__name__}")
    x = target.check_particles(torch.as_tensor(x).reshape(1, -1), "x")[0]
    if not isinstance(hessian, torch.Tensor) or hessian.shape != (target.dim, target.dim):
        raise ValueError(f"hessian must be a ({target.dim}, {target.dim}) tensor, got "
                         f"{getattr(hessian, 'shape', type(hessian).__name__)}")
    eigenvalues, vectors = torch.linalg.eigh(hessian)
    covariance = vectors @ torch.diag(1.0 / (eigenvalues.clamp(min=0.0) + UNIT_BOX_PRECISION)
                                      ) @ vectors.T
    jacobian = torch.autograd.functional.jacobian(
        lambda z: identifiable_map(*target.physical(z[None]))[0], x)
    spread = target.k * torch.diagonal(jacobian @ covariance @ jacobian.T).sqrt()
    return spread.numpy(), int((eigenvalues < 0).sum())


def _uncertainty_target(name: str, n_pushes: int, s: IdentifySizes, seed: int
                        ) -> tuple[PushingTarget, torch.Tensor]:
    data = _experiment(name, 0, s, seed).train.subset(range(n_pushes))
    best = identify("algorithm1", data, s.budget, seed=seed)
    scale = float(best.history.loss[-1])
    # One Laplace observation of scale ``scale`` per restart: log p = −Σ_r d_r / scale.
    target = PushingTarget(data, noise=scale / PushingTarget(data).n_restarts)
    return target, torch.as_tensor(best.history.estimates[-1])


@CLOCK.stage
def uncertainty_target(name: str, n_pushes: int, scale: str, seed: int = 0
                       ) -> tuple[PushingTarget, torch.Tensor]:
    """What :func:`uncertainty_maps` samples for object ``name`` and its first ``n_pushes``
    training pushes at ``scale``: the pushing target whose noise makes the loss of Algorithm
    1's estimate its Laplace scale (one term per restart), and that estimate (2k,) in the unit
    box, the centre of SVGD's start and the point of :func:`laplace_spread`."""
    s = SIZES[scale]
    check_choice("name", name, s.objects)
    check_choice("n_pushes", n_pushes, s.uncertainty_pushes)
    seed = check_seed("seed", seed)
    with one_torch_thread():
        return _uncertainty_target(name, n_pushes, s, seed)


#: The longer descent whose end is the uncertainty maps' second Laplace point: exact-gradient
#: descent through the rigid formulation, the method the headline sets beside Algorithm 1.
DESCENT_METHOD = "autograd-rigid"


def _uncertainty(name: str, n_pushes: int, s: IdentifySizes, seed: int) -> UncertaintyMap:
    with one_torch_thread():
        target, centre = _uncertainty_target(name, n_pushes, s, seed)
        data = target.data
        rng = np.random.default_rng([seed, n_pushes, name_stream(name)])
        jitter = rng.normal(0.0, UNCERTAINTY_JITTER, (s.uncertainty_particles, target.dim))
        x0 = (centre[None] + torch.as_tensor(jitter)).clamp(0.0, 1.0)
        estimator = make_estimator("SVGD", target, n_particles=s.uncertainty_particles,
                                   seed=seed, x0=x0, stepsize=UNCERTAINTY_STEPSIZE)
        start = time.perf_counter()
        estimator.run(s.uncertainty_iterations, progress=False)
        seconds = time.perf_counter() - start
        k = target.k
        maps = identifiable_map(*target.physical(estimator.particles.detach())).numpy()
        start_maps = identifiable_map(*target.physical(x0)).numpy()
        travel = (data.positions[:, 1:] - data.positions[:, :-1]).norm(dim=-1).sum((0, 1))
        laplace, negative = laplace_spread(target, centre, target.hessian(centre))
        descended, descended_negative = np.zeros(0), -1
        if n_pushes == max(s.uncertainty_pushes):  # where the claim is judged
            # The same approximation where a longer descent of the same loss ends.
            end = torch.as_tensor(identify(DESCENT_METHOD, data, Budget(
                simulations=s.long_budget), seed=seed).history.estimates[-1])
            descended, descended_negative = laplace_spread(target, end, target.hessian(end))
        obj = data.obj
    return UncertaintyMap(name, n_pushes, maps.mean(0), k * maps.std(0), k * start_maps.std(0),
                          travel.numpy(), identifiable_map(obj.masses, obj.frictions).numpy(),
                          float(target.noise * target.n_restarts), seconds, laplace, negative,
                          descended, descended_negative)


@CLOCK.stage
def uncertainty_maps(scale: str, seed: int = 0, scheduler: object = None
                     ) -> list[UncertaintyMap]:
    """Beyond the paper: the pushing target is a Part II target, so SVGD samples its
    posterior. For the first experiment of each of ``SIZES[scale].objects`` and each count of
    ``uncertainty_pushes`` (its first training pushes), Algorithm 1 runs first (the
    protocol's budget); its estimate's loss sets the likelihood's scale (one Laplace term per
    restart) and its estimate, jittered by :data:`UNCERTAINTY_JITTER`, the particles' start;
    SVGD then runs ``uncertainty_iterations`` iterations with ``uncertainty_particles``
    particles. Beside it, the Laplace approximation (:func:`laplace_spread`) at Algorithm 1's
    estimate and, with the most pushes, at the end of :data:`DESCENT_METHOD` run for
    ``long_budget`` simulations. One job per object and push count."""
    s = SIZES[scale]
    seed = check_seed("seed", seed)
    run_jobs(_prepare, [dict(name=n, index=0, s=s, seed=seed) for n in s.objects],
             n_jobs=s.n_jobs, scheduler=scheduler)
    jobs = [dict(name=n, n_pushes=p, s=s, seed=seed) for n in s.objects
            for p in s.uncertainty_pushes]
    return run_jobs(_uncertainty, jobs, n_jobs=s.n_jobs, scheduler=scheduler,
                    desc="uncertainty maps")


#: Improvements at which the test error of a :func:`long_runs` run is evaluated.
LONG_EVAL = 8


def long_methods() -> tuple[str, ...]:
    """The methods of :func:`long_runs`: every registered method that simulates formulation 2
    (formulation 1's simulations take seconds each)."""
    return tuple(m for m, spec in METHODS.items() if spec.formulation == "rigid")


@CLOCK.stage
def long_runs(scale: str, seed: int = 0, scheduler: object = None) -> list[MethodRun]:
    """Every method of :func:`long_methods` on the first experiment of each of ``objects``
    with a budget of ``long_budget`` simulations and no time limit, the test and training
    errors evaluated at up to :data:`LONG_EVAL` improvements: where each method ends when
    the budget is not what stops it."""
    s = SIZES[scale]
    seed = check_seed("seed", seed)
    run_jobs(_prepare, [dict(name=n, index=0, s=s, seed=seed) for n in s.objects],
             n_jobs=s.n_jobs, scheduler=scheduler)
    budget = Budget(simulations=s.long_budget)
    jobs = [dict(name=n, index=0, method=m, s=s, seed=seed, budget=budget, n_eval=LONG_EVAL)
            for n in s.objects for m in long_methods()]
    return run_jobs(_run_method, jobs, n_jobs=s.n_jobs, scheduler=scheduler, desc="long runs")


def feature_contrast(name: str, identified_map: np.ndarray) -> float:
    """§7.3's feature of object ``name`` in a map (k,): the mean μ·M share of the named region
    (:data:`REGION_FEATURES`) divided by that of the rest of the object. The feature shows
    when it is above 1 for a region that should be heavier and below 1 for one that should be
    lighter (:func:`shows_feature`)."""
    check_choice("name", name, OBJECT_NAMES)
    obj = load_object(name)
    region = REGION_FEATURES[name][0]
    cells = np.array([r == region for r in obj.regions])
    values = np.asarray(identified_map, dtype=float)
    if values.shape != (len(obj),):
        raise ValueError(f"identified_map must have shape ({len(obj)},), got {values.shape}")
    return float(values[cells].mean() / values[~cells].mean())


def shows_feature(name: str, contrast: float) -> bool:
    """Whether a :func:`feature_contrast` shows object ``name``'s feature: above 1 where the
    region should be heavier, below 1 where it should be lighter."""
    check_choice("name", name, OBJECT_NAMES)
    return bool(contrast > 1.0) if REGION_FEATURES[name][2] else bool(contrast < 1.0)


@dataclass(frozen=True)
class PushCountRun:
    """Algorithm 1 with ``n_train`` training pushes for ``steps`` gradient steps: the test
    error (m) of the best estimate after each step (index 0: the start) and the mean seconds
    per step."""

    n_train: int
    test_error: np.ndarray
    seconds_per_step: float


def _push_count(n_train: int, s: IdentifySizes, seed: int) -> PushCountRun:
    with one_torch_thread():
        ex = _experiment(s.objects[0], 0, s, seed, n_train=max(s.push_counts))
        train = ex.train.subset(range(n_train))
        run = identify("algorithm1", train, Budget(simulations=(s.steps + 1) * n_train),
                       seed=seed)
        target = PushingTarget(train)
        # Algorithm 1 evaluates one iterate per step: the history holds every improving one.
        x = np.stack(run.history.estimates)
        # The start is step 0; the evaluation after step i costs (i + 1) n_train simulations.
        steps = np.maximum(np.array(run.history.simulations) // n_train - 1, 0)
        errors = target.rollout_error(torch.as_tensor(x), ex.test).numpy()
        per_step = np.full(s.steps + 1, np.nan)
        for step, error in zip(steps, errors, strict=True):
            per_step[step:] = error  # the best so far stays until the next improvement
        seconds = run.seconds / (run.simulations / n_train)
    return PushCountRun(n_train, per_step, seconds)


@CLOCK.stage
def push_counts(scale: str, seed: int = 0, scheduler: object = None) -> list[PushCountRun]:
    """Fig. 4b: Algorithm 1 on the first experiment of the first of ``objects`` (the hammer)
    with each of ``push_counts`` training pushes (the first ones of the largest count), test
    error against gradient steps."""
    s = SIZES[scale]
    seed = check_seed("seed", seed)
    _prepare(s.objects[0], 0, s, seed, n_train=max(s.push_counts))
    jobs = [dict(n_train=n, s=s, seed=seed) for n in s.push_counts]
    return run_jobs(_push_count, jobs, n_jobs=s.n_jobs, scheduler=scheduler)


@dataclass(frozen=True)
class Directions:
    """Cosines (pushes, iterations) between Algorithm 1's direction and the exact gradient of
    Eq. (1) for the frictions (``friction``) and the masses (``mass``), per training push,
    with whether §6's assumptions held on each push (``holds``, (pushes,)) and whether the
    finger ``slid`` or ``lost_contact``; the same cosines of the pinned reading of the
    assumptions (``friction_pinned``, ``mass_pinned``,
    :meth:`~physid.pushing.target.PushingTarget.algorithm1`) at the same iterates."""

    object: str
    friction: np.ndarray
    mass: np.ndarray
    holds: np.ndarray
    slid: np.ndarray
    lost_contact: np.ndarray
    friction_pinned: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    mass_pinned: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))


def _cosine(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    return torch.nn.functional.cosine_similarity(a, b, dim=-1).numpy()


def _directions(name: str, s: IdentifySizes, seed: int) -> Directions:
    with one_torch_thread():
        ex = _experiment(name, 0, s, seed)
        run = identify("algorithm1", ex.train,
                       Budget(simulations=s.cosine_iterations * len(ex.train)), seed=seed)
        x = torch.as_tensor(np.stack(run.history.estimates[: s.cosine_iterations]))
        cosines: dict[str, list[np.ndarray]] = {}
        for b in range(len(ex.train)):
            target = PushingTarget(ex.train.subset([b]))
            _, grad = target.loss_and_grad(x)
            for reading in READINGS:
                _, direction = target.algorithm1(x, reading)
                cosines.setdefault(f"friction {reading}", []).append(
                    _cosine(direction, grad[:, target.k :]))
                cosines.setdefault(f"mass {reading}", []).append(
                    _cosine(direction, grad[:, : target.k]))
    return Directions(name, np.array(cosines["friction paper"]), np.array(cosines["mass paper"]),
                      ex.train.assumptions_hold.numpy(), ex.train.slid.numpy(),
                      ex.train.lost_contact.numpy(), np.array(cosines["friction pinned"]),
                      np.array(cosines["mass pinned"]))


@CLOCK.stage
def direction_study(scale: str, seed: int = 0, scheduler: object = None) -> list[Directions]:
    """Algorithm 1's direction against the exact gradient on every training push of the first
    experiment of each of ``objects``, at the first ``cosine_iterations`` iterates of
    Algorithm 1."""
    s = SIZES[scale]
    seed = check_seed("seed", seed)
    jobs = [dict(name=n, s=s, seed=seed) for n in s.objects]
    return run_jobs(_directions, jobs, n_jobs=s.n_jobs, scheduler=scheduler)


@dataclass(frozen=True)
class CostPoint:
    """Median seconds per gradient of Eq. (1) on one push of :data:`COST_DURATION` s of an
    object of ``cells`` cells, per method (NaN where a formulation was not timed at this size)."""

    cells: int
    algorithm1: float
    autograd_rigid: float
    autograd_lcp: float


#: Columns of the solid blocks of the cost studies (:func:`block`).
BLOCK_WIDTH = 8
#: Side (m) of a block's cells.
BLOCK_CELL = 0.02


def block(cells: int) -> tuple[CellObject, Push]:
    """A solid block of ``cells`` cells of :data:`BLOCK_CELL` m, :data:`BLOCK_WIDTH` wide with
    a ragged top row, and the push the cost studies time on it: up on the bottom face, a
    quarter of the width off centre, so that the block also turns."""
    cells = check_count("cells", cells)
    rows = -(-cells // BLOCK_WIDTH)
    mask = np.zeros((rows, BLOCK_WIDTH), bool)
    mask.reshape(-1)[-cells:] = True  # the full rows at the bottom
    obj = from_mask(mask, BLOCK_CELL, masses=0.5, frictions=0.5, name=f"{cells} cells")
    _, mids, normals = obj.exposed_faces()
    bottom = mids[(normals[:, 1] > 0.5) & (mids[:, 1] < mids[:, 1].min() + 1e-9)]
    width = BLOCK_WIDTH if cells >= BLOCK_WIDTH else cells
    contact = bottom[np.argmin(np.abs(bottom[:, 0] - width * BLOCK_CELL / 4))]
    return obj, Push(tuple(contact), (0.0, 1.0), duration=COST_DURATION)


def _cost(cells: int, s: IdentifySizes, seed: int) -> CostPoint:
    with one_torch_thread():
        obj, push = block(cells)
        data = observe(obj, [push], obj.masses, obj.frictions, world="rigid")
        x = torch.as_tensor(start_point(cells))[None]
        rigid, lcp = PushingTarget(data), PushingTarget(data, formulation="lcp")

        def median(fn) -> float:
            fn()  # warm-up
            times = []
            for _ in range(s.cost_repeats):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            return float(np.median(times))

        return CostPoint(
            cells, median(lambda: rigid.algorithm1(x)), median(lambda: rigid.loss_and_grad(x)),
            median(lambda: lcp.loss_and_grad(x)) if cells in s.lcp_cells else float("nan"),
        )


@CLOCK.stage
def gradient_cost(scale: str, seed: int = 0, scheduler: object = None) -> list[CostPoint]:
    """Seconds per gradient against the number of cells (``cells``), one job per size, one
    after the other (timings must not share the cores)."""
    s = SIZES[scale]
    seed = check_seed("seed", seed)
    check_count("cells", min(s.cells))
    return run_jobs(_cost, [dict(cells=c, s=s, seed=seed) for c in s.cells], n_jobs=1,
                    scheduler=scheduler)


@dataclass(frozen=True)
class Identifiability:
    """Mean final cell displacement (m) of ``pushes`` pushes of an object when its parameters
    change: every mass scaled by one ``factor`` (``global_scale``); each cell's mass scaled by
    its own log-uniform factor in :data:`~physid.pushing.observations.MASS_FACTOR` with its
    friction divided by it, so every μ_i M_i is kept (``product_kept``); and the same mass
    factors alone (``masses_alone``)."""

    object: str
    pushes: int
    global_scale: float
    product_kept: float
    masses_alone: float


def _displacement(obj, pushes, masses, frictions, reference) -> float:
    moved = simulate(obj, pushes, masses=masses, frictions=frictions).final
    return float(cell_position_error(moved, reference).mean())


@CLOCK.stage
def identifiability(scale: str, seed: int = 0, name: str = "hammer", factor: float = 3.0
                    ) -> Identifiability:
    """How far the hammer's cells move when the masses change with and without every μ_i M_i
    held fixed, over ``n_train`` + ``n_test`` random pushes of the first experiment's truth
    (formulation 2, the same engine both times: no model gap)."""
    s = SIZES[scale]
    seed = check_seed("seed", seed)
    check_choice("name", name, OBJECT_NAMES)
    factor = check_positive("factor", factor)
    with one_torch_thread():
        base = load_object(name)
        masses, frictions = draw_truth(base, seed)
        obj = replace(base, masses=masses, frictions=frictions)
        pushes = random_pushes(obj, s.n_train + s.n_test, seed=seed, duration=s.duration)
        reference = simulate(obj, pushes).final
        rng = np.random.default_rng(seed)
        scales = torch.as_tensor(np.exp(rng.uniform(*np.log(MASS_FACTOR), size=len(obj))))
        return Identifiability(
            name, len(pushes),
            _displacement(obj, pushes, masses * factor, frictions, reference),
            _displacement(obj, pushes, masses * scales, frictions / scales, reference),
            _displacement(obj, pushes, masses * scales, frictions, reference),
        )


# -- summaries the chapter's claims and figures share --------------------------------------


def mean_error(runs: list[MethodRun], method: str, objects: tuple[str, ...] | None = None,
               simulations: float | None = None, seconds: float | None = None) -> float:
    """Mean test error (m) over the runs of ``method`` (on ``objects``, default all) of the
    best estimate within ``simulations`` and ``seconds`` (:meth:`MethodRun.test_error_at`)."""
    check_choice("method", method, tuple(METHODS))
    values = [r.test_error_at(simulations, seconds) for r in runs
              if r.method == method and (objects is None or r.object in objects)]
    if not values:
        raise ValueError(f"runs hold no run of {method!r} on {objects}")
    return float(np.mean(values))


def log_slope(x, y) -> float:
    """The least-squares slope of ``log y`` against ``log x`` (how a cost grows with size);
    NaN entries of ``y`` are left out."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(y) & (y > 0)
    if keep.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[keep]), np.log(y[keep]), 1)[0])


def steps_to(test_error: np.ndarray, fraction: float = 0.9) -> int:
    """Gradient steps a run of :func:`push_counts` needs to make ``fraction`` of its total
    improvement of the test error (0 if it never improves)."""
    errors = np.asarray(test_error, dtype=float)
    gain = errors[0] - errors
    if gain[-1] <= 0:
        return 0
    return int(np.argmax(gain >= fraction * gain[-1]))
