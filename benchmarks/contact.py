"""Contact resolutions per second: the fast exact solver against cvxpylayers, in the same run.

A resolution is one sample's compression and restitution problems, forward and backward (the
gradient of the summed impulses with respect to every input). The problems are recorded
single-contact problems of the bouncing point masses (BP5, planar cone, CM) and of the
gyroscope (Gyro, second-order cone, CMr). cvxpylayers runs with the layers cached per contact
count, batched (one call per batch) and per sample (one call per problem, as in the authors'
code). torch runs on one thread: the problems are many small tensors.

Target (issue "Part III, chapter 5"): at batch 200, at least 50 times faster than per-sample
cvxpylayers on BP5.
"""

from __future__ import annotations

import torch

from physid.bench import Target, write_report
from physid.contact import experiments as ex

BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 200, 256, 512)
GYRO_BATCHES = (1, 16, 64, 200)
TARGET_BATCH = 200
TARGET_SPEEDUP = 50.0


def rows_for(label: str, timing: list[dict]) -> list[dict]:
    rows = []
    for r in timing:
        rows.append(
            {
                "problems": label,
                "batch": r["batch"],
                "fast (1/s)": r["fast"],
                "cvxpylayers batched (1/s)": r["cvxpylayers, batched"],
                "cvxpylayers per sample (1/s)": r["cvxpylayers, per sample"],
                "x vs per sample": r["fast"] / r["cvxpylayers, per sample"],
                "x vs batched": r["fast"] / r["cvxpylayers, batched"],
            }
        )
    return rows


def main() -> None:
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    runs = ex.run_tasks((160, 20, 20), seed=0, names=("BP5", "Gyro"))
    rows = rows_for("BP5, planar, CM", ex.timing_rows(runs["BP5"], BATCHES, repeat=2))
    rows += rows_for(
        "Gyro, cone, CMr", ex.timing_rows(runs["Gyro"], GYRO_BATCHES, repeat=2, variant="CMr")
    )
    at = next(r for r in rows if r["problems"].startswith("BP5") and r["batch"] == TARGET_BATCH)
    targets = [
        Target(
            id=f"fast-vs-per-sample-cvxpylayers-at-batch-{TARGET_BATCH}",
            measured=at["x vs per sample"],
            target=TARGET_SPEEDUP,
            unit="x",
        )
    ]
    write_report("contact", rows, targets)


if __name__ == "__main__":
    main()
