"""Cost of one 1-second push against the number of cells: both formulations and pybullet.

For rectangles of 10 to 127 cells (2 cm cells, 0.2 m/s push at an offset, dt = 0.01 s for the
engines, 1/240 s for pybullet), one run measures the forward simulation and the forward plus
the gradient of the final cell positions with respect to every cell's mass and friction (the
LCP formulation, the rigid formulation) and pybullet's forward simulation, with ratios.

The LCP formulation is slow (a dense saddle system of about 6k unknowns per interior-point
iteration), so it is timed on its first ``LCP_STEPS`` steps and scaled to the 100 steps of
the push: the columns say so. Everything runs on one thread (torch.set_num_threads(1)), like
pybullet, so the comparison is core for core.

Targets: at 88 cells the rigid formulation is at least 5× faster than pybullet's forward
simulation, and its gradient costs at most 3× its own forward simulation.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from physid.bench import Target, best_time, write_report
from physid.pushing import Push, from_mask, simulate, simulate_bullet

SIZES = {10: (2, 5), 24: (4, 6), 48: (6, 8), 88: (8, 11), 127: (8, 16)}
CELL = 0.02
DT = 0.01


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
    return obj, Push(tuple(contact), (0.0, 1.0), speed=0.2, duration=1.0)


def timings(obj, push, formulation: str, steps: int, repeat: int) -> tuple[float, float]:
    """Seconds for a forward run of ``steps`` steps and for forward plus gradient."""
    short = Push(push.contact, push.direction, push.speed, steps * DT)

    def forward():
        with torch.no_grad():
            simulate(obj, short, formulation, DT, progress=False)

    def gradient():
        masses = obj.masses.clone().requires_grad_()
        frictions = obj.frictions.clone().requires_grad_()
        final = simulate(obj, short, formulation, DT, masses, frictions, progress=False).final
        final.sum().backward()

    return best_time(forward, repeat), best_time(gradient, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10, 48 and 88 cells, fewer repeats")
    args = parser.parse_args()
    torch.set_num_threads(1)
    sizes = [10, 48, 88] if args.quick else list(SIZES)
    repeat = 1 if args.quick else 5
    lcp_steps = 2 if args.quick else 5
    steps = round(1.0 / DT)
    rows = []
    for cells in sizes:
        obj, push = make_object(cells)
        rigid_fwd, rigid_grad = timings(obj, push, "rigid", steps, repeat)
        lcp_fwd, lcp_grad = timings(obj, push, "lcp", lcp_steps, 1)
        scale = steps / lcp_steps
        bullet = best_time(lambda o=obj, q=push: simulate_bullet(o, q, [1.0], settle_steps=0),
                           repeat)
        rows.append({
            "cells": cells,
            "bullet_fwd_s": bullet,
            "rigid_fwd_s": rigid_fwd,
            "rigid_grad_s": rigid_grad,
            f"lcp_fwd_s (x{scale:g} of {lcp_steps} steps)": lcp_fwd * scale,
            f"lcp_grad_s (x{scale:g} of {lcp_steps} steps)": lcp_grad * scale,
            "bullet/rigid": bullet / rigid_fwd,
            "rigid grad/fwd": rigid_grad / rigid_fwd,
            "lcp/rigid fwd": lcp_fwd * scale / rigid_fwd,
        })
    at88 = next(r for r in rows if r["cells"] == 88)
    targets = [
        Target("rigid_vs_bullet_speedup_88_cells", at88["bullet/rigid"], 5.0, "x"),
        Target("rigid_gradient_over_forward_88_cells", at88["rigid grad/fwd"], 3.0, "x",
               higher_is_better=False),
    ]
    write_report("pushing", rows, targets)


if __name__ == "__main__":
    main()
