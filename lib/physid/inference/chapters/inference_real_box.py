"""The shaken box of Heiden et al. (2022): two weights located from how a box swings.

The "real" box is pybullet's (:mod:`physid.inference.panda`): a Franka Panda shakes a box on a
universal joint. Our differentiable model (:class:`~physid.inference.box.ShakenBox`) takes the
arm's recorded motion as its known input.

* :func:`identify_box` (phase I): the empty box's inertia about the joint, centre of mass and
  the joint's damping, from a recording of the empty box, by CSVGD; the particle with the
  highest likelihood is the box phase II uses (as in the paper).
* :func:`locate_weights` (phase II): the 2-D positions of two 500 g weights inside the box, by
  every estimator, one ``joblib`` / Dask job each (:func:`physid.core.sweeps.run_jobs`), cached on
  disk. The weights can swap, so the posterior has two symmetric modes; :func:`mode_shares`
  measures how many particles sit in each.

Sizes per scale are in :data:`SIZES`. The observation is the paper's four box points; the
likelihood compares them in the mount frame with one isotropic scale
(:meth:`~physid.inference.box.ShakenBox.observe`), which is the same as comparing the world
points.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from physid.core.scales import Sizes, SizeTable, expect_sizes
from physid.core.sweeps import cached, run_jobs
from physid.core.target import Limits
from physid.core.threads import one_torch_thread
from physid.core.validate import (
    check_array,
    check_choice,
    check_choices,
    check_positive,
    check_seed,
)
from physid.inference.base import paper_order
from physid.inference.box import PHASE1_LIMITS, PHASE2_LIMITS, TRUE_BOX, TRUE_WEIGHTS, ShakenBox
from physid.inference.chapters.inference_synthetic import estimator_settings
from physid.inference.estimators import make_estimator
from physid.inference.likelihood import TrajectoryLikelihood
from physid.inference.panda import BoxRecording, record

__all__ = [
    "ESTIMATORS",
    "MODE_RADIUS",
    "MODE_REACH",
    "NOISE",
    "SIGMA_OBS",
    "SIZES",
    "BoxProblem",
    "BoxSizes",
    "PhaseOne",
    "WeightRun",
    "at_limits",
    "box_problem",
    "identify_box",
    "locate_weights",
    "mode_shares",
    "paper_stop",
    "weight_summary",
]

#: Observation noise of the likelihood, in units of the recorded points' spread (one scale for
#: all twelve coordinates).
SIGMA_OBS = 0.1
#: Gaussian noise added to the recorded joint angles (rad) and rates (rad/s).
NOISE = 1e-3
#: A particle is in one of the two symmetric modes when it balances the box: its two weights
#: lie opposite each other through the centre, ``‖w1 + w2‖`` within this distance (m).
MODE_RADIUS = 0.02
#: ... and weight 1 lies more than this far (m) from the centre along ``x``: half-way to the
#: box's side, where the true weights sit (at 0.125 m of the 0.14 m).
MODE_REACH = 0.07
#: The estimators of phase II: every registered one, in the order of the paper's Fig. 16 and
#: of the tables (:func:`~physid.inference.base.paper_order`).
ESTIMATORS = paper_order()


@dataclass(frozen=True)
class BoxSizes(Sizes):
    """Run sizes of the shaken box (see :data:`SIZES`): ``n_particles`` and ``iterations`` per
    phase-II particle method, ``sgld_iterations`` for SGLD's single chain, the NUTS run
    (``nuts_iterations``, ``nuts_warmup``, ``nuts_depth``; a single chain whose every leapfrog
    step is a rollout), ``phase1_particles`` and ``phase1_iterations`` for phase I, shooting
    ``windows`` and ``n_jobs`` parallel jobs."""

    scale: str
    n_particles: int
    iterations: int
    sgld_iterations: int
    phase1_particles: int
    phase1_iterations: int
    nuts_iterations: int
    nuts_warmup: int
    nuts_depth: int
    windows: int
    n_jobs: int = 1

    ZERO = ("nuts_warmup",)


#: Sizes per scale. ``paper``: 50 particles and 500 iterations in phase II, as in the paper;
#: ``default`` runs the particle methods to convergence (4,000 iterations: at 500 they are still
#: moving along the valley of balanced pairs, their traces show it) and the single chains
#: (SGLD, NUTS) shorter.
SIZES = SizeTable(
    "inference_real",
    quick=BoxSizes(
        scale="quick",
        n_particles=8,
        iterations=4,
        sgld_iterations=4,
        phase1_particles=8,
        phase1_iterations=4,
        nuts_iterations=3,
        nuts_warmup=1,
        nuts_depth=2,
        windows=5,
    ),
    default=BoxSizes(
        scale="default",
        n_particles=50,
        iterations=4000,
        sgld_iterations=150,
        phase1_particles=32,
        phase1_iterations=100,
        nuts_iterations=60,
        nuts_warmup=20,
        nuts_depth=3,
        windows=10,
        n_jobs=2,
    ),
    paper=BoxSizes(
        scale="paper",
        n_particles=50,
        iterations=500,
        sgld_iterations=500,
        phase1_particles=50,
        phase1_iterations=500,
        nuts_iterations=500,
        nuts_warmup=100,
        nuts_depth=5,
        windows=10,
        n_jobs=2,
    ),
)


@cached
def _recording(weights: dict | None, noise: float, seed: int) -> BoxRecording:
    return record(TRUE_BOX, weights, noise=noise, seed=seed)


def _isotropic_scale(model: ShakenBox, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-coordinate means of the observed points and one common spread for all twelve: the
    root mean square of their deviations (an isotropic scale keeps the mount frame's
    likelihood equal to the world frame's)."""
    points = model.observe(torch.as_tensor(states)).numpy()
    mean = points.mean(0)
    spread = float(np.sqrt(((points - mean) ** 2).mean()))
    return mean, np.full(points.shape[1], spread)


