"""Training and evaluation of the learned models of :data:`physid.contact.models.MODELS`.

* :func:`train`: the authors' training, the mean absolute error (L1) of the rollout from each
  chunk's first state over the whole chunk (positions and velocities, all L states), AdamW
  (lr 1e-3, weight decay 1e-4, batch 200), the best state by validation loss (their checkpoint
  selection); optionally a cosine decay of the learning rate (:func:`learning_rate`), the
  last state as the checkpoint, and a stop once the validation loss has plateaued
  (``patience``; the chapter's default rule). Models with ``one_step = True``
  (the baselines) train on the consecutive 1-step pairs cut from the chunks, as in the
  authors' code. A step whose gradient is not finite, or
  whose contact problem could not be solved, is skipped and counted.
* :func:`evaluate`: the paper's "traj. rel. error" (Fig. 3): the sum over the first 5 predicted
  steps of ‖ẑ_t - z_t‖ / ‖z_t‖ with z = (x, v), and the mean relative error over the first 50
  steps (Fig. 4), on the full test trajectories, averaged over trajectories with a 95%
  t-interval; and the true system's energy along the predicted and the true trajectories.
* :func:`fit`: one plain-data job (generate the data deterministically, train, evaluate) that
  returns plain numbers and arrays, for :func:`physid.core.sweeps.run_jobs` and the disk cache
  (:func:`fit_cached`).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import torch
from scipy import stats
from torch import Tensor, nn

from physid.contact import datasets
from physid.contact.datasets import ChunkSet, TaskData
from physid.contact.learned import NETWORK_DTYPES
from physid.contact.model import SolverLog
from physid.contact.models import MODELS, LearnedModel, build, family
from physid.contact.reference import ContactSolverError
from physid.contact.tasks import Task, make_task
from physid.core.progress import progress as progress_bar
from physid.core.sweeps import cached
from physid.core.validate import (
    check_choice,
    check_count,
    check_device,
    check_nonnegative,
    check_positive,
    check_seed,
)

__all__ = [
    "JOB_DEFAULTS",
    "TrainConfig",
    "TrainResult",
    "chunk_loss",
    "evaluate",
    "fit",
    "fit_cached",
    "CHECKPOINTS",
    "initial_parameters",
    "job_data",
    "learning_rate",
    "make_job",
    "planned_steps",
    "plateaued",
    "restore",
    "train",
]


# ---------------------------------------------------------------------------------------------
# Training

#: How :func:`train` chooses the state it returns: ``"best"``, the lowest validation loss over
#: the epochs (the authors' rule); ``"last"``, the state after the last epoch.
CHECKPOINTS = ("best", "last")


@dataclass(frozen=True)
class TrainConfig:
    """Training settings (the authors' defaults, except the number of epochs).

    Attributes:
        epochs: passes over the training chunks (the authors ran 1000).
        batch_size: chunks per minibatch (a one-step model takes those chunks' consecutive
            pairs, so every model takes the same number of steps per epoch).
        lr: AdamW learning rate (the first step's, under a schedule).
        lr_final: ``None`` for a constant rate (the authors'), else the rate of the last step
            of a cosine decay from ``lr`` (:func:`learning_rate`).
        weight_decay: AdamW weight decay.
        checkpoint: the state returned, one of :data:`CHECKPOINTS`.
        seed: seed of the minibatch shuffling.
        patience: ``None`` to train every epoch, else the plateau rule: training stops after
            ``patience`` epochs in a row in which the validation loss did not fall below
            ``1 − min_improvement`` times the loss of the last epoch that did
            (:func:`plateaued`). The learning-rate schedule keeps its length
            (``epochs``), so a run that stops early stops where its rate was.
        min_improvement: the relative fall of the validation loss that counts as progress
            for ``patience``.
    """

    epochs: int = 10
    batch_size: int = 200
    lr: float = 1e-3
    lr_final: float | None = None
    weight_decay: float = 1e-4
    checkpoint: str = "best"
    seed: int = 0
    patience: int | None = None
    min_improvement: float = 0.01

    def __post_init__(self) -> None:
        object.__setattr__(self, "epochs", check_count("epochs", self.epochs))
        object.__setattr__(self, "batch_size", check_count("batch_size", self.batch_size))
        object.__setattr__(self, "lr", check_positive("lr", self.lr))
        if self.lr_final is not None:
            object.__setattr__(self, "lr_final", check_positive("lr_final", self.lr_final))
            if self.lr_final > self.lr:
                raise ValueError(
                    f"lr_final must not exceed lr ({self.lr:g}), got {self.lr_final!r}"
                )
        wd = check_nonnegative("weight_decay", self.weight_decay)
        object.__setattr__(self, "weight_decay", wd)
        check_choice("checkpoint", self.checkpoint, CHECKPOINTS)
        object.__setattr__(self, "seed", check_seed("seed", self.seed))
        if self.patience is not None:
            object.__setattr__(self, "patience", check_count("patience", self.patience))
        gain = check_nonnegative("min_improvement", self.min_improvement)
        if gain >= 1:
            raise ValueError(f"min_improvement must be below 1, got {self.min_improvement!r}")
        object.__setattr__(self, "min_improvement", gain)


def plateaued(val_loss: Sequence[float], patience: int, min_improvement: float = 0.01) -> bool:
    """The plateau rule of :class:`TrainConfig`: whether the last ``patience`` of the
    validation losses ``val_loss`` (one per epoch so far) all failed to fall below
    ``(1 − min_improvement)·ref``, where ``ref`` is the loss of the last epoch that made
    progress, that is fell below ``(1 − min_improvement)`` times the ``ref`` before it (the
    first finite loss does; a non-finite loss never does)."""
    patience = check_count("patience", patience)
    ref, since = math.inf, 0
    for value in val_loss:
        if math.isfinite(value) and value < (1.0 - min_improvement) * ref:
            ref, since = float(value), 0
        else:
            since += 1
    return since >= patience


def learning_rate(lr: float, lr_final: float | None, step: int, steps: int) -> float:
    """The learning rate of optimiser step ``step`` (0-based) of ``steps``: ``lr`` throughout
    when ``lr_final`` is ``None``, else the cosine decay

        η_k = η_T + ½ (η_0 − η_T) (1 + cos(π k / (T − 1))),   k = 0, …, T − 1,

    from ``η_0 = lr`` at the first step to ``η_T = lr_final`` at the last (Loshchilov & Hutter's
    schedule without restarts). Its mean over the steps is ``(lr + lr_final) / 2``."""
    lr = check_positive("lr", lr)
    steps = check_count("steps", steps)
    step = check_count("step", step, minimum=0)
    if step >= steps:
        raise ValueError(f"step must be below steps ({steps}), got {step!r}")
    if lr_final is None or steps == 1:
        return lr
    lr_final = check_positive("lr_final", lr_final)
    return lr_final + 0.5 * (lr - lr_final) * (1.0 + math.cos(math.pi * step / (steps - 1)))


@dataclass
class TrainResult:
    """What :func:`train` returns.

    Attributes:
        best_state: the state chosen by the config's ``checkpoint`` rule (also loaded into the
            model): the lowest validation loss, or the last epoch's.
        train_loss: ``(epochs,)`` mean training loss of each epoch trained (over the steps
            taken; fewer than ``config.epochs`` where the plateau rule stopped training).
        val_loss: ``(epochs,)`` validation loss after each epoch trained.
        best_epoch: the epoch (1-based) of ``best_state``.
        skipped_steps: optimiser steps skipped (non-finite loss or gradient, or an unsolved
            contact problem).
        solver_errors: of those, the steps skipped because a contact problem was not solved.
        steps: optimiser steps attempted.
        seconds_per_iteration: mean wall time of one training step (forward, backward, update).
        solver: the contact solver counts over training and validation (a dict).
        solver_summary: the same as one line.
        learned: the model's learned physical parameters after loading ``best_state``.
        trace: the learned physical parameters after each epoch, stacked: for every entry of
            ``learned`` an array whose first axis is the epoch (empty for a model that learns
            none).
    """

    best_state: dict[str, Tensor]
    train_loss: np.ndarray
    val_loss: np.ndarray
    best_epoch: int
    skipped_steps: int
    solver_errors: int
    steps: int
    seconds_per_iteration: float
    solver: dict[str, Any]
    solver_summary: str
    learned: dict[str, Any]
    trace: dict[str, np.ndarray]


def _check_model(model: Any) -> nn.Module:
    if not (isinstance(model, nn.Module) and isinstance(model, LearnedModel)):
        raise TypeError(
            f"model must be an nn.Module and a LearnedModel, got {type(model).__name__}"
        )
    return model


def _check_data(model: nn.Module, data: Any) -> TaskData:
    if not isinstance(data, TaskData):
        raise TypeError(f"data must be a TaskData, got {type(data).__name__}")
    if model.task.name != data.task:
        raise ValueError(
            f"data is for task {data.task!r}, but the model is for {model.task.name!r}"
        )
    return data


def _pairs(chunks: ChunkSet) -> tuple[Tensor, Tensor]:
    """Consecutive 1-step pairs ``(n (L-1), 2, N)`` of the chunks."""
    x = torch.stack([chunks.x[:, :-1], chunks.x[:, 1:]], 2).flatten(0, 1)
    v = torch.stack([chunks.v[:, :-1], chunks.v[:, 1:]], 2).flatten(0, 1)
    return x, v


def _training_states(model: nn.Module, chunks: ChunkSet) -> tuple[Tensor, Tensor]:
    return _pairs(chunks) if model.one_step else (chunks.x, chunks.v)


def chunk_loss(model: nn.Module, x: Tensor, v: Tensor) -> Tensor:
    """The L1 loss: mean ``|ẑ - z|`` over all states (the first one included, as in the
    authors' code), coordinates, positions and velocities of the rollout from ``(x, v)[:, 0]``.

    Args:
        model: a model with ``rollout``.
        x: ``(B, L, N)`` observed positions.
        v: ``(B, L, N)`` observed velocities.
    """
    xs, vs = model.rollout(x[:, 0], v[:, 0], x.shape[1] - 1)
    return 0.5 * ((xs - x).abs().mean() + (vs - v).abs().mean())


def _mean_loss(model: nn.Module, x: Tensor, v: Tensor, batch_size: int) -> float:
    """The loss over all of ``(x, v)`` in batches, without gradients (NaN if it fails)."""
    total, count = 0.0, 0
    with torch.no_grad():
        for lo in range(0, x.shape[0], batch_size):
            xb, vb = x[lo : lo + batch_size], v[lo : lo + batch_size]
            try:
                loss = float(chunk_loss(model, xb, vb))
            except ContactSolverError:
                return math.nan
            total += loss * xb.shape[0]
            count += xb.shape[0]
    return total / count if count else math.nan


def _grads_finite(model: nn.Module) -> bool:
    return all(bool(torch.isfinite(p.grad).all()) for p in model.parameters() if p.grad is not None)


def _log_dict(log: SolverLog) -> dict[str, Any]:
    return {
        "fast_exact": log.fast_exact,
        "fast_enumerated": log.fast_enumerated,
        "fast_unpolished": log.fast_unpolished,
        "fallbacks": log.fallbacks,
        "reference": log.reference,
        "lcp": log.lcp,
        "problems": log.problems,
        "contact_counts": dict(sorted(log.contact_counts.items())),
    }


def _learned(model: nn.Module) -> dict[str, Any]:
    return dict(model.learned_parameters())


def train(
    model: nn.Module, data: TaskData, config: TrainConfig, progress: bool = False
) -> TrainResult:
    """Train ``model`` on ``data.train``, with the validation loss on ``data.val`` after every
    epoch.

    Each epoch shuffles the training chunks (a generator seeded from ``config.seed`` and the
    epoch), takes AdamW steps on minibatches of ``config.batch_size`` at the rate of
    :func:`learning_rate`, and computes the validation loss; the state chosen by
    ``config.checkpoint`` (the lowest validation loss, or the last) is loaded into the model at
    the end. With ``config.patience``, training ends after the first epoch at which the
    validation loss has plateaued (:func:`plateaued`); the losses and the trace then hold the
    epochs trained. A step whose loss or gradient is not finite (or whose contact problem
    raised :class:`~physid.contact.reference.ContactSolverError`) changes nothing and is
    counted in ``skipped_steps``. The model's ``log`` is reset first, so the solver
    counts are those of this training.

    Raises:
        ValueError: if there are no training or no validation chunks, or the data's task is
            not the model's.
    """
    model = _check_model(model)
    data = _check_data(model, data)
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    if len(data.train) == 0:
        raise ValueError("data has no training chunks (n_train = 0)")
    if len(data.val) == 0:
        raise ValueError("data has no validation chunks (n_val = 0) to choose the best state on")
    model.log = SolverLog()
    x_train, v_train = _training_states(model, data.train)
    x_val, v_val = _training_states(model, data.val)
    # A minibatch holds the same number of chunks for every model: a one-step model takes
    # their consecutive pairs, so that all models take the same number of steps per epoch.
    batch = config.batch_size * (x_train.shape[0] // len(data.train))
    params = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    n = x_train.shape[0]
    total_steps = config.epochs * math.ceil(n / batch)
    train_loss = np.full(config.epochs, np.nan)
    val_loss = np.full(config.epochs, np.nan)
    best_state: dict[str, Tensor] | None = None
    best_epoch, best_val = 0, math.inf
    skipped = solver_errors = steps = 0
    step_seconds = 0.0
    trace: list[dict[str, Any]] = []
    bar = progress_bar(range(config.epochs), desc=f"training on {data.task}", disable=not progress)
    for epoch in bar:
        model.train()
        generator = torch.Generator().manual_seed(config.seed * 100_003 + epoch)
        order = torch.randperm(n, generator=generator).to(x_train.device)
        losses, weights = [], []
        for lo in range(0, n, batch):
            index = order[lo : lo + batch]
            start = time.perf_counter()
            for group in optimiser.param_groups:
                group["lr"] = learning_rate(config.lr, config.lr_final, steps, total_steps)
            steps += 1
            optimiser.zero_grad(set_to_none=True)
            try:
                loss = chunk_loss(model, x_train[index], v_train[index])
            except ContactSolverError:
                skipped += 1
                solver_errors += 1
                continue
            if not bool(torch.isfinite(loss)):
                skipped += 1
                continue
            loss.backward()
            if not _grads_finite(model):
                optimiser.zero_grad(set_to_none=True)
                skipped += 1
                continue
            optimiser.step()
            step_seconds += time.perf_counter() - start
            losses.append(float(loss.detach()))
            weights.append(len(index))
        if losses:
            train_loss[epoch] = float(np.average(losses, weights=weights))
        model.eval()
        val_loss[epoch] = _mean_loss(model, x_val, v_val, batch)
        trace.append(_plain(_learned(model)))
        stop = config.patience is not None and plateaued(
            val_loss[: epoch + 1], config.patience, config.min_improvement)
        last = epoch + 1 == config.epochs or stop
        better = math.isfinite(val_loss[epoch]) and val_loss[epoch] < best_val
        if (config.checkpoint == "best" and better) or (config.checkpoint == "last" and last):
            best_val, best_epoch = float(val_loss[epoch]), epoch + 1
            best_state = {k: t.detach().clone() for k, t in model.state_dict().items()}
        bar.set_postfix(train=f"{train_loss[epoch]:.3g}", val=f"{val_loss[epoch]:.3g}")
        if stop:
            break
    run = len(trace)  # the epochs trained
    train_loss, val_loss = train_loss[:run], val_loss[:run]
    if best_state is None:  # no finite validation loss: keep the last state
        best_state = copy.deepcopy(model.state_dict())
    model.load_state_dict(best_state)
    log = model.log
    taken = steps - skipped
    return TrainResult(
        best_state=best_state,
        train_loss=train_loss,
        val_loss=val_loss,
        best_epoch=best_epoch,
        skipped_steps=skipped,
        solver_errors=solver_errors,
        steps=steps,
        seconds_per_iteration=step_seconds / taken if taken else math.nan,
        solver=_log_dict(log),
        solver_summary=log.summary(),
        learned=_learned(model),
        trace={key: np.stack([np.asarray(t[key], dtype=float) for t in trace])
               for key in (trace[0] if trace else {})},
    )


# ---------------------------------------------------------------------------------------------
# Evaluation

#: Predicted steps summed in the paper's "traj. rel. error" (Fig. 3).
ERROR_STEPS = 5
#: Predicted steps averaged in the long-horizon relative error (Fig. 4).
LONG_STEPS = 50
#: The longest evaluated rollout.
EVAL_STEPS = 100


def _mean_ci(values: np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its 95% t-interval (inf if any value is)."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    if not np.isfinite(values).all():
        return math.inf, math.inf
    mean = float(values.mean())
    if n == 1:
        return mean, math.nan
    half = float(stats.t.ppf(0.975, n - 1) * values.std(ddof=1) / math.sqrt(n))
    return mean, half


def evaluate(model: nn.Module, data: TaskData) -> dict[str, Any]:
    """Errors and energies of ``model`` on the full test trajectories of ``data``.

    The model rolls out from each test trajectory's first state over
    ``min(100, T)`` steps (T = the trajectory's length, 20 for the rope). With ``z = (x, v)``
    and ``r_t = ‖ẑ_t - z_t‖ / ‖z_t‖``:

    * ``traj_rel_error``: the sum of r_t over the first 5 predicted steps (the paper's
      "traj. rel. error", Fig. 3), mean over trajectories and ``..._ci`` the half-width of its
      95% t-interval; ``traj_rel_errors`` per trajectory;
    * ``rel_error_50``: the mean of r_t over the first 50 predicted steps (Fig. 4; all of
      them on shorter trajectories), likewise;
    * ``rel_error_t``: ``(T',)`` the mean of r_t over trajectories, per step (t = 0 … T');
    * ``energy_pred`` and ``energy_true``: ``(n_test, T' + 1)`` the true system's energy
      (:meth:`~physid.contact.system.ContactSystem.energy`) along the predicted and the true
      trajectories;
    * ``diverged``: trajectories whose rollout stopped being finite; their errors are inf
      (so the means are inf), never dropped.

    Everything is returned as plain floats and numpy arrays.
    """
    model = _check_model(model)
    data = _check_data(model, data)
    n_test, length = data.test_x.shape[:2]
    if n_test == 0:
        raise ValueError("data has no test trajectories (n_test = 0)")
    steps = min(EVAL_STEPS, length - 1)
    if steps < 1:
        raise ValueError(f"the test trajectories have {length} state(s); at least 2 are needed")
    system = model.task.system
    x_true, v_true = data.test_x[:, : steps + 1], data.test_v[:, : steps + 1]
    model.eval()
    with torch.no_grad():
        xs, vs = model.rollout(x_true[:, 0], v_true[:, 0], steps)
        z_hat = torch.cat([xs, vs], -1)
        z = torch.cat([x_true, v_true], -1)
        finite = torch.isfinite(z_hat).flatten(1).all(1)
        rel = ((z_hat - z).norm(dim=-1) / z.norm(dim=-1)).cpu().numpy()
        rel[~finite.cpu().numpy()] = np.inf
        energy_pred = system.energy(xs.flatten(0, 1), vs.flatten(0, 1)).reshape(n_test, -1)
        energy_true = system.energy(x_true.flatten(0, 1), v_true.flatten(0, 1))
        energy_true = energy_true.reshape(n_test, -1)
    per_traj = rel[:, 1 : ERROR_STEPS + 1].sum(1)
    per_traj_50 = rel[:, 1 : LONG_STEPS + 1].mean(1)
    mean, half = _mean_ci(per_traj)
    mean50, half50 = _mean_ci(per_traj_50)
    return {
        "steps": steps,
        "traj_rel_error": mean,
        "traj_rel_error_ci": half,
        "traj_rel_errors": per_traj,
        "rel_error_50": mean50,
        "rel_error_50_ci": half50,
        "rel_errors_50": per_traj_50,
        "rel_error_t": rel.mean(0),
        "energy_pred": energy_pred.cpu().numpy(),
        "energy_true": energy_true.cpu().numpy(),
        "diverged": int((~finite).sum()),
        "n_test": n_test,
    }


# ---------------------------------------------------------------------------------------------
# Jobs

#: Every key of a job and its default (``task`` and ``model`` have none).
JOB_DEFAULTS: dict[str, Any] = {
    "task": None,
    "model": None,
    "n_train": 800,
    "n_val": 100,
    "n_test": 100,
    "data_seed": 0,
    "data_model": "CM",
    "noise": 0.0,
    "model_seed": 0,
    "learn_reg": False,
    "network_dtype": "float64",
    "device": "cpu",
    **{f.name: f.default for f in fields(TrainConfig)},
}


def make_job(**kwargs: Any) -> dict[str, Any]:
    """A complete, validated job: :data:`JOB_DEFAULTS` updated by ``kwargs`` (plain data)."""
    unknown = sorted(set(kwargs) - set(JOB_DEFAULTS))
    if unknown:
        raise ValueError(f"job has unknown keys {unknown}; known: {sorted(JOB_DEFAULTS)}")
    job = {**JOB_DEFAULTS, **kwargs}
    if not isinstance(job["task"], str):
        raise TypeError(f"task must be a task name, got {job['task']!r}")
    make_task(job["task"])  # a name of TASK_NAMES or "Rope<n>"
    MODELS.check(job["model"], "model")
    for key in ("n_train", "n_val"):
        job[key] = check_count(key, job[key], minimum=1)
    job["n_test"] = check_count("n_test", job["n_test"], minimum=0)
    job["data_seed"] = check_seed("data_seed", job["data_seed"])
    job["model_seed"] = check_seed("model_seed", job["model_seed"])
    check_choice("data_model", job["data_model"], tuple(datasets.DATA_MODELS))
    job["noise"] = check_nonnegative("noise", job["noise"])
    job["device"] = check_device("device", job["device"])
    if not isinstance(job["learn_reg"], bool):
        raise TypeError(f"learn_reg must be True or False, got {job['learn_reg']!r}")
    if job["learn_reg"] and not MODELS[job["model"]].learns_reg:
        raise ValueError(
            f"learn_reg needs a CMr model "
            f"({', '.join(m for m, s in MODELS.items() if s.learns_reg)}), got {job['model']!r}"
        )
    check_choice("network_dtype", job["network_dtype"], tuple(NETWORK_DTYPES))
    if job["network_dtype"] != "float64" and MODELS[job["model"]].family != "contact":
        raise ValueError(
            f"network_dtype {job['network_dtype']!r} is for the contact networks "
            f"({', '.join(family('contact'))}), got model {job['model']!r}"
        )
    config = _config(job)
    job.update(asdict(config))
    return job


def planned_steps(job: Mapping[str, Any]) -> int:
    """The optimiser steps a completed job's schedule is planned for: ``epochs`` passes of
    ``ceil(n_train / batch_size)`` minibatches (:func:`train` takes fewer where the plateau
    rule stops it, as its result's ``steps`` says)."""
    return int(job["epochs"]) * math.ceil(int(job["n_train"]) / int(job["batch_size"]))


def _config(job: Mapping[str, Any]) -> TrainConfig:
    return TrainConfig(**{f.name: job[f.name] for f in fields(TrainConfig)})


def _plain(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def fit(job: Mapping[str, Any]) -> dict[str, Any]:
    """Generate the data of ``job``, train its model, evaluate it; plain numbers and arrays.

    ``job`` holds plain data (see :func:`make_job` and :data:`JOB_DEFAULTS`): ``task``, ``model`` (a
    key of :data:`~physid.contact.models.MODELS`), ``n_train``, ``n_val``, ``n_test``,
    ``data_seed``, ``data_model`` (``"CM"`` or ``"LCP"``), ``noise`` (standard deviation of the
    observation noise, seeded by ``data_seed + 2``), ``model_seed``, ``learn_reg`` (learn ε of a CMr
    model, softplus-parametrised from 0.01), ``network_dtype`` (the contact networks'
    potential in ``"float64"`` or ``"float32"``, :class:`~physid.contact.learned.Potential`),
    ``device`` (where the model trains: ``"cpu"``,
    ``"cuda"``, or ``"auto"``, the GPU when torch sees one; the data are generated on the CPU
    and moved there) and the :class:`TrainConfig` fields.
    The same job gives the same numbers (on the same machine and thread count), except the
    timing ``seconds_per_iteration``.

    Run many through :func:`physid.core.sweeps.run_jobs` as ``run_jobs(fit, [{"job": j}, …])``,
    or cache them with :func:`fit_cached`.
    """
    if not isinstance(job, Mapping):
        raise TypeError(f"job must be a dict of plain data, got {type(job).__name__}")
    job = make_job(**job)
    task = make_task(job["task"], device=job["device"])
    keys = ("task", "n_train", "n_val", "n_test", "data_seed", "data_model", "noise")
    data = job_data(**{k: job[k] for k in keys}).to(job["device"])
    model = _job_model(job, task)
    result = train(model, data, _config(job))
    out: dict[str, Any] = {
        "job": dict(job),
        "train_loss": result.train_loss,
        "val_loss": result.val_loss,
        "best_epoch": result.best_epoch,
        "skipped_steps": result.skipped_steps,
        "solver_errors": result.solver_errors,
        "steps": result.steps,
        "seconds_per_iteration": result.seconds_per_iteration,
        "solver": result.solver,
        "solver_summary": result.solver_summary,
        "learned": _plain(result.learned),
        "trace": result.trace,
        "train_collision_fraction": data.train.collision_fraction,
        "trajectories_with_collision": data.trajectories_with_collision,
        "state": _plain(result.best_state),
    }
    out["evaluation"] = evaluate(model, data) if job["n_test"] > 0 else None
    return out


def job_data(
    task: str,
    n_train: int,
    n_val: int,
    n_test: int,
    data_seed: int,
    data_model: str = "CM",
    noise: float = 0.0,
) -> datasets.TaskData:
    """The data set of a job (:func:`physid.contact.datasets.generate`, then Gaussian noise of
    standard deviation ``noise`` seeded by ``data_seed + 2``), cached on disk by these plain
    arguments (and the library's code, :func:`physid.core.sweeps.cached`), so the models of one
    task share one simulation."""
    return _task_data(task, n_train, n_val, n_test, data_seed, data_model, noise)


@cached
def _task_data(
    task: str,
    n_train: int,
    n_val: int,
    n_test: int,
    data_seed: int,
    data_model: str,
    noise: float,
) -> datasets.TaskData:
    data = datasets.generate(make_task(task), n_train, n_val, n_test, data_seed, model=data_model)
    if noise > 0:
        data = datasets.add_noise(data, noise, seed=data_seed + 2)
    return data


@cached
def _fit_job(job: dict[str, Any]) -> dict[str, Any]:
    """:func:`fit` keyed by the plain job (never by tensors)."""
    return fit(job)


def fit_cached(job: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`fit` through the disk cache (:func:`physid.core.sweeps.cached`), keyed by the
    completed job, the library's code and the package versions."""
    if not isinstance(job, Mapping):
        raise TypeError(f"job must be a dict of plain data, got {type(job).__name__}")
    return _fit_job(make_job(**job))


def _job_model(job: Mapping[str, Any], task: Task) -> nn.Module:
    """The untrained model of a completed job."""
    options = {key: job[key] for key, plain in (("learn_reg", False),
                                               ("network_dtype", "float64"))
               if job[key] != plain}
    if options:
        return MODELS[job["model"]].build(task, job["model_seed"], **options)
    return build(job["model"], task, job["model_seed"])


def initial_parameters(job: Mapping[str, Any]) -> dict:
    """The learned parameters of ``job``'s model before training (its seeded start), as
    :func:`fit` reports the trained ones under ``"learned"``: where training started from."""
    if not isinstance(job, Mapping):
        raise TypeError(f"job must be a dict of plain data, got {type(job).__name__}")
    job = make_job(**{**job, "device": "cpu"})
    return _plain(_learned(_job_model(job, make_task(job["task"]))))


def restore(result: Mapping[str, Any]) -> nn.Module:
    """The trained model of a :func:`fit` result: built from its job and loaded with its best
    state, ready for its ``rollout``, on the CPU wherever it was trained."""
    if not isinstance(result, Mapping) or "job" not in result or "state" not in result:
        raise ValueError("result must be a fit() result with 'job' and 'state'")
    job = make_job(**{**result["job"], "device": "cpu"})
    model = _job_model(job, make_task(job["task"]))
    state = {k: torch.as_tensor(np.asarray(v)) for k, v in result["state"].items()}
    model.load_state_dict(state)
    model.eval()
    return model
