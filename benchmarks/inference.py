"""CSVGD on the 11-parameter double pendulum: our rollout against eager torch, in one run.

100 particles, 2,000 steps at 400 Hz split into 10 shooting windows (110 + 36 variables per
particle). Rows: seconds per likelihood-and-gradient evaluation for

* ``ours``: windows vectorised, fused forward chunks and the hand-derived adjoint
  (``torch.compile``), as the estimators use it;
* ``eager, windows batched``: the same likelihood with plain eager autograd through the steps;
* ``eager, step by step``: eager autograd, each window's steps one after the other;

and seconds per full CSVGD iteration (kernel, multipliers, update) with ours. Target: 2,000
CSVGD iterations in under 2 minutes, i.e. at most 60 ms per iteration on 2 cores.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from physid.bench import Target, best_time, write_report
from physid.inference.likelihood import Limits, TrajectoryLikelihood
from physid.inference.pendulum import REAL_LIMITS, DoublePendulum
from physid.inference.svgd import CSVGD

PARTICLES, STEPS, WINDOWS, DT = 100, 2000, 10, 1 / 400
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


def main() -> None:
    torch.set_num_threads(2)
    names = tuple(REAL_LIMITS)
    limits = Limits.from_dict(REAL_LIMITS)
    fixed = {"l1": 0.091}
    ours_model = DoublePendulum(names, dt=DT, fixed=fixed, compiled=True)
    eager_model = EagerPendulum(names, dt=DT, fixed=fixed, compiled=False)
    s0 = torch.tensor([1.4, -0.3, 4.0, -6.0], dtype=torch.float64)
    theta = torch.tensor([TRUTH[n] for n in names], dtype=torch.float64)
    with torch.no_grad():
        reference = torch.cat((s0[None], ours_model.simulate(theta, s0, STEPS)))[None]
    options = {"shooting_windows": WINDOWS, "defects": "constraint"}
    targets = {
        "ours": TrajectoryLikelihood(ours_model, reference, limits, **options),
        "eager, windows batched": TrajectoryLikelihood(eager_model, reference, limits, **options),
        "eager, step by step": StepByStep(eager_model, reference, limits, **options),
    }
    x = targets["ours"].initial(PARTICLES)

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
    rows = []
    seconds = {}
    for name, target in targets.items():
        repeat = 5 if name == "ours" else 2
        seconds[name] = best_time(evaluation(target), repeat=repeat)
        rows.append(
            {
                "what": f"likelihood + gradient, {name}",
                "seconds": seconds[name],
                "× ours (evaluation)": seconds[name] / seconds["ours"],
            }
        )
    estimator = CSVGD(targets["ours"], n_particles=PARTICLES, stepsize=0.02)
    estimator.initialise()
    per_iteration = best_time(estimator.step, repeat=3, number=10)
    rows.append(
        {
            "what": "CSVGD iteration, ours",
            "seconds": per_iteration,
            "× ours (evaluation)": per_iteration / seconds["ours"],
        }
    )
    print(
        f"first evaluations (compiling ours): {compile_seconds:.1f} s; "
        f"largest gradient difference {error:.1e} of its scale"
    )
    targets_met = [
        Target(
            "csvgd_2000_iterations_seconds",
            2000 * per_iteration,
            120.0,
            "s",
            higher_is_better=False,
        ),
        Target(
            "speedup_over_eager_step_by_step",
            seconds["eager, step by step"] / seconds["ours"],
            1.0,
            "x",
        ),
        Target("gradient_matches_eager_relative", error, 1e-8, "", higher_is_better=False),
    ]
    write_report("inference", rows, targets_met)


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