@dataclass(frozen=True)
class BoxProblem:
    """A recording and the model and limits it is fitted with."""

    recording: BoxRecording
    model: ShakenBox
    limits: Limits

    def target(self, windows: int = 1, defects: str = "likelihood") -> TrajectoryLikelihood:
        """The likelihood of the recording: single shooting, or ``windows`` windows."""
        states = self.recording.states
        return TrajectoryLikelihood(
            self.model,
            states,
            self.limits,
            sigma_obs=SIGMA_OBS,
            shooting_windows=windows,
            defects=defects,
            inputs=self.recording.inputs,
            observation_scale=_isotropic_scale(self.model, states),
        )


def box_problem(
    phase: int,
    box: dict[str, float] | None = None,
    seed: int = 0,
    weights: dict[str, float] | None = None,
) -> BoxProblem:
    """Phase ``1`` (the empty box; estimate :data:`~physid.inference.box.PHASE1_LIMITS`) or
    ``2`` (the weights at ``weights``, default :data:`~physid.inference.box.TRUE_WEIGHTS`;
    estimate :data:`~physid.inference.box.PHASE2_LIMITS` with the empty box ``box``, default
    its truth). The pybullet recordings are cached on disk."""
    phase = check_choice("phase", phase, (1, 2))
    seed = check_seed("seed", seed)
    if phase == 1:
        if box is not None or weights is not None:
            raise ValueError(
                f"box and weights must be None in phase 1 (the empty box is estimated), got "
                f"box={box!r}, weights={weights!r}"
            )
        recording = _recording(None, NOISE, seed)
        model = ShakenBox(names=tuple(PHASE1_LIMITS))
        return BoxProblem(recording, model, Limits.from_dict(PHASE1_LIMITS))
    fixed = dict(TRUE_BOX if box is None else box)
    unknown = sorted(set(fixed) - set(PHASE1_LIMITS))
    if unknown:
        raise ValueError(f"box names parameters that are not the box's: {unknown}")
    weights = dict(TRUE_WEIGHTS if weights is None else weights)
    if sorted(weights) != sorted(PHASE2_LIMITS):
        raise ValueError(f"weights must give {tuple(PHASE2_LIMITS)}, got {weights!r}")
    recording = _recording(weights, NOISE, seed)
    model = ShakenBox(names=tuple(PHASE2_LIMITS), with_weights=True, fixed=fixed)
    return BoxProblem(recording, model, Limits.from_dict(PHASE2_LIMITS))


@dataclass
class PhaseOne:
    """Phase I's result: the particles, the best physical one (the box phase II uses), and the
    mean point error (m) of the rollout: the median over the physical start particles, and at
    the best particle."""

    theta: np.ndarray
    best: dict[str, float]
    error_before: float
    error_after: float
    seconds: float


def _physical(model: ShakenBox, theta: np.ndarray) -> bool:
    """Whether ``theta`` is a physical box (:meth:`~physid.inference.box.ShakenBox.check_theta`):
    the paper's limits also hold inertias whose tensor about the centre of mass is not."""
    try:
        model.check_theta(torch.as_tensor(theta))
    except ValueError:
        return False
    return True


