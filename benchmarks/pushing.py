"""Cost of one 1-second push against the number of cells: both formulations and pybullet.

For rectangles of 10 to 127 cells (2 cm cells, 0.2 m/s push at an offset, dt = 0.01 s for the
engines, 1/240 s for pybullet), the contenders are timed in turn with
:func:`physid.bench.interleaved` (a warm-up, then 5 repeats of one call of each): the rigid
formulation's forward simulation and its forward plus the gradient of the final cell positions
with respect to every cell's mass and friction, pybullet's forward simulation, and the same
forward and gradient for the LCP formulation. Ratios are taken repeat by repeat
(:func:`physid.bench.ratio`) and reported as median and spread (smallest–largest repeat).

The LCP formulation is slow (a dense saddle system of about 6k unknowns per interior-point
iteration), so it is timed on its first ``LCP_STEPS`` steps, still 5 repeats, and scaled to the
100 steps of the push: its column names say so. Everything runs on one thread
(torch.set_num_threads(1)), like pybullet, so the comparison is core for core.

Targets (:mod:`physid.pushing.experiments`): at 88 cells the rigid formulation's forward
simulation is at least 5× faster than pybullet's, and its gradient costs at most 3× its own
forward simulation; both judged on the median of the per-repeat ratios.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from physid.bench import Target, interleaved, ratio, write_report
from physid.pushing import Push, from_mask, simulate, simulate_bullet
from physid.pushing.experiments import BENCH_CELLS, TARGET_GRADIENT_COST, TARGET_SPEEDUP

SIZES = {10: (2, 5), 24: (4, 6), 48: (6, 8), 88: (8, 11), 127: (8, 16)}
CELL = 0.02
DT = 0.01
DURATION = 1.0
LCP_STEPS = 2
REPEAT = 5


def make_object(cells: int):
    rows, cols = SIZES[cells]
    mask = np.ones((rows, cols), bool)
    if rows * cols > cells:
        mask[0, 0] = False  # 8 × 16 less one corner: 127 cells
    obj = from_mask(mask, CELL, 0.01, 0.4, name=f"{cells} cells")
    # Push up on the bottom face a quarter of the width off centre, so the object also turns.
    _, mids, normals = obj.exposed_faces()
    bottom = mids[(normals[:, 1] > 0.5) & (mids[:, 1] < mids[:, 1].min() + 1e-9)]
    contact = bottom[np.argmin(np.abs(bottom[:, 0] - cols * CELL / 4))]
    return obj, Push(tuple(contact), (0.0, 1.0), speed=0.2, duration=DURATION)


def contenders(obj, push, formulation: str, steps: int, prefix: str) -> dict:
    """``{prefix}_fwd`` and ``{prefix}_grad`` calls: a forward run of ``steps`` steps, and the
    same run plus the gradient of the final positions with respect to masses and frictions."""
    short = Push(push.contact, push.direction, push.speed, steps * DT)

    def forward():
        with torch.no_grad():
            simulate(obj, short, formulation, DT)

    def gradient():
        masses = obj.masses.clone().requires_grad_()
        frictions = obj.frictions.clone().requires_grad_()
        final = simulate(obj, short, formulation, DT, masses, frictions).final
        final.sum().backward()

    return {f"{prefix}_fwd": forward, f"{prefix}_grad": gradient}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10, 48 and 88 cells only")
    args = parser.parse_args()
    torch.set_num_threads(1)
    sizes = [10, 48, BENCH_CELLS] if args.quick else list(SIZES)
    steps = round(DURATION / DT)
    scale = steps / LCP_STEPS
    rows, ratios = [], {}
    for cells in sizes:
        obj, push = make_object(cells)
        calls = {
            **contenders(obj, push, "rigid", steps, "rigid"),
            "bullet_fwd": lambda o=obj, q=push: simulate_bullet(o, q, [DURATION], settle_steps=0),
            **contenders(obj, push, "lcp", LCP_STEPS, "lcp"),
        }
        t = interleaved(calls, repeat=REPEAT)
        speedup = ratio(t["bullet_fwd"], t["rigid_fwd"])
        grad_cost = ratio(t["rigid_grad"], t["rigid_fwd"])
        lcp_cost = ratio(t["lcp_fwd"], t["rigid_fwd"])
        ratios[cells] = (speedup, grad_cost)
        lcp = f"(x{scale:g} of {LCP_STEPS} steps)"
        rows.append({
            "cells": cells,
            "bullet_fwd_s": t["bullet_fwd"].median,
            "rigid_fwd_s": t["rigid_fwd"].median,
            "rigid_grad_s": t["rigid_grad"].median,
            f"lcp_fwd_s {lcp}": t["lcp_fwd"].median * scale,
            f"lcp_grad_s {lcp}": t["lcp_grad"].median * scale,
            "bullet/rigid": speedup.median,
            "bullet/rigid spread": speedup.spread,
            "rigid grad/fwd": grad_cost.median,
            "rigid grad/fwd spread": grad_cost.spread,
            "lcp/rigid fwd": lcp_cost.median * scale,
        })
    speedup, grad_cost = ratios[BENCH_CELLS]
    targets = [
        Target.from_timing(f"rigid_vs_bullet_speedup_{BENCH_CELLS}_cells", speedup,
                           TARGET_SPEEDUP, "x"),
        Target.from_timing(f"rigid_gradient_over_forward_{BENCH_CELLS}_cells", grad_cost,
                           TARGET_GRADIENT_COST, "x", higher_is_better=False),
    ]
    write_report("pushing", rows, targets)


if __name__ == "__main__":
    main()
