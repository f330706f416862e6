"""Compiled rollouts as torch autograd nodes: one lane per particle and shooting window.

The pendulum's and the box's rollouts (:mod:`physid.inference.pendulum_kernel`,
:mod:`physid.inference.box_kernel`) are numba loops over *lanes*: a lane is one start state,
its constants and its fixed inputs, stepped ``T`` times. Both kernels have the same contract,
:class:`LaneKernel`, and this module is the one place that turns such a kernel into a
differentiable torch function (:func:`run`): the states (or, for a likelihood, the last state
and each lane's sum of squared residuals) forward, the kernel's hand-derived adjoint backward,
with respect to the start states and the constants.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
import torch

Tensor = torch.Tensor

__all__ = ["LaneKernel", "can_run", "fit_arrays", "lane_index", "rollout", "run"]


class LaneKernel(Protocol):
    """What :func:`run` calls. ``forward(s0, consts, fixed, dt, n_steps, fit)`` rolls the lanes
    ``s0`` (L, S) with constants ``consts`` (L, C) and the fixed inputs ``fixed`` out and
    returns the states (L, T, S), or with ``fit`` the last states (L, S); each lane's sum of
    squared residuals (L,) when its fixed inputs carry measurements (zeros otherwise); and a
    tape, whatever its backward pass needs. ``backward(tape, grad, g_squares)`` returns the
    cotangents of the start states (L, S) and of the constants (L, C), given those of the
    states (L, T, S), or of the last state (L, 1, S), and of the sums (L,)."""

    def forward(
        self, s0: np.ndarray, consts: np.ndarray, fixed: tuple, dt: float, n_steps: int, fit: bool
    ) -> tuple[np.ndarray, np.ndarray, object]: ...

    def backward(
        self, tape: object, grad: np.ndarray, g_squares: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]: ...


def lane_index(shape: tuple[int, ...], batch: tuple[int, ...]) -> np.ndarray:
    """For each lane of the batch shape ``shape`` (flattened), the row of an array whose
    batch shape ``batch`` broadcasts to ``shape``: how lanes share inputs and measurements."""
    rows = np.arange(math.prod(batch)).reshape(batch)
    return np.broadcast_to(rows, shape).reshape(-1)


def can_run(*tensors: Tensor) -> bool:
    """Whether the compiled kernels can take ``tensors``: float64 on the CPU."""
    return all(t.device.type == "cpu" and t.dtype == torch.float64 for t in tensors)


def fit_arrays(
    measured: Tensor | None,
    weight: Tensor | None,
    batch: tuple[int, ...],
    shape: tuple[int, ...],
    n_steps: int,
    size: int,
) -> tuple[tuple[int, ...], tuple[int, ...], np.ndarray, np.ndarray]:
    """The measurements a kernel compares with: the batch shape the lanes' inputs share with
    ``measured`` (..., T, ``size``) (``batch`` broadcast with its batch axes), the lanes' batch
    shape (``shape`` broadcast with it), its rows (M, T, ``size``) and the weights (``size``,);
    without measurements, ``batch``, ``shape`` and empty arrays."""
    if measured is None:
        return batch, shape, np.empty((0, n_steps, size)), np.empty(size)
    batch = np.broadcast_shapes(batch, measured.shape[:-2])  # torch's takes ~60 µs
    shape = np.broadcast_shapes(shape, batch)
    rows = measured.detach().expand(*batch, n_steps, size).reshape(-1, n_steps, size)
    return batch, shape, rows.contiguous().numpy(), weight.detach().contiguous().numpy()


def rollout(
    kernel: LaneKernel,
    s0: Tensor,
    consts: Tensor,
    shape: tuple[int, ...],
    fixed: tuple,
    dt: float,
    n_steps: int,
    fit: bool,
) -> tuple[Tensor, Tensor | None]:
    """:func:`run` on one lane per entry of the batch shape ``shape`` (``s0`` (..., S) and
    ``consts`` (..., C) broadcast to it): the states ``(*shape, T, S)`` and None, or with
    ``fit`` the last states ``(*shape, S)`` and the sums of squared residuals ``(*shape)``."""
    lanes, size = math.prod(shape), s0.shape[-1]
    start = s0.expand(*shape, size).reshape(lanes, size)
    values = consts.expand(*shape, consts.shape[-1]).reshape(lanes, -1)
    out, squares = run(kernel, start, values, fixed, dt, n_steps, fit)
    if not fit:
        return out.reshape(*shape, n_steps, size), None
    return out.reshape(*shape, size), squares.reshape(shape)


def run(
    kernel: LaneKernel,
    s0: Tensor,
    consts: Tensor,
    fixed: tuple,
    dt: float,
    n_steps: int,
    fit: bool,
) -> tuple[Tensor, Tensor]:
    """The kernel's rollout of the lanes ``s0`` (L, S) with constants ``consts`` (L, C) and the
    fixed (non-differentiable) arrays ``fixed``: the states (L, T, S) and zeros (L,), or with
    ``fit``, the last states (L, S) and the sums of squared residuals (L,) (a gradient of
    every state would be an array of zeros the size of the rollout, filled on every
    evaluation). Differentiable in ``s0`` and ``consts``."""
    return _Rollout.apply(kernel, s0, consts, fixed, float(dt), int(n_steps), bool(fit))


class _Rollout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, kernel, s0, consts, fixed, dt, n_steps, fit):
        start = s0.detach().contiguous().numpy()
        values = consts.detach().contiguous().numpy()
        states, squares, tape = kernel.forward(start, values, fixed, dt, n_steps, fit)
        ctx.kernel, ctx.tape = kernel, tape
        return torch.from_numpy(states), torch.from_numpy(squares)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad, grad_squares):
        grad = grad if grad.ndim == 3 else grad[:, None]  # the last state's: (L, 1, S)
        g_s0, g_consts = ctx.kernel.backward(
            ctx.tape, grad.contiguous().numpy(), grad_squares.contiguous().numpy()
        )
        return None, torch.from_numpy(g_s0), torch.from_numpy(g_consts), None, None, None, None
