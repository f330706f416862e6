"""The synthetic experiments of Part II, chapter 3, and their sizes.

* :func:`synthetic_problem`: a point-mass double pendulum whose two link lengths are drawn from a
  known, elongated 2-D Gaussian around (1.5 m, 2.0 m); the prior is U[0.5, 5] m on both.
* :func:`compare_estimators`: every estimator on it, through ``joblib`` (one job per estimator
  and seed), with the parameter KL, the trajectory MMD and the log-likelihood per snapshot;
  each runs as registered (:func:`estimator_settings`, :func:`physid.inference.base.register`).
* :func:`likelihood_landscape`: the log-likelihood over a grid of link lengths for single and
  multiple shooting.
* :func:`multimodal_experiment`: two references from two parameter settings; CSVGD with the
  product against the sum (mixture) likelihood (Fig. 6 of the paper).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

import numpy as np
import torch

from physid.core.scales import Sizes, SizeTable, expect_sizes
from physid.core.target import Limits
from physid.core.threads import one_torch_thread
from physid.core.validate import check_array, check_choice, check_count, check_positive, check_seed
from physid.inference.base import REGISTRY
from physid.inference.estimators import ESTIMATORS, make_estimator
from physid.inference.likelihood import TrajectoryLikelihood
from physid.inference.metrics import knn_kl, mmd
from physid.inference.pendulum import SIDEWAYS, DoublePendulum
from physid.inference.svgd import RBFKernel


@dataclass(frozen=True)
class SyntheticSizes(Sizes):
    """Run sizes of the chapter (see :data:`SIZES`); an estimator's own run length and
    options per scale are registered with it (:func:`estimator_settings`)."""

    scale: str
    n_particles: int
    iterations: int
    record_every: int
    n_references: int
    n_steps: int
    windows: int
    truth_samples: int
    multimodal_iterations: int
    multimodal_steps: int
    landscape_points: int
    seeds: tuple[int, ...] = (0,)
    n_jobs: int = 1

    def check(self) -> None:
        object.__setattr__(self, "seeds", _check_seeds(self.seeds))
        if self.n_steps % self.windows:
            raise ValueError(
                f"windows must divide n_steps = {self.n_steps}, got windows = {self.windows}"
            )
        if self.multimodal_steps % self.windows:
            raise ValueError(
                f"windows must divide multimodal_steps = {self.multimodal_steps}, "
                f"got windows = {self.windows}"
            )


def _check_seeds(seeds: Sequence[int]) -> tuple[int, ...]:
    if isinstance(seeds, str) or not isinstance(seeds, Sequence) or not seeds:
        raise ValueError(f"seeds must be a non-empty sequence of seeds, got {seeds!r}")
    return tuple(check_seed("seeds", seed) for seed in seeds)


def _check_jobs(n_jobs: int) -> int:
    """A joblib job count: a positive int, or -1 for every core."""
    if check_count("n_jobs", n_jobs, minimum=-1) == 0:
        raise ValueError(f"n_jobs must be a positive int or -1, got {n_jobs!r}")
    return int(n_jobs)


#: Sizes per scale. ``paper`` has 100 particles and 2,000 iterations as in the paper (NUTS'
#: and BayesSim's own run lengths are registered with them); ``default`` fits in minutes on
#: 2 cores.
SIZES = SizeTable(
    "inference_synthetic",
    quick=SyntheticSizes(
        scale="quick",
        n_particles=16,
        iterations=12,
        record_every=4,
        n_references=4,
        n_steps=60,
        windows=5,
        truth_samples=200,
        multimodal_iterations=12,
        multimodal_steps=60,
        landscape_points=12,
        n_jobs=1,
    ),
    default=SyntheticSizes(
        scale="default",
        n_particles=100,
        iterations=500,
        record_every=10,
        n_references=10,
        n_steps=400,
        windows=10,
        truth_samples=1000,
        multimodal_iterations=400,
        multimodal_steps=300,
        landscape_points=61,
        # Three seeds, as the paper scale: one seed's BayesSim KL moved from 0.33 to 2.29 when
        # its simulations changed by 1e-12 (a kernel's rounding; README, Results).
        seeds=(0, 1, 2),
        n_jobs=2,
    ),
    paper=SyntheticSizes(
        scale="paper",
        n_particles=100,
        iterations=2000,
        record_every=20,
        n_references=10,
        n_steps=400,
        windows=10,
        truth_samples=2000,
        multimodal_iterations=2000,
        multimodal_steps=300,
        landscape_points=101,
        seeds=(0, 1, 2),
        n_jobs=2,
    ),
)


#: The mean (m) of the Gaussian over the link lengths of the synthetic experiment. Its spread
#: along the major and minor axes and the major axis' direction follow, read off the paper's
#: figure (elongated, negatively correlated).
TRUTH_MEAN = (1.5, 2.0)
TRUTH_STD = (0.4, 0.1)
TRUTH_AXIS = (0.853, -0.521)
PRIOR = (0.5, 5.0)
SIGMA_OBS = 0.1
#: The two settings of the multimodal experiment (read off the paper's Fig. 6).
MODES = ((1.7, 1.5), (3.75, 3.9))
#: Final parameter KL of each estimator in the paper's synthetic experiment, read off its
#: convergence figure (approximate).
PAPER_KL: dict[str, float] = {"SVGD": 0.2, "Emcee": 1.5, "SGLD": 3.0, "NUTS": 3.0, "CEM": 14.0}
#: Masses (kg) of the synthetic pendulum's point masses.
POINT_MASSES = (1.0, 1.0)

#: The chapter's hyperparameters per estimator, in the chapter's order (a view of the registry,
#: :func:`physid.inference.base.register`; the run lengths: :func:`estimator_settings`).
OPTIONS = REGISTRY.view("options")


def truth_covariance() -> np.ndarray:
    u = np.asarray(TRUTH_AXIS) / np.linalg.norm(TRUTH_AXIS)
    v = np.array([-u[1], u[0]])
    return TRUTH_STD[0] ** 2 * np.outer(u, u) + TRUTH_STD[1] ** 2 * np.outer(v, v)


def point_mass_model(dt: float = 0.01, compiled: bool | None = None) -> DoublePendulum:
    """The synthetic pendulum: unit point masses at the link tips, no friction."""
    return DoublePendulum(
        ("l1", "l2"),
        dt=dt,
        point_mass=True,
        fixed={"m1": POINT_MASSES[0], "m2": POINT_MASSES[1], "d1": 0.0, "d2": 0.0},
        compiled=compiled,
    )


def energy_scale(model: DoublePendulum, theta: torch.Tensor) -> torch.Tensor:
    """``g (m1 l1 + m2 (l1 + l2))`` (J): how far the potential energy of the point-mass pendulum
    lies below that of the pivot when it hangs straight down, a physical energy scale (the total
    energy itself may be near zero, as it is for the sideways start)."""
    p = model.physical(model.check_theta(theta))
    return model.gravity * (p["m1"] * p["l1"] + p["m2"] * (p["l1"] + p["l2"]))


def energy_drift(model: DoublePendulum, theta: torch.Tensor, n_steps: int) -> float:
    """The largest change of the total energy over ``n_steps`` from the sideways start, as a
    fraction of :func:`energy_scale` (``max_t |E_t − E_0| / (g (m1 l1 + m2 (l1 + l2)))``)."""
    s0 = torch.tensor(SIDEWAYS, dtype=torch.float64)
    with torch.no_grad():
        states = torch.cat((s0[None], model.simulate(theta, s0, n_steps)))
        energy = model.energy(theta, states)
    return float((energy - energy[0]).abs().max() / energy_scale(model, theta))


def length_limits() -> Limits:
    return Limits(("l1", "l2"), np.array([PRIOR[0]] * 2), np.array([PRIOR[1]] * 2))


def simulate_references(model: DoublePendulum, theta: np.ndarray, n_steps: int) -> torch.Tensor:
    """Trajectories (R, T+1, 4) from the sideways start, one per row of ``theta``."""
    s0 = torch.tensor(SIDEWAYS, dtype=torch.float64)
    with torch.no_grad():
        states = model.simulate(torch.as_tensor(theta, dtype=torch.float64), s0, n_steps)
    return torch.cat((s0.expand(len(theta), 1, 4), states), 1)


@dataclass(frozen=True)
class SyntheticProblem:
    """The references and the ground-truth samples of the synthetic experiment."""

    model: DoublePendulum
    limits: Limits
    theta_refs: np.ndarray
    references: torch.Tensor
    truth: np.ndarray
    mean: np.ndarray
    cov: np.ndarray

    def target(
        self,
        windows: int = 1,
        defects: str = "likelihood",
        combine: str = "sum",
        references: torch.Tensor | None = None,
    ) -> TrajectoryLikelihood:
        refs = self.references if references is None else references
        return TrajectoryLikelihood(
            self.model,
            refs,
            self.limits,
            sigma_obs=SIGMA_OBS,
            combine=combine,
            shooting_windows=windows,
            defects=defects,
        )



def synthetic_problem(s: SyntheticSizes, seed: int = 0) -> SyntheticProblem:
    """Reference trajectories from ``n_references`` draws of the truth Gaussian."""
    s = expect_sizes(s, SyntheticSizes)
    rng = np.random.default_rng(check_seed("seed", seed))
    mean, cov = np.asarray(TRUTH_MEAN), truth_covariance()
    theta_refs = rng.multivariate_normal(mean, cov, s.n_references)
    truth = rng.multivariate_normal(mean, cov, s.truth_samples)
    model = point_mass_model()
    refs = simulate_references(model, theta_refs, s.n_steps)
    return SyntheticProblem(model, length_limits(), theta_refs, refs, truth, mean, cov)


@dataclass(frozen=True)
class EstimatorSettings:
    """How a chapter runs one estimator at some sizes (see :func:`estimator_settings`)."""

    iterations: int
    windows: int
    target: dict[str, object]
    options: dict[str, object]


#: The shooting an estimator runs with (:func:`estimator_settings`): ``"registered"`` (CSVGD
#: on multiple shooting, every other estimator on single shooting, as in the paper's Table I),
#: ``"single"`` or ``"multiple"`` (Table II).
SHOOTING = ("registered", "single", "multiple")


@runtime_checkable
class RunLength(Protocol):
    """What :func:`estimator_settings` reads of a chapter's sizes: the scale, the iterations of
    an estimator that registers none of its own, and the multiple-shooting windows."""

    @property
    def scale(self) -> str: ...

    @property
    def iterations(self) -> int: ...

    @property
    def windows(self) -> int: ...


def estimator_settings(
    name: str, s: RunLength, shooting: str = "registered"
) -> EstimatorSettings:
    """The iterations, shooting windows, target options and estimator options of ``name`` at
    sizes ``s`` (a :class:`RunLength`), from its registration
    (:data:`physid.inference.base.REGISTRY`).

    On multiple shooting (``s.windows`` windows) an estimator registered for it (CSVGD) holds
    the defects as constraints; every other estimator sees them through the Gaussian defect
    likelihood of Eq. (inf-ms), as the paper does for its Table II.
    """
    if not isinstance(s, RunLength):
        raise TypeError(f"s must be sizes with a scale, iterations and windows, got {s!r}")
    spec = REGISTRY.get(name, "name")
    shooting = check_choice("shooting", shooting, SHOOTING)
    scaled = spec.at(s.scale)
    iterations = s.iterations if scaled.iterations is None else scaled.iterations
    options = dict(scaled.options)
    multiple = spec.multiple_shooting if shooting == "registered" else shooting == "multiple"
    if not multiple:
        return EstimatorSettings(iterations, 1, {"defects": "likelihood"}, options)
    defects = "constraint" if spec.multiple_shooting else "likelihood"
    return EstimatorSettings(iterations, s.windows, {"defects": defects}, options)


@dataclass
class EstimatorRun:
    """One estimator's run: snapshots of its particles (physical units) and the metrics."""

    name: str
    seed: int
    iterations: np.ndarray
    seconds: np.ndarray
    theta: list[np.ndarray]
    kl: np.ndarray
    mmd: np.ndarray
    loglik: np.ndarray
    outside: np.ndarray
    extra: dict = field(default_factory=dict)

    @property
    def final_theta(self) -> np.ndarray:
        return self.theta[-1]

    def summary(self) -> dict:
        return {
            "estimator": self.name,
            "seed": self.seed,
            "iterations": int(self.iterations[-1]),
            "seconds": float(self.seconds[-1]),
            "parameter KL": float(self.kl[-1]),
            "MMD": float(self.mmd[-1]),
            "log-likelihood": float(self.loglik[-1]),
        }


