"""Cost of one 1-second push against the number of cells: both formulations and pybullet.

For solid blocks of 10 to 126 cells (``physid.pushing.chapters.pushing_identify.block``: 2 cm cells,
8 wide, a 0.2 m/s push by the finger at an offset, dt = 0.01 s for the engines, 1/240 s for
pybullet), the contenders are timed in turn with :func:`physid.core.bench.interleaved` (a warm-up,
then 5 repeats of one call of each), and ratios are taken repeat by repeat
(:func:`physid.core.bench.ratio`) and reported as median and spread (smallest–largest repeat).
What each contender's time includes:

* ``rigid_fwd``: ``simulate(obj, push)`` without a gradient, which runs the compiled step
  (:mod:`physid.pushing.rigid_kernel`): argument checks, the rollout, the record;
* ``rigid_grad``: the same call with masses and frictions requiring a gradient (the compiled
  step taping its decisions, :func:`physid.pushing.rigid_engine.adjoint_rollout`) plus the
  backward pass of the final positions' sum to every mass and friction (the compiled adjoint,
  :mod:`physid.pushing.rigid_adjoint`); how many pushes took the compiled path and how many
  the torch step is printed (``GRADIENT_PATHS``);
* ``bullet_step``: pybullet stepping the push alone (``resetBaseVelocity`` and
  ``stepSimulation``, 240 steps) in a world built beforehand
  (:class:`physid.pushing.bullet.PreparedPush`), plus reading the final cell positions: the
  ratios of the targets use this one;
* ``bullet_total``: :func:`physid.pushing.simulate_bullet` (connect, build the world, step while
  recording the finger's contact, read the cells, disconnect): what an observation costs;
* ``lcp_fwd``/``lcp_grad``: the LCP formulation, timed on its first ``LCP_STEPS`` steps (the
  finger touches from the eighth) and scaled to the 100 steps of the push, as its column says.

Batches (88 cells): ``BATCH`` random reachable pushes of the block in one call of the rigid
formulation against the same pushes in pybullet one after the other (stepping alone and in
all); and the hammer's ``BATCH`` random pushes, which slide and lock, against ``BATCH`` copies of
one of its pushes that only sticks, both in one call (their mode counts are printed, and how
many sliding root searches the pencils made and how many they left to the piece-by-piece walk,
``SLIDE_WALKS``). Everything
runs on one thread (torch.set_num_threads(1)), like pybullet, so the comparison is core for
core.

Identification on the hammer (the first experiment of the identification chapter at its
default size: four training pushes observed in pybullet): one step of each gradient method is
timed in turn (Algorithm 1, autograd through the rigid formulation, autograd through the LCP
formulation; the LCP one on the restarts of one training push, scaled to all of them, as its
column says). Each method's steps come from a deterministic run (``IDENTIFY_STEPS`` steps):
the error to reach is the best training loss Algorithm 1 attains; autograd through the LCP
formulation takes the steps autograd through the rigid formulation takes to attain it (the
two formulations compute the same gradient to solver tolerance). Time to that error = steps ×
seconds per step, repeat by repeat; the paper's "under 1.5 cm within 30 s" is reported beside
the test error at that point. With ``--budgets``, each method of the chapter also runs for the
chapter's 30 s without a cap on simulations, and the table gives how many it spends.

Targets (:mod:`physid.pushing.chapters.pushing_lcp`,
:mod:`physid.pushing.chapters.pushing_identify`), judged on the median of the per-repeat
ratios: at 88 cells the rigid forward is at least ``TARGET_SPEEDUP`` times faster than
pybullet's stepping, at every size at least ``TARGET_SIZE_SPEEDUP`` times, its gradient costs
at most ``TARGET_GRADIENT_COST`` times its own forward, the batch is at least
``TARGET_BATCH_SPEEDUP`` times faster than pybullet's stepping of the same pushes, the sliding
batch costs at most ``TARGET_SLIDE_COST`` times the sticking one; Algorithm 1 reaches its error
at least ``TARGET_ANALYTIC_SPEEDUP`` times sooner than autograd through the LCP formulation.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from physid.core.bench import Target, Timing, interleaved, ratio, write_report
from physid.pushing import Push, random_pushes, simulate, simulate_bullet
from physid.pushing.budget import Budget
from physid.pushing.bullet import PreparedPush
from physid.pushing.chapters.pushing_identify import (
    HEADLINE_ERROR,
    HEADLINE_SECONDS,
    TARGET_ANALYTIC_SPEEDUP,
    block,
)
from physid.pushing.chapters.pushing_identify import SIZES as IDENTIFY_SIZES
from physid.pushing.chapters.pushing_lcp import (
    BENCH_CELLS,
    TARGET_BATCH_SPEEDUP,
    TARGET_GRADIENT_COST,
    TARGET_SIZE_SPEEDUP,
    TARGET_SLIDE_COST,
    TARGET_SPEEDUP,
)
from physid.pushing.finger import FREE, MODE_NAMES, STICK
from physid.pushing.identify import identify
from physid.pushing.objects import load_object
from physid.pushing.observations import make_experiment
from physid.pushing.rigid_engine import GRADIENT_PATHS, SLIDE_WALKS
from physid.pushing.target import PushingTarget, start_point

SIZES = (10, 24, 48, 88, 126)  # 126: pybullet's 127 links less the finger's skin
DT = 0.01
DURATION = 1.0
LCP_STEPS = 10
REPEAT = 5
BATCH = 16
IDENTIFY_STEPS = 10


def identification() -> tuple[dict, Target]:
    """The hammer's identification row and target (module docstring)."""
    s = IDENTIFY_SIZES["default"]
    ex = make_experiment("hammer", 0, s.n_train, s.n_test, s.duration)
    n = len(ex.train)
    budget = Budget(simulations=(IDENTIFY_STEPS + 1) * n)
    runs = {m: identify(m, ex.train, budget) for m in ("algorithm1", "autograd-rigid")}
    goal = min(runs["algorithm1"].history.loss)

    def steps_to(run) -> float:
        # The start is step 0; an evaluation after step i costs (i + 1) n simulations.
        for sims, loss in zip(run.history.simulations, run.history.loss, strict=True):
            if loss <= goal:
                return max(sims // n - 1, 0)
        return float("nan")

    steps = {m: steps_to(r) for m, r in runs.items()}
    rigid, one_push = PushingTarget(ex.train), PushingTarget(ex.train.subset([0]), "lcp")
    x = torch.as_tensor(start_point(rigid.k))[None]
    t = interleaved({
        "algorithm1": lambda: rigid.algorithm1(x),
        "autograd_rigid": lambda: rigid.loss_and_grad(x),
        "autograd_lcp_one_push": lambda: one_push.loss_and_grad(x),
    }, repeat=REPEAT)
    lcp_step = Timing(tuple(v * n for v in t["autograd_lcp_one_push"].samples))
    to_goal = {
        "algorithm1": Timing(tuple(v * steps["algorithm1"] for v in t["algorithm1"].samples)),
        "autograd_lcp": Timing(tuple(v * steps["autograd-rigid"] for v in lcp_step.samples)),
    }
    speedup = ratio(to_goal["autograd_lcp"], to_goal["algorithm1"])
    best = runs["algorithm1"].history.estimates[int(np.argmin(runs["algorithm1"].history.loss))]
    test = float(rigid.rollout_error(torch.as_tensor(best)[None], ex.test)[0])
    row = {
        "cells": f"{len(ex.obj)}, identification ({n} pushes)",
        "algorithm1 step s": t["algorithm1"].median,
        "autograd rigid step s": t["autograd_rigid"].median,
        f"autograd lcp step s (x{n} of 1 push)": lcp_step.median,
        "goal train loss mm": 1e3 * goal,
        "steps algorithm1": steps["algorithm1"],
        "steps autograd": steps["autograd-rigid"],
        "algorithm1 s to goal": to_goal["algorithm1"].median,
        "autograd lcp s to goal": to_goal["autograd_lcp"].median,
        "lcp/algorithm1": speedup.median,
        "lcp/algorithm1 spread": speedup.spread,
        "test error at goal mm": 1e3 * test,
        "paper": f"< {1e3 * HEADLINE_ERROR:g} mm within {HEADLINE_SECONDS:g} s",
    }
    target = Target.from_timing("analytic_vs_lcp_autograd_to_same_error_hammer", speedup,
                                TARGET_ANALYTIC_SPEEDUP, "x")
    return row, target


def make_object(cells: int):
    """The solid block of ``cells`` cells and its off-centre push (:func:`block`), lasting
    ``DURATION``."""
    obj, push = block(cells)
    return obj, Push(push.contact, push.direction, speed=0.2, duration=DURATION)


def forward(obj, pushes) -> None:
    """The rigid formulation's forward run of a batch (compiled), no gradient."""
    with torch.no_grad():
        simulate(obj, pushes, "rigid", DT)


def forward_and_gradient(obj, pushes) -> None:
    """The same run and the gradient of the final positions' sum to every mass and friction."""
    masses = obj.masses.clone().requires_grad_()
    frictions = obj.frictions.clone().requires_grad_()
    simulate(obj, pushes, "rigid", DT, masses, frictions).final.sum().backward()


def gradient_paths(call) -> str:
    """``call()``'s pushes that took the compiled adjoint and the torch step, as "c/t"."""
    before = dict(GRADIENT_PATHS)
    call()
    return "/".join(str(GRADIENT_PATHS[p] - before.get(p, 0)) for p in ("compiled", "torch"))


def slide_walks(call) -> str:
    """``call()``'s sliding root searches by the pencils and piece by piece, as "p/q"."""
    before = dict(SLIDE_WALKS)
    call()
    return "/".join(str(SLIDE_WALKS[w] - before.get(w, 0)) for w in ("pencils", "piece by piece"))


def contenders(obj, push, formulation: str, steps: int, prefix: str) -> dict:
    """``{prefix}_fwd`` and ``{prefix}_grad`` calls: a forward run of ``steps`` steps, and the
    same run plus the gradient of the final positions with respect to masses and frictions."""
    short = Push(push.contact, push.direction, push.speed, steps * DT)

    def gradient():
        masses = obj.masses.clone().requires_grad_()
        frictions = obj.frictions.clone().requires_grad_()
        simulate(obj, short, formulation, DT, masses, frictions).final.sum().backward()

    def run() -> None:
        with torch.no_grad():
            simulate(obj, short, formulation, DT)

    return {f"{prefix}_fwd": run, f"{prefix}_grad": gradient}


def bullet_stepping(obj, pushes: list[Push]):
    """A call that steps ``pushes`` in pybullet worlds built beforehand (one per push and per
    call of :func:`physid.core.bench.interleaved`: a warm-up and ``REPEAT`` repeats)."""
    worlds = [[PreparedPush(obj, q) for q in pushes] for _ in range(REPEAT + 1)]

    def step() -> None:
        for world in worlds.pop():
            world.run()

    return step


def sticking_push(obj, seed: int = 0) -> Push:
    """The first of ``obj``'s random pushes (seeds from ``seed``) whose steps only stick or
    leave the object free."""
    for s in range(seed, seed + 100):
        push = random_pushes(obj, 1, seed=s, duration=DURATION)[0]
        with torch.no_grad():
            mode = simulate(obj, push, "rigid", DT).contact.mode
        if bool(((mode == STICK) | (mode == FREE)).all()):
            return push
    raise RuntimeError(f"no push of {obj.name} only sticks among 100 seeds")


def mode_counts(obj, pushes) -> str:
    """``free/stick/slide/lock/coupled`` step counts of ``pushes``."""
    with torch.no_grad():
        mode = simulate(obj, pushes, "rigid", DT).contact.mode
    counts = np.bincount(mode.flatten().numpy(), minlength=len(MODE_NAMES))
    return " ".join(f"{name} {c}" for name, c in zip(MODE_NAMES, counts, strict=True))


def budgets() -> list[dict]:
    """Simulations each method of the identification chapter spends in its 30 s on the hammer
    (no cap on simulations), beside the chapter's budget."""
    s = IDENTIFY_SIZES["default"]
    ex = make_experiment("hammer", 0, s.n_train, s.n_test, s.duration)
    rows = []
    for name in s.methods:
        run = identify(name, ex.train, Budget(seconds=s.budget.seconds))
        rows.append({
            "cells": f"{len(ex.obj)}, {name} in {s.budget.seconds:g} s",
            "simulations in 30 s": run.simulations,
            "chapter budget": f"{s.budget.simulations} simulations or {s.budget.seconds:g} s",
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10, 48 and 88 cells only")
    parser.add_argument("--budgets", action="store_true",
                        help="also run each identification method for the chapter's 30 s")
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
            "bullet_step": bullet_stepping(obj, [push]),
            "bullet_total": lambda o=obj, q=push: simulate_bullet(o, q, [DURATION],
                                                                  settle_steps=0),
            **contenders(obj, push, "lcp", LCP_STEPS, "lcp"),
        }
        t = interleaved(calls, repeat=REPEAT)
        speedup = ratio(t["bullet_step"], t["rigid_fwd"])
        grad_cost = ratio(t["rigid_grad"], t["rigid_fwd"])
        lcp_cost = ratio(t["lcp_fwd"], t["rigid_fwd"])
        ratios[cells] = (speedup, grad_cost)
        lcp = f"(x{scale:g} of {LCP_STEPS} steps)"
        rows.append({
            "cells": cells,
            "modes": mode_counts(obj, push),
            "bullet_step_s": t["bullet_step"].median,
            "bullet_total_s": t["bullet_total"].median,
            "rigid_fwd_s": t["rigid_fwd"].median,
            "rigid_grad_s": t["rigid_grad"].median,
            f"lcp_fwd_s {lcp}": t["lcp_fwd"].median * scale,
            f"lcp_grad_s {lcp}": t["lcp_grad"].median * scale,
            "bullet_step/rigid": speedup.median,
            "bullet_step/rigid spread": speedup.spread,
            "bullet_total/rigid": ratio(t["bullet_total"], t["rigid_fwd"]).median,
            "rigid grad/fwd": grad_cost.median,
            "rigid grad/fwd spread": grad_cost.spread,
            "grad pushes compiled/torch": gradient_paths(calls["rigid_grad"]),
            "lcp/rigid fwd": lcp_cost.median * scale,
        })
    obj, _ = make_object(BENCH_CELLS)
    pushes = random_pushes(obj, BATCH, seed=0, duration=DURATION)
    hammer = load_object("hammer")
    sliding = random_pushes(hammer, BATCH, seed=0, duration=DURATION)
    sticking = [sticking_push(hammer)] * BATCH
    t = interleaved({
        "rigid_batch_fwd": lambda: forward(obj, pushes),
        "bullet_batch_step": bullet_stepping(obj, pushes),
        "bullet_batch_total": lambda: simulate_bullet(obj, pushes, [DURATION], settle_steps=0),
        "rigid_sliding_batch": lambda: forward(hammer, sliding),
        "rigid_sticking_batch": lambda: forward(hammer, sticking),
        "rigid_sliding_batch_grad": lambda: forward_and_gradient(hammer, sliding),
    }, repeat=REPEAT)
    batch_speedup = ratio(t["bullet_batch_step"], t["rigid_batch_fwd"])
    slide_cost = ratio(t["rigid_sliding_batch"], t["rigid_sticking_batch"])
    rows.append({
        **dict.fromkeys(rows[0]),  # the columns of a single push, empty where they do not apply
        "cells": f"{BENCH_CELLS}, {BATCH} pushes",
        "modes": mode_counts(obj, pushes),
        "bullet_step_s": t["bullet_batch_step"].median,
        "bullet_total_s": t["bullet_batch_total"].median,
        "rigid_fwd_s": t["rigid_batch_fwd"].median,
        "bullet_step/rigid": batch_speedup.median,
        "bullet_step/rigid spread": batch_speedup.spread,
        "bullet_total/rigid": ratio(t["bullet_batch_total"], t["rigid_batch_fwd"]).median,
    })
    for label, batch, key in (("sliding", sliding, "rigid_sliding_batch"),
                              ("sticking", sticking, "rigid_sticking_batch")):
        rows.append({
            **dict.fromkeys(rows[0]),
            "cells": f"{len(hammer)} (hammer), {BATCH} {label} pushes",
            "modes": mode_counts(hammer, batch),
            "rigid_fwd_s": t[key].median,
            "slide searches pencils/piece by piece": slide_walks(lambda b=batch: forward(
                hammer, b)),
        })
    rows[-2]["sliding/sticking"] = slide_cost.median
    rows[-2]["sliding/sticking spread"] = slide_cost.spread
    sliding_grad = ratio(t["rigid_sliding_batch_grad"], t["rigid_sliding_batch"])
    rows[-2]["rigid_grad_s"] = t["rigid_sliding_batch_grad"].median
    rows[-2]["rigid grad/fwd"] = sliding_grad.median
    rows[-2]["rigid grad/fwd spread"] = sliding_grad.spread
    rows[-2]["grad pushes compiled/torch"] = gradient_paths(
        lambda: forward_and_gradient(hammer, sliding))
    identify_row, identify_target = identification()
    rows.append(identify_row)
    if args.budgets:
        rows.extend(budgets())
    columns = list(dict.fromkeys(key for row in rows for key in row))
    rows = [{key: row.get(key) for key in columns} for row in rows]  # None: empty cell
    speedup, grad_cost = ratios[BENCH_CELLS]
    targets = [
        Target.from_timing(f"rigid_vs_bullet_stepping_{BENCH_CELLS}_cells", speedup,
                           TARGET_SPEEDUP, "x"),
        *(Target.from_timing(f"rigid_vs_bullet_stepping_{cells}_cells_at_least", ratios[cells][0],
                             TARGET_SIZE_SPEEDUP, "x") for cells in sizes),
        Target.from_timing(f"rigid_gradient_over_forward_{BENCH_CELLS}_cells", grad_cost,
                           TARGET_GRADIENT_COST, "x", higher_is_better=False),
        Target.from_timing(f"rigid_batch_{BATCH}_vs_bullet_stepping_{BENCH_CELLS}_cells",
                           batch_speedup, TARGET_BATCH_SPEEDUP, "x"),
        Target.from_timing(f"rigid_sliding_over_sticking_batch_{BATCH}_hammer", slide_cost,
                           TARGET_SLIDE_COST, "x", higher_is_better=False),
        identify_target,
    ]
    write_report("pushing", rows, targets)


if __name__ == "__main__":
    main()