def _point_errors(problem: BoxProblem, theta: np.ndarray) -> np.ndarray:
    """Per particle of ``theta`` (N, M), the mean distance (m) between the recorded and the
    simulated box points over the four points and the frames (in the mount frame, which has
    the world's distances)."""
    rollouts = problem.target().rollouts(torch.as_tensor(theta))[:, 0]  # (N, T+1, 4)
    model = problem.model
    sim = model.observe(rollouts).reshape(*rollouts.shape[:2], 4, 3)
    real = model.observe(torch.as_tensor(problem.recording.states)).reshape(-1, 4, 3)
    return (sim - real).norm(dim=-1).mean((1, 2)).numpy()


@cached
def _phase_one(sizes: dict, seed: int) -> PhaseOne:
    s = BoxSizes(**sizes)
    with one_torch_thread():
        problem = box_problem(1, seed=seed)
        target = problem.target(s.windows, "constraint")
        settings = estimator_settings("CSVGD", _Run(s.scale, s.phase1_iterations, s.windows))
        estimator = make_estimator(
            "CSVGD", target, n_particles=s.phase1_particles, seed=seed, **settings.options
        )
        history = estimator.run(
            s.phase1_iterations, record_every=s.phase1_iterations, progress=False
        )
        x = torch.as_tensor(history.particles[-1])
        theta = target.parameters(x).numpy()
        clipped = np.clip(theta, problem.limits.lower, problem.limits.upper)
        physical = [t for t in clipped if _physical(problem.model, t)]
        if not physical:
            raise ValueError(
                "phase I ended without a physical particle (an inertia about the centre of "
                "mass that is positive definite); run more iterations"
            )
        single = problem.target()
        with torch.no_grad():
            loglik = single.log_likelihood(single.limits.normalise(np.stack(physical))).numpy()
        best = physical[int(np.nanargmax(loglik))]
        start = target.parameters(torch.as_tensor(history.particles[0])).numpy()
        start = np.stack([t for t in start if _physical(problem.model, t)])
        before = float(np.median(_point_errors(problem, start)))
        after = float(_point_errors(problem, best[None])[0])
    return PhaseOne(
        theta,
        dict(zip(problem.limits.names, (float(v) for v in best), strict=True)),
        before,
        after,
        float(history.seconds[-1]),
    )


@dataclass(frozen=True)
class _Run:
    """The run sizes that
    :func:`~physid.inference.chapters.inference_synthetic.estimator_settings` reads."""

    scale: str
    iterations: int
    windows: int


def identify_box(s: BoxSizes, seed: int = 0) -> PhaseOne:
    """Phase I: CSVGD on the empty box's recording (cached on disk)."""
    s = expect_sizes(s, BoxSizes)
    return _phase_one(asdict(s), check_seed("seed", seed))


@dataclass
class WeightRun:
    """One estimator's phase-II run: its final weight positions (N, 4), the time it took, the
    mean point error of its particles' rollouts (m) and ``trace``: at about twenty points of
    the run, ``"iterations"``, the share of particles in either mode (``"in_modes"``) and the
    medians of :func:`weight_summary` (``"balance"``, ``"reach"``), to show whether it has
    converged. A chain's particles are its samples so far."""

    estimator: str
    seconds: float
    theta: np.ndarray
    point_error: float
    diagnostics: dict = field(default_factory=dict)
    trace: dict = field(default_factory=dict)


@cached
def _phase_two(name: str, sizes: dict, box: dict, seed: int) -> WeightRun:
    s = BoxSizes(**sizes)
    iterations = {"NUTS": s.nuts_iterations, "SGLD": s.sgld_iterations}.get(name, s.iterations)
    settings = estimator_settings(name, _Run(s.scale, iterations, s.windows))
    options = dict(settings.options)
    if name == "NUTS":
        options.update(warmup_steps=s.nuts_warmup, max_tree_depth=s.nuts_depth)
    with one_torch_thread():
        problem = box_problem(2, box, seed)
        target = problem.target(settings.windows, **settings.target)
        estimator = make_estimator(name, target, n_particles=s.n_particles, seed=seed, **options)
        history = estimator.run(iterations, record_every=_trace_every(iterations), progress=False)
        snapshots = [
            target.parameters(torch.as_tensor(x)).numpy() for x in history.particles
        ]
        theta = snapshots[-1]
        clipped = np.clip(theta, problem.limits.lower, problem.limits.upper)
        error = float(np.nanmean(_point_errors(problem, clipped)))
    summaries = np.array([weight_summary(x) for x in snapshots])
    trace = {
        "iterations": np.array(history.iterations),
        "in_modes": np.array([sum(mode_shares(x)) for x in snapshots]),
        "balance": summaries[:, 0],
        "reach": summaries[:, 1],
    }
    return WeightRun(
        name, float(history.seconds[-1]), theta, error, estimator.diagnostics(), trace
    )


