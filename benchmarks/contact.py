"""Contact resolutions per second: the fast exact solver against cvxpylayers, in the same run.

A resolution is one sample's compression and restitution problems, forward and backward (the
gradient of the summed impulses with respect to every input). The problems are recorded
single-contact problems of the bouncing point masses (BP5, planar cone, CM) and of the
gyroscope (Gyro, second-order cone, CMr). cvxpylayers runs with the layers cached per contact
count, batched (one call per batch) and per sample (one call per problem, as in the authors'
code). torch runs on one thread: the problems are many small tensors.

How the measurement holds still
(:func:`physid.contact.chapters.contact_model_timing.time_resolutions`):

* every batch is a seeded random draw from the recorded problems, the same for all
  contenders (the fast solver's cost per call is set by the hardest problem of its batch, so
  batches cut in recording order differ in difficulty from one size to the next);
* the contenders are timed in turn, :data:`REPEAT` times after a warm-up call of each
  (:func:`physid.core.bench.interleaved`), so a slow spell of the machine hits them alike;
* a contender that takes less than half a second per call (the fast solver: tens of
  milliseconds) is called as many times as fit in half a second per timed window, so one
  interruption of the process cannot halve its measured speed (it did: a single 70 ms window
  made the per-repeat ratio at batch 200 range from 22 to 103 on a busy machine);
* speed-ups are ratios taken repeat by repeat; the table gives their median and spread, and
  the target is judged on the median.

Targets: at batch 200, at least 50 times faster than per-sample cvxpylayers on BP5 and on the
gyroscope's cone; a CM-CD-CLNN training step within 1.5 times the same step with its contacts
masked, on BP5 and the gyroscope.

The training-step rows (``contact_step.json``) time a step of CM-CD-CLNN (the loss of 4-step
rollouts of 25 chunks, its backward and the AdamW step; the validation loss is not in it)
against the same step with its contact resolution masked (:func:`masked`: the same model, the
same rollouts, every velocity left as the smooth step gives it): the contact layer's cost beside
the network, whose potential's double backward both pay. The target is judged on that ratio.
Beside it, a step of MLP-CD-CLNN as :func:`~physid.contact.training.train` takes it: a one-step
model, so its minibatch is the 100 consecutive pairs of the 25 chunks, one step each: the same
evaluations of the potential in 4 sequential calls instead of 16, which is why it is cheaper
than the masked step (until 2026-12-06 the target was judged against it). A fourth contender,
CM-CD-CLNN with its potential in float32 (``network_dtype="float32"``, the paper scale's; the
contact solve in float64), gives what the lower precision saves. Each contender trains one epoch
of a fresh model in turn, and the seconds per step of every epoch after the warm-up are compared
repeat by repeat.

The training-epoch row times one epoch of CM-CD-CLNN on BP5 (:func:`physid.contact.training.train`
with ``epochs=1``: AdamW steps on every minibatch, then the validation loss), from the same
freshly built model, against the same epoch with every contact problem solved by a CvxpyLayer
built per call and per sample (the authors' pattern: ``reference.layers_built_per_call`` and a
``ContactModel(solver="reference", batched_reference=False)`` put in the model's
``contact_model`` by the benchmark, as the models have no option for it). Both epochs must agree:
their training and validation losses are printed with their largest difference. The row has no
target any more: the network both epochs share bounds its ratio, and the training-step rows
judge the contact layer beside it.
"""

from __future__ import annotations

import argparse
import functools
import time
import warnings

import numpy as np
import torch

from physid.contact import datasets, reference, training
from physid.contact.chapters import contact_model as ex
from physid.contact.chapters import contact_model_timing as timing
from physid.contact.model import ContactModel
from physid.contact.models import MODELS
from physid.contact.tasks import make_task
from physid.core.bench import Target, Timing, interleaved, ratio, write_report

BATCHES = (1, 16, 64, 200, 256)
GYRO_BATCHES = (1, 16, 200)
TARGET_BATCH = 200
TARGET_SPEEDUP = 50.0
REPEAT = 5
#: Trajectories (train, validation, test) simulated to record the problems.
DATA = (160, 20, 20)
#: The training-epoch row: chunks (train, validation) and minibatch (no target: the network
#: both epochs share bounds the ratio, and the training-step rows judge the contact layer).
EPOCH_DATA = (128, 16)
EPOCH_BATCH = 32
#: The training-step rows: tasks, trajectories (train, validation), minibatch, and the target
#: on the ratio of a CM-CD-CLNN step to the same step with its contact resolution masked.
STEP_TASKS = ("BP5", "Gyro")
STEP_DATA = (100, 10)
STEP_BATCH = 25
STEP_TARGET = 1.5
#: The contenders of the training-step rows beside CM-CD-CLNN and MLP-CD-CLNN.
FLOAT32 = "CM-CD-CLNN, float32 potential"
MASKED = "CM-CD-CLNN, contacts masked"