def evaluate(problem: SyntheticProblem, theta: np.ndarray) -> tuple[float, float, float, float]:
    """Parameter KL(truth ‖ particles), trajectory MMD, mean log-likelihood, share outside."""
    theta = check_array("theta", theta, shape=(None, problem.limits.dim))
    target = problem.target()
    inside = problem.limits.contains(theta)
    outside = 1.0 - float(inside.mean())
    if len(theta) < 4:
        return math.nan, math.nan, math.nan, outside
    kl = knn_kl(problem.truth, theta)
    th = torch.as_tensor(np.clip(theta, problem.limits.lower, problem.limits.upper))
    rollouts = target.standardise(target.rollouts(th)[:, 0])
    good = torch.isfinite(rollouts).all(-1).all(-1)
    refs = target.standardise(problem.references)
    distance = mmd(rollouts[good].numpy(), refs.numpy()) if good.any() else math.nan
    loglik = target.mean_log_likelihood(th).mean().item()
    return kl, distance, loglik, outside


def run_estimator(
    name: str, s: SyntheticSizes, seed: int = 0, problem_seed: int = 0, progress: bool = False
) -> EstimatorRun:
    """Run one estimator on the synthetic problem and evaluate every snapshot (one thread)."""
    settings = estimator_settings(name, s)
    seed = check_seed("seed", seed)
    with one_torch_thread():
        problem = synthetic_problem(s, problem_seed)
        target = problem.target(windows=settings.windows, **settings.target)
        estimator = make_estimator(
            name, target, n_particles=s.n_particles, seed=seed, **settings.options
        )
        iterations = settings.iterations
        every = max(1, min(s.record_every, iterations // 10 or 1))
        history = estimator.run(iterations, record_every=every, progress=progress)
        thetas = [target.parameters(torch.as_tensor(p)).numpy() for p in history.particles]
        metrics = np.array([evaluate(problem, th) for th in thetas])
    return EstimatorRun(
        name,
        seed,
        np.array(history.iterations),
        np.array(history.seconds),
        thetas,
        metrics[:, 0],
        metrics[:, 1],
        metrics[:, 2],
        metrics[:, 3],
        estimator.diagnostics(),
    )


def compare_estimators(
    s: SyntheticSizes,
    names: tuple[str, ...],
    seeds: tuple[int, ...] | None = None,
    n_jobs: int = 1,
    problem_seed: int = 0,
) -> list[EstimatorRun]:
    """Every estimator in ``names`` for every seed, as independent ``joblib`` jobs.

    The jobs use the active joblib backend (local processes by default; a Dask or Ray backend
    runs them unchanged under ``joblib.parallel_backend``).
    """
    from joblib import Parallel, delayed

    s = expect_sizes(s, SyntheticSizes)
    if isinstance(names, str) or not names:
        raise ValueError(f"names must be a non-empty sequence of estimator names, got {names!r}")
    names = tuple(check_choice("names", name, tuple(ESTIMATORS)) for name in names)
    n_jobs = _check_jobs(n_jobs)
    problem_seed = check_seed("problem_seed", problem_seed)
    seeds = s.seeds if seeds is None else _check_seeds(seeds)
    jobs = [(name, seed) for seed in seeds for name in names]
    return Parallel(n_jobs=n_jobs)(
        delayed(run_estimator)(name, s, seed, problem_seed) for name, seed in jobs
    )


@dataclass(frozen=True)
class Landscape:
    """Log-likelihood over a grid of link lengths, per number of shooting windows."""

    l1: np.ndarray
    l2: np.ndarray
    truth: tuple[float, float]
    loglik: dict[int, np.ndarray]

    def local_maxima(self, windows: int) -> int:
        """Strict local maxima of the grid (8-neighbourhood, interior points)."""
        z = self.loglik[check_choice("windows", windows, tuple(self.loglik))]
        core = z[1:-1, 1:-1]
        is_max = np.ones_like(core, dtype=bool)
        for di in (-1, 0, 1):
            for dj in (-1, 0, 1):
                if di or dj:
                    is_max &= core > z[1 + di : z.shape[0] - 1 + di, 1 + dj : z.shape[1] - 1 + dj]
        return int(is_max.sum())


def likelihood_landscape(
    s: SyntheticSizes,
    windows: tuple[int, ...] = (1, 2, 10),
    truth: tuple[float, float] = TRUTH_MEAN,
) -> Landscape:
    """The log-likelihood of one reference from ``truth`` over a grid of the prior box.

    For multiple shooting the shooting states sit on the reference (the data), so the surface
    shows what the parameters alone do to the fit within each window.
    """
    s = expect_sizes(s, SyntheticSizes)
    if isinstance(windows, int) or not windows:
        raise ValueError(f"windows must be a non-empty sequence of window counts, got {windows!r}")
    windows = tuple(check_count("windows", w) for w in windows)
    truth = tuple(check_array("truth", truth, shape=(2,), positive=True))
    model = point_mass_model()
    limits = length_limits()
    ref = simulate_references(model, np.array([truth]), s.n_steps)
    grid = np.linspace(PRIOR[0], PRIOR[1], s.landscape_points)
    l1, l2 = np.meshgrid(grid, grid, indexing="ij")
    theta = torch.as_tensor(np.stack((l1.ravel(), l2.ravel()), 1))
    out = {}
    for w in windows:
        target = TrajectoryLikelihood(model, ref, limits, sigma_obs=SIGMA_OBS, shooting_windows=w)
        x = target.on_reference(limits.normalise(theta))
        values = []
        with torch.no_grad():
            for chunk in torch.split(x, 2048):
                values.append(target.log_likelihood(chunk))
        out[w] = (torch.cat(values).numpy() / (s.n_steps * 4)).reshape(l1.shape)
    return Landscape(grid, grid, truth, out)


@dataclass
class MultimodalResult:
    """CSVGD on two references from two settings, per likelihood, bandwidth and start."""

    modes: np.ndarray
    references: torch.Tensor
    runs: dict[str, EstimatorRun]
    radius: float

    def share_near(self, label: str) -> np.ndarray:
        """The share of the run's final particles within ``radius`` of each true mode."""
        theta = self.runs[check_choice("label", label, tuple(self.runs))].final_theta
        d = np.linalg.norm(theta[:, None] - self.modes[None], axis=-1)
        return (d < self.radius).mean(0)


@dataclass(frozen=True)
class MultimodalRun:
    """One CSVGD run of the multimodal experiment.

    ``start`` places the start shooting states: ``"rollout"`` on each particle's own rollout
    (with the target's spread), which favours no reference; ``"reference 0"`` on the first
    reference for every particle.
    """

    label: str
    combine: str
    bandwidth_scale: float
    start: str = "rollout"


#: The multimodal runs: the product and the sum likelihood with Liu & Wang's median bandwidth,
#: the sum with 0.1 × that bandwidth, all from a start that favours no mode; and the sum with
#: every particle's shooting states started on the first reference.
MULTIMODAL_RUNS: tuple[MultimodalRun, ...] = (
    MultimodalRun("product", "product", 1.0),
    MultimodalRun("sum", "sum", 1.0),
    MultimodalRun("sum, h × 0.1", "sum", 0.1),
    MultimodalRun("sum, started on reference 1", "sum", 1.0, "reference 0"),
)

def multimodal_target(s: SyntheticSizes, combine: str) -> TrajectoryLikelihood:
    """The two-reference target of the multimodal experiment (CSVGD's defect constraints)."""
    s = expect_sizes(s, SyntheticSizes)
    model = point_mass_model()
    refs = simulate_references(model, np.asarray(MODES), s.multimodal_steps)
    return TrajectoryLikelihood(
        model,
        refs,
        length_limits(),
        sigma_obs=SIGMA_OBS,
        combine=combine,
        shooting_windows=s.windows,
        defects="constraint",
    )


def _multimodal_run(run: MultimodalRun, s: SyntheticSizes, seed: int) -> EstimatorRun:
    with one_torch_thread():
        target = multimodal_target(s, run.combine)
        x0 = None
        if run.start != "rollout":
            z = target.initial(s.n_particles, seed)[:, : target.n_params]
            x0 = target.on_reference(z, int(run.start.split()[-1]))
        options = {**OPTIONS["CSVGD"], "kernel": RBFKernel(run.bandwidth_scale)}
        estimator = make_estimator(
            "CSVGD", target, n_particles=s.n_particles, seed=seed, x0=x0, **options
        )
        iterations = s.multimodal_iterations
        every = max(1, iterations // 20)
        history = estimator.run(iterations, record_every=every, progress=False)
        thetas = [target.parameters(torch.as_tensor(p)).numpy() for p in history.particles]
    nan = np.full(len(thetas), math.nan)
    return EstimatorRun(
        f"CSVGD ({run.label})",
        seed,
        np.array(history.iterations),
        np.array(history.seconds),
        thetas,
        nan,
        nan,
        nan,
        nan,
    )


def multimodal_experiment(
    s: SyntheticSizes,
    seed: int = 0,
    n_jobs: int = 1,
    radius: float = 0.4,
    runs: Sequence[MultimodalRun] = MULTIMODAL_RUNS,
) -> MultimodalResult:
    """CSVGD on the two references, one ``joblib`` job per run of ``runs`` (keyed by label)."""
    from joblib import Parallel, delayed

    s = expect_sizes(s, SyntheticSizes)
    seed = check_seed("seed", seed)
    n_jobs = _check_jobs(n_jobs)
    radius = check_positive("radius", radius)
    if not runs or not all(isinstance(r, MultimodalRun) for r in runs):
        raise ValueError(f"runs must be a non-empty sequence of MultimodalRun, got {runs!r}")
    for r in runs:
        check_choice("combine", r.combine, ("sum", "product"))
        check_positive("bandwidth_scale", r.bandwidth_scale)
        check_choice("start", r.start, ("rollout", "reference 0", "reference 1"))
    done = Parallel(n_jobs=n_jobs)(delayed(_multimodal_run)(r, s, seed) for r in runs)
    refs = multimodal_target(s, "sum").data
    labels = [r.label for r in runs]
    return MultimodalResult(np.asarray(MODES), refs, dict(zip(labels, done, strict=True)), radius)


def with_sizes(s: SyntheticSizes, **changes) -> SyntheticSizes:
    """``s`` with some fields replaced (for tests and what-ifs)."""
    return replace(s, **changes)
