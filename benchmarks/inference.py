"""CSVGD on the 11-parameter double pendulum: our rollout against eager torch, in one run.

100 particles, 2,000 steps at 400 Hz split into 10 shooting windows (110 + 36 variables per
particle). Rows: seconds per likelihood-and-gradient evaluation for

* ``ours``: windows vectorised, fused forward chunks and the hand-derived adjoint
  (``torch.compile``), as the estimators use it;
* ``eager, windows batched``: the same likelihood with plain eager autograd through the steps;
* ``eager, step by step``: eager autograd, each window's steps one after the other;

and seconds per full CSVGD iteration (kernel, multipliers, update) with ours. The four are
timed in turn, repeat after repeat (:func:`physid.bench.interleaved`), and each row gives the
median and the spread over the repeats; the ratios are taken repeat by repeat.
Target: 2,000 CSVGD iterations in under 2 minutes, i.e. at most 60 ms per iteration on 2 cores.
``--quick`` shrinks the problem (20 particles, 400 steps) to check that the script runs, and
writes its report under ``_build/benchmarks/quick/``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import torch

from physid.bench import BENCH_DIR, Target, Timing, interleaved, ratio, write_report
from physid.inference.likelihood import Limits, TrajectoryLikelihood
from physid.inference.pendulum import REAL_LIMITS, DoublePendulum
from physid.inference.svgd import CSVGD

PARTICLES, STEPS, WINDOWS, DT = 100, 2000, 10, 1 / 400
#: (particles, steps) of ``--quick``.
QUICK = (20, 400)
REPEAT = 5
TRUTH = {
    "m1": 0.12,
    "I1": 0.004,
    "c1x": 0.05,
    "c1y": 0.0,
    "d1": 0.002,
    "l2": 0.12,
    "m2": 0.1,
    "I2": 0.003,
    "c2x": 0.04,
    "c2y": 0.0,
    "d2": 0.002,
}


@dataclass(frozen=True)
class EagerPendulum(DoublePendulum):
    """The same model, rolled out by plain eager autograd."""

    def simulate(self, theta, s0, n_steps):
        return self.simulate_autograd(theta, s0, n_steps)


class StepByStep(TrajectoryLikelihood):
    """The same likelihood, simulating one window after another with eager autograd."""

    def _simulate_windows(self, x):
        theta = self.parameters(x)
        starts = torch.cat((self.data[:1, 0].expand(x.shape[0], 1, 4), self.shooting_states(x)), 1)
        windows = [
            self.model.simulate_autograd(theta, starts[:, w], self.horizon)
            for w in range(self.windows)
        ]
        pred = self.standardise(torch.stack(windows, 1))
        defects = x[:, self.n_params :].reshape(-1, self.windows - 1, 4) - pred[:, :-1, -1]
        return pred.reshape(x.shape[0], 1, self.n_steps, 4), defects


def main(quick: bool = False) -> None:
    torch.set_num_threads(2)
    particles, steps = QUICK if quick else (PARTICLES, STEPS)
    names = tuple(REAL_LIMITS)
    limits = Limits.from_dict(REAL_LIMITS)
    fixed = {"l1": 0.091}
    ours_model = DoublePendulum(names, dt=DT, fixed=fixed, compiled=True)
    eager_model = EagerPendulum(names, dt=DT, fixed=fixed, compiled=False)
    s0 = torch.tensor([1.4, -0.3, 4.0, -6.0], dtype=torch.float64)
    theta = torch.tensor([TRUTH[n] for n in names], dtype=torch.float64)
    with torch.no_grad():
        reference = torch.cat((s0[None], ours_model.simulate(theta, s0, steps)))[None]
    options = {"shooting_windows": WINDOWS, "defects": "constraint"}
    targets = {
        "ours": TrajectoryLikelihood(ours_model, reference, limits, **options),
        "eager, windows batched": TrajectoryLikelihood(eager_model, reference, limits, **options),
        "eager, step by step": StepByStep(eager_model, reference, limits, **options),
    }
    x = targets["ours"].initial(particles)

    def evaluation(target):
        def run():
            v = x.detach().requires_grad_(True)
            value, g = target.density_and_constraints(v)
            return torch.autograd.grad(value.sum() + g.sum(), v)[0]

        return run

    start = time.perf_counter()
    grads = {name: evaluation(t)() for name, t in targets.items()}  # includes compiling ours
    compile_seconds = time.perf_counter() - start
    error = max(
        (g - grads["ours"]).abs().max().item() / grads["ours"].abs().max().item()
        for g in grads.values()
    )
    estimator = CSVGD(targets["ours"], n_particles=particles, stepsize=0.02)
    estimator.initialise()
    contenders = {name: evaluation(t) for name, t in targets.items()}
    contenders["CSVGD iteration, ours"] = estimator.step
    timings = interleaved(contenders, repeat=REPEAT)
    rows = []
    for name, timing in timings.items():
        what = name if name.startswith("CSVGD") else f"likelihood + gradient, {name}"
        versus = ratio(timing, timings["ours"])
        rows.append(
            {
                "what": what,
                "median (s)": timing.median,
                "spread (s)": timing.spread,
                "× ours (median)": versus.median,
                "× ours (spread)": versus.spread,
            }
        )
    print(
        f"{particles} particles, {steps} steps; first evaluations (compiling ours): "
        f"{compile_seconds:.1f} s; largest gradient difference {error:.1e} of its scale"
    )
    iteration = timings["CSVGD iteration, ours"]
    targets_met = [
        Target.from_timing(
            "csvgd_2000_iterations_seconds",
            Timing(tuple(2000 * t for t in iteration.samples)),
            120.0,
            "s",
            higher_is_better=False,
        ),
        Target.from_timing(
            "speedup_over_eager_step_by_step",
            ratio(timings["eager, step by step"], timings["ours"]),
            1.0,
            "x",
        ),
        Target("gradient_matches_eager_relative", error, 1e-8, "", higher_is_better=False),
    ]
    write_report("inference", rows, targets_met, BENCH_DIR / "quick" if quick else BENCH_DIR)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small problem, to check the script")
    main(parser.parse_args().quick)