def masked(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` (a contact network) with its contact step replaced by the identity: the same
    rollouts, potential and parameters, with no contact resolved (the denominator of the
    training-step target)."""
    model._contacts = lambda x, v, *rest: v
    return model


def step_timing(repeat: int) -> tuple[list[dict], list[Target]]:
    """Seconds per training step (forward, backward, AdamW; validation excluded) of
    CM-CD-CLNN, of the same with its contacts masked, of MLP-CD-CLNN and of CM-CD-CLNN with a
    float32 potential, in turn."""
    rows, targets = [], []
    for task in STEP_TASKS:
        row, target = _step_cost(task, repeat)
        rows.append(row)
        targets.append(target)
    return rows, targets


def _step_cost(task: str, repeat: int) -> tuple[dict, Target]:
    data = datasets.generate(task, *STEP_DATA, 0, seed=3)
    config = training.TrainConfig(epochs=1, batch_size=STEP_BATCH)
    steps: dict[str, list[float]] = {"CM-CD-CLNN": [], MASKED: [], "MLP-CD-CLNN": [],
                                     FLOAT32: []}

    def epoch(name: str) -> None:
        if name == FLOAT32:
            model = MODELS["CM-CD-CLNN"].build(make_task(task), 0, network_dtype="float32")
        elif name == MASKED:
            model = masked(training.build("CM-CD-CLNN", task, 0))
        else:
            model = training.build(name, task, 0)
        result = training.train(model, data, config)
        steps[name].append(result.seconds_per_iteration)

    interleaved({name: functools.partial(epoch, name) for name in steps}, repeat=repeat)
    cm, bare, mlp, narrow = (Timing(tuple(steps[name][1:])) for name in steps)  # after warm-up
    cost = ratio(cm, bare)
    beside_mlp = ratio(cm, mlp)
    gain = ratio(cm, narrow)
    row = {
        "task": task,
        "batch": STEP_BATCH,
        "CM-CD-CLNN step (ms)": 1e3 * cm.median,
        "contacts masked (ms)": 1e3 * bare.median,
        "CM / masked, median": cost.median,
        "CM / masked, spread": cost.spread,
        "MLP-CD-CLNN step, one-step pairs (ms)": 1e3 * mlp.median,
        "CM / MLP, median": beside_mlp.median,
        "CM / MLP, spread": beside_mlp.spread,
        "CM, float32 potential (ms)": 1e3 * narrow.median,
        "float64 / float32, median": gain.median,
        "float64 / float32, spread": gain.spread,
    }
    target = Target.from_timing(
        f"{task}-training-step-CM-over-masked", cost, STEP_TARGET, "x", higher_is_better=False
    )
    return row, target


def epoch_timing(repeat: int) -> list[dict]:
    """One training epoch of CM-CD-CLNN on BP5, fast solver against per-call cvxpylayers."""
    data = datasets.generate("BP5", *EPOCH_DATA, 0, seed=3)
    config = training.TrainConfig(epochs=1, batch_size=EPOCH_BATCH)
    results = {}

    def fast() -> None:
        model = training.build("CM-CD-CLNN", "BP5", 0)
        results["fast"] = training.train(model, data, config)

    def per_call() -> None:
        model = training.build("CM-CD-CLNN", "BP5", 0)
        model.contact_model = lambda: ContactModel(
            variant=model.variant,
            reg=model.contact.reg(),
            solver="reference",
            batched_reference=False,
        )
        with reference.layers_built_per_call():
            results["per call"] = training.train(model, data, config)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        timings = interleaved({"fast": fast, "per call": per_call}, repeat=repeat)
    a, b = results["fast"], results["per call"]
    loss_gap = max(
        float(np.abs(a.train_loss - b.train_loss).max()),
        float(np.abs(a.val_loss - b.val_loss).max()),
    )
    print(
        f"epoch losses: fast train {a.train_loss[0]:.12g} val {a.val_loss[0]:.12g}; per-call "
        f"cvxpylayers train {b.train_loss[0]:.12g} val {b.val_loss[0]:.12g}; largest "
        f"difference {loss_gap:.2g}; {a.solver_summary} / {b.solver_summary}"
    )
    speedup = ratio(timings["per call"], timings["fast"])
    row = {
        "problems": (
            f"CM-CD-CLNN epochs, BP5, {EPOCH_DATA[0]} chunks (+{EPOCH_DATA[1]} val); "
            "per sample = layer built per call"
        ),
        "batch": EPOCH_BATCH,
        "fast (1/s)": 1 / timings["fast"].median,
        "cvxpylayers batched (1/s)": float("nan"),
        "cvxpylayers per sample (1/s)": 1 / timings["per call"].median,
        "× per sample, median": speedup.median,
        "× per sample, spread": speedup.spread,
        "× batched, median": float("nan"),
        "× batched, spread": "",
    }
    print(
        f"epoch seconds: fast {timings['fast'].median:.3g} ({timings['fast'].spread}), "
        f"per-call cvxpylayers {timings['per call'].median:.3g} ({timings['per call'].spread})"
    )
    return [row]


def rows_for(label: str, timings: list[timing.BatchTiming]) -> list[dict]:
    return [{"problems": label, **row} for row in timing.timing_rows(timings)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="only batch 200 of each task, and the epoch row"
    )
    args = parser.parse_args()
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    start = time.perf_counter()
    batches = (TARGET_BATCH,) if args.quick else BATCHES
    gyro_batches = (TARGET_BATCH,) if args.quick else GYRO_BATCHES
    runs = ex.run_tasks(DATA, seed=0, names=("BP5", "Gyro"))
    bp5 = timing.time_resolutions(runs["BP5"], batches, repeat=REPEAT, seed=1)
    gyro = timing.time_resolutions(runs["Gyro"], gyro_batches, repeat=REPEAT, variant="CMr", seed=2)
    rows = rows_for("BP5, planar, CM", bp5) + rows_for("Gyro, cone, CMr", gyro)
    targets = []
    for label, timings in (("", bp5), ("gyroscope-", gyro)):
        at = next(t for t in timings if t.batch == TARGET_BATCH)
        targets.append(
            Target.from_timing(
                f"{label}fast-vs-per-sample-cvxpylayers-at-batch-{TARGET_BATCH}",
                at.speedup("cvxpylayers, per sample"),
                target=TARGET_SPEEDUP,
                unit="x",
            )
        )
    rows += epoch_timing(REPEAT)
    write_report("contact", rows, targets)
    write_report("contact_step", *step_timing(REPEAT))
    print(f"benchmark time: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
