"""Contact resolutions per second: the fast exact solver against cvxpylayers, in the same run.

A resolution is one sample's compression and restitution problems, forward and backward (the
gradient of the summed impulses with respect to every input). The problems are recorded
single-contact problems of the bouncing point masses (BP5, planar cone, CM) and of the
gyroscope (Gyro, second-order cone, CMr). cvxpylayers runs with the layers cached per contact
count, batched (one call per batch) and per sample (one call per problem, as in the authors'
code). torch runs on one thread: the problems are many small tensors.

How the measurement holds still (:func:`physid.contact.experiments.time_resolutions`):

* every batch is a seeded random draw from the recorded problems, the same for all
  contenders (the fast solver's cost per call is set by the hardest problem of its batch, so
  batches cut in recording order differ in difficulty from one size to the next);
* the contenders are timed in turn, :data:`REPEAT` times after a warm-up call of each
  (:func:`physid.bench.interleaved`), so a slow spell of the machine hits them alike;
* a contender that takes less than half a second per call (the fast solver: tens of
  milliseconds) is called as many times as fit in half a second per timed window, so one
  interruption of the process cannot halve its measured speed (it did: a single 70 ms window
  made the per-repeat ratio at batch 200 range from 22 to 103 on a busy machine);
* speed-ups are ratios taken repeat by repeat; the table gives their median and spread, and
  the target is judged on the median.

Target: at batch 200, at least 50 times faster than per-sample cvxpylayers on BP5.
"""

from __future__ import annotations

import time

import torch

from physid.bench import Target, write_report
from physid.contact import experiments as ex

BATCHES = (1, 16, 64, 200, 256)
GYRO_BATCHES = (1, 16, 200)
TARGET_BATCH = 200
TARGET_SPEEDUP = 50.0
REPEAT = 5
#: Trajectories (train, validation, test) simulated to record the problems.
DATA = (160, 20, 20)


def rows_for(label: str, timings: list[ex.BatchTiming]) -> list[dict]:
    return [{"problems": label, **row} for row in ex.timing_rows(timings)]


def main() -> None:
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    start = time.perf_counter()
    runs = ex.run_tasks(DATA, seed=0, names=("BP5", "Gyro"))
    bp5 = ex.time_resolutions(runs["BP5"], BATCHES, repeat=REPEAT, seed=1)
    gyro = ex.time_resolutions(runs["Gyro"], GYRO_BATCHES, repeat=REPEAT, variant="CMr", seed=2)
    rows = rows_for("BP5, planar, CM", bp5) + rows_for("Gyro, cone, CMr", gyro)
    at = next(t for t in bp5 if t.batch == TARGET_BATCH)
    targets = [
        Target.from_timing(
            f"fast-vs-per-sample-cvxpylayers-at-batch-{TARGET_BATCH}",
            at.speedup("cvxpylayers, per sample"),
            target=TARGET_SPEEDUP,
            unit="x",
        )
    ]
    write_report("contact", rows, targets)
    print(f"benchmark time: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
