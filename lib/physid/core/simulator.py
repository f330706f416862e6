"""What a trajectory likelihood needs from a simulator: the :class:`Simulator` protocol.

The likelihood of :mod:`physid.inference.likelihood` rolls a simulator out from recorded start
states and compares what the rollout would measure with what was measured, Eq. (inf-lik) of
the chapter. It sees the simulator only through this protocol, so any model with

* ``param_names``: the estimated parameters, in the order of the last axis of ``theta``;
* ``state_size`` (``S``) and ``input_size`` (``U``, 0 for an unactuated system);
* ``observation_size`` (``O``) and ``observe(states)``: the measurement ``y = h(s)`` of each
  state, ``(..., S) → (..., O)`` (the identity for the double pendulum);
* ``rollout(theta, s0, n_steps, u)``: the states ``s_1 … s_T`` (``(..., T, S)``) from ``s0``
  under the known inputs ``u`` (``(..., T, U)``, ``u[t]`` applied in the step from ``s_t``),
  batched over the broadcast leading axes of ``theta``, ``s0`` and ``u`` and differentiable
  in ``theta`` and ``s0``, without checks (a sampler may propose a particle outside the
  physical domain);
* ``check_theta(theta)``: ``theta`` as float64 if finite and physical, else a ValueError
  naming it,

plugs into single and multiple shooting, the sum and product over references and every
estimator, without a change to the likelihood. :class:`~physid.inference.pendulum.DoublePendulum`
is one; the tests add a damped oscillator driven by a known force. The prior box is not the
simulator's: the same model is estimated within different limits
(:class:`~physid.core.target.Limits`, whose names must equal ``param_names``).
"""

from __future__ import annotations

import os
from typing import Protocol, runtime_checkable

import torch

Tensor = torch.Tensor

__all__ = ["ResidualSimulator", "Simulator", "compiled_by_default"]


@runtime_checkable
class Simulator(Protocol):
    """A batched, differentiable simulator with named parameters (see the module docstring)."""

    @property
    def param_names(self) -> tuple[str, ...]:
        """The estimated parameters, in the order of the last axis of ``theta``."""
        ...

    @property
    def state_size(self) -> int:
        """``S``: the entries of a state."""
        ...

    @property
    def input_size(self) -> int:
        """``U``: the entries of the known input ``u(t)`` per step (0: no input)."""
        ...

    @property
    def observation_size(self) -> int:
        """``O``: the entries of a measurement ``observe(s)``."""
        ...

    def check_theta(self, theta: Tensor) -> Tensor:
        """``theta`` (..., M) as float64 if finite and physical, else a ValueError naming it."""
        ...

    def rollout(self, theta: Tensor, s0: Tensor, n_steps: int, u: Tensor | None = None) -> Tensor:
        """States (..., T, S) after each of ``n_steps`` steps from ``s0`` (..., S), under the
        inputs ``u`` (..., T, U) (None when ``input_size`` is 0), unchecked."""
        ...

    def observe(self, states: Tensor) -> Tensor:
        """The measurement (..., O) of each state (..., S)."""
        ...


@runtime_checkable
class ResidualSimulator(Simulator, Protocol):
    """A :class:`Simulator` that also sums its rollout's squared residuals itself.

    A Gaussian likelihood needs, per rollout, only ``Σ_t Σ_o (w_o (y_o(s_t) − ŷ_{t,o}))²``
    with ``y = observe(s)``: a simulator that computes it inside its rollout (a compiled
    kernel, say) saves the likelihood an array of every observation and its gradient. The
    likelihood of :mod:`physid.inference.likelihood` uses it where it can; the result must
    equal the same sum over :meth:`~Simulator.observe` of :meth:`~Simulator.rollout`.
    """

    def rollout_residuals(
        self,
        theta: Tensor,
        s0: Tensor,
        n_steps: int,
        u: Tensor | None,
        measured: Tensor,
        weight: Tensor,
    ) -> tuple[Tensor, Tensor]:
        """The last state (..., S) of :meth:`~Simulator.rollout` and the sum (...) over the
        steps and the O entries of ``(weight · (observe(s_t) − measured_t))²``, for
        ``measured`` (..., T, O) (its batch axes broadcast with the others') and ``weight``
        (O,); unchecked, differentiable in ``theta`` and ``s0``. (The last state is what
        multiple shooting's defects need.)"""
        ...


def compiled_by_default() -> bool:
    """Whether a simulator built with ``compiled=None`` rolls out compiled: yes, unless the
    environment variable ``PHYSID_COMPILE`` is ``0``, ``false`` or ``no`` (to run the eager
    reference everywhere, for example where no compiler works)."""
    return os.environ.get("PHYSID_COMPILE", "1") not in ("0", "false", "no")
