"""Bad input to :func:`physid.pushing.lcp.solve_lcp`: a wrong-sized tensor is named with the
tensor its size comes from, and an LCP with no solution is reported as such."""

from __future__ import annotations

import pytest
import torch

from physid.pushing.lcp import SolverError, solve_lcp

F64 = torch.float64

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def qp(n: int = 3, m: int = 2):
    """A feasible QP: ``Q = I``, ``p = 0``, ``G = [I_m 0]``, ``h = 1``."""
    G = torch.zeros(1, m, n, dtype=F64)
    G[0, :, :m] = torch.eye(m, dtype=F64)
    return (
        torch.eye(n, dtype=F64)[None],
        torch.zeros(1, n, dtype=F64),
        G,
        torch.ones(1, m, dtype=F64),
    )


def test_a_wrong_length_p_is_named_with_both_shapes():
    Q, p, G, h = qp()
    with pytest.raises(
        ValueError,
        match=r"^p must have shape \(B, 3\) to match Q of shape \(1, 3, 3\), got \(1, 4\)",
    ):
        solve_lcp(Q, torch.zeros(1, 4, dtype=F64), G, h)


def test_a_wrong_width_G_is_named_with_Q_and_h():
    Q, p, _, h = qp()
    with pytest.raises(
        ValueError,
        match=r"^G must have shape \(B, 2, 3\) to match Q of shape \(1, 3, 3\) and h of shape "
        r"\(1, 2\), got \(1, 2, 4\)",
    ):
        solve_lcp(Q, p, torch.zeros(1, 2, 4, dtype=F64), h)


def test_a_wrong_length_b_is_named_with_A():
    Q, p, G, h = qp()
    A = torch.ones(1, 1, 3, dtype=F64)
    with pytest.raises(
        ValueError,
        match=r"^b must have shape \(B, 1\) to match A of shape \(1, 1, 3\), got \(1, 2\)",
    ):
        solve_lcp(Q, p, G, h, A=A, b=torch.zeros(1, 2, dtype=F64))


def test_a_non_square_Q_is_named():
    _, p, G, h = qp()
    with pytest.raises(ValueError, match=r"^Q must have shape \(B, n, n\), got \(1, 3, 2\)"):
        solve_lcp(torch.zeros(1, 3, 2, dtype=F64), p, G, h)


def test_a_wrong_batch_size_is_named():
    Q, p, G, h = qp()
    with pytest.raises(
        ValueError, match=r"^p must have a leading dimension of 1 or the batch size 3"
    ):
        solve_lcp(Q.expand(3, 3, 3), p.expand(2, 3), G, h)


@pytest.mark.parametrize(
    "Q, p",
    [
        pytest.param(torch.ones(1, 1, 1, dtype=F64), torch.zeros(1, 1, dtype=F64), id="QP"),
        pytest.param(torch.zeros(1, 1, 1, dtype=F64), torch.zeros(1, 1, dtype=F64), id="LP"),
    ],
)
def test_infeasible_constraints_are_reported_as_no_solution(Q, p):
    """x <= -1 and x >= 1: no x satisfies the constraints; the multipliers diverge."""
    G = torch.tensor([[[1.0], [-1.0]]], dtype=F64)
    h = torch.tensor([[-1.0, -1.0]], dtype=F64)
    with pytest.raises(
        SolverError,
        match=r"^LCP has no solution \(infeasible or unbounded\): the interior-point iterates "
        r"diverged .* residual of the equations was still 1\.000e\+00",
    ):
        solve_lcp(Q, p, G, h)


def test_an_unbounded_problem_is_reported_as_no_solution():
    """min x subject to x <= 1 has no minimiser."""
    Q, p = torch.zeros(1, 1, 1, dtype=F64), torch.ones(1, 1, dtype=F64)
    G, h = torch.ones(1, 1, 1, dtype=F64), torch.ones(1, 1, dtype=F64)
    with pytest.raises(SolverError, match=r"^LCP has no solution .* iterates diverged"):
        solve_lcp(Q, p, G, h)


def test_dependent_equality_rows_are_reported_as_a_singular_system():
    Q, p, G, h = qp()
    A = torch.ones(1, 2, 3, dtype=F64)
    with pytest.raises(SolverError, match=r"KKT system at the start point is singular"):
        solve_lcp(Q, p, G, h, A=A, b=torch.zeros(1, 2, dtype=F64))


def test_a_feasible_qp_still_solves():
    sol = solve_lcp(*qp())
    assert (sol.residual <= 1e-10).all()
    assert torch.allclose(sol.x, torch.zeros(1, 3, dtype=F64), atol=1e-8)