def _trace_every(iterations: int) -> int:
    """How often a phase-II run records its particles: about twenty times, and at least five
    times within the paper's run length, so that the trace shows where the paper stopped."""
    return max(1, min(iterations // 20, SIZES["paper"].iterations // 5))


def paper_stop(run: WeightRun) -> tuple[int, float, float]:
    """Where ``run``'s trace stands at the paper's phase-II run length (the recorded
    iteration nearest it): the iteration, the share of particles in either mode and the
    median ``|w1x|`` (m); against them, the trace's end shows what more iterations bought."""
    if not isinstance(run, WeightRun):
        raise TypeError(f"run must be a WeightRun, got {type(run).__name__}")
    if not run.trace:
        raise ValueError("run has no trace")
    iterations = np.asarray(run.trace["iterations"])
    k = int(np.argmin(np.abs(iterations - SIZES["paper"].iterations)))
    return int(iterations[k]), float(run.trace["in_modes"][k]), float(run.trace["reach"][k])


def locate_weights(
    s: BoxSizes,
    box: dict[str, float],
    estimators: tuple[str, ...] = ESTIMATORS,
    seed: int = 0,
    scheduler: object = None,
) -> list[WeightRun]:
    """Phase II: every estimator of ``estimators`` on the recording with the weights, with the
    empty box ``box`` (phase I's best), one job each, in order."""
    s = expect_sizes(s, BoxSizes)
    if not isinstance(box, dict):
        raise TypeError(f"box must be a dict of the box's parameters, got {box!r}")
    estimators = check_choices("estimators", estimators, ESTIMATORS)
    seed = check_seed("seed", seed)
    jobs = [{"name": e, "sizes": asdict(s), "box": dict(box), "seed": seed} for e in estimators]
    return run_jobs(_phase_two, jobs, s.n_jobs, scheduler, desc="shaken box")


def mode_shares(
    theta: np.ndarray, radius: float = MODE_RADIUS, reach: float = MODE_REACH
) -> tuple[float, float]:
    """The shares of particles ``theta`` (N, 4: ``w1x, w1y, w2x, w2y``) in each of the two
    symmetric modes: the box balanced (the two weights opposite each other through its
    centre, ``‖w1 + w2‖ ≤ radius``) with weight 1 more than ``reach`` to the ``+x`` side, and
    the same with it to the ``−x`` side (the swap). Balanced pairs closer to the centre (both
    weights at the centre among them) belong to neither mode."""
    theta = check_array("theta", theta, shape=(None, 4))
    radius = check_positive("radius", radius)
    reach = check_positive("reach", reach)
    balanced = np.linalg.norm(theta[:, :2] + theta[:, 2:], axis=1) <= radius
    right, left = balanced & (theta[:, 0] > reach), balanced & (theta[:, 0] < -reach)
    return float(right.mean()), float(left.mean())


def weight_summary(theta: np.ndarray) -> tuple[float, float]:
    """The medians over particles ``theta`` (N, 4) of ``‖w1 + w2‖`` (how far the pair is from
    balancing the box, m) and ``|w1x|`` (how far weight 1 is from the centre along ``x``, m):
    the two coordinates the modes are defined in (:func:`mode_shares`)."""
    theta = check_array("theta", theta, shape=(None, 4))
    balance = np.linalg.norm(theta[:, :2] + theta[:, 2:], axis=1)
    return float(np.median(balance)), float(np.median(np.abs(theta[:, 0])))


def at_limits(
    values: dict[str, float], limits: dict[str, tuple[float, float]], fraction: float = 0.01
) -> list[str]:
    """The names of ``values`` within ``fraction`` of their range of ``limits`` (name → (low,
    high)) from either end: parameters an estimate has pushed to a limit."""
    fraction = check_positive("fraction", fraction)
    unknown = [name for name in values if name not in limits]
    if unknown:
        raise ValueError(f"values name parameters without limits: {unknown}")
    near = []
    for name, value in values.items():
        low, high = limits[name]
        margin = fraction * (high - low)
        if value <= low + margin or value >= high - margin:
            near.append(name)
    return near
