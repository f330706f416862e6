"""The batched interior-point LCP solver against cvxpy, and its implicit gradients."""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
import torch

from physid.pushing.lcp import SolverError, solve_lcp

F64 = torch.float64


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def random_qp(seed: int, batch: int = 3, n: int = 5, m: int = 8, neq: int = 2):
    g = torch.Generator().manual_seed(seed)
    L = torch.randn(batch, n, n, generator=g, dtype=F64)
    Q = L @ L.mT + 0.5 * torch.eye(n, dtype=F64)
    p = torch.randn(batch, n, generator=g, dtype=F64)
    G = torch.randn(batch, m, n, generator=g, dtype=F64)
    x0 = torch.randn(batch, n, generator=g, dtype=F64)
    h = (G @ x0.unsqueeze(-1)).squeeze(-1) + torch.rand(batch, m, generator=g, dtype=F64)
    A = torch.randn(batch, neq, n, generator=g, dtype=F64)
    b = (A @ x0.unsqueeze(-1)).squeeze(-1)
    return Q, p, G, h, A, b


def test_convex_qp_matches_cvxpy():
    Q, p, G, h, A, b = random_qp(0)
    sol = solve_lcp(Q, p, G, h, A=A, b=b)
    assert (sol.residual <= 1e-10).all()
    for i in range(len(Q)):
        x = cp.Variable(Q.shape[-1])
        objective = 0.5 * cp.quad_form(x, Q[i].numpy()) + p[i].numpy() @ x
        constraints = [G[i].numpy() @ x <= h[i].numpy(), A[i].numpy() @ x == b[i].numpy()]
        cp.Problem(cp.Minimize(objective), constraints).solve()
        np.testing.assert_allclose(sol.x[i].numpy(), x.value, atol=1e-6)
        # Complementarity of the returned slacks and multipliers.
        assert sol.s[i].min() >= -1e-9 and sol.z[i].min() >= -1e-12
        assert float((sol.s[i] * sol.z[i]).abs().max()) < 1e-9


def test_monotone_lcp_matches_cvxpy():
    """0 ≤ z ⊥ h + F z ≥ 0 with F symmetric positive definite: the KKT of a bound-constrained QP."""
    g = torch.Generator().manual_seed(1)
    m = 7
    L = torch.randn(2, m, m, generator=g, dtype=F64)
    F = L @ L.mT + 0.1 * torch.eye(m, dtype=F64)
    h = torch.randn(2, m, generator=g, dtype=F64)
    one = torch.ones(2, 1, 1, dtype=F64)
    sol = solve_lcp(one, torch.zeros(2, 1, dtype=F64), torch.zeros(2, m, 1, dtype=F64), h,
                    [F.unsqueeze(1)])
    for i in range(2):
        z = cp.Variable(m)
        cp.Problem(cp.Minimize(0.5 * cp.quad_form(z, F[i].numpy()) + h[i].numpy() @ z),
                   [z >= 0]).solve()
        np.testing.assert_allclose(sol.z[i].numpy(), z.value, atol=1e-6)
    w = h + (F @ sol.z.unsqueeze(-1)).squeeze(-1)
    assert w.min() > -1e-9 and float((w * sol.z).abs().max()) < 1e-9


def test_skew_friction_blocks_satisfy_complementarity():
    """Block-diagonal F with friction-like skew blocks [[0, 1], [−1ᵀ, 0]] (monotone, singular)."""
    g = torch.Generator().manual_seed(2)
    n, count, dirs = 3, 6, 4
    size = dirs + 1
    blk = torch.zeros(size, size, dtype=F64)
    blk[:dirs, dirs], blk[dirs, :dirs] = 1.0, -1.0
    rows = torch.randn(count, dirs, n, generator=g, dtype=F64)
    G = torch.cat([rows, torch.zeros(count, 1, n, dtype=F64)], 1).reshape(1, -1, n)
    bound = torch.rand(count, generator=g, dtype=F64)
    h = torch.cat([torch.zeros(count, dirs, dtype=F64), bound[:, None]], 1).reshape(1, -1)
    Q = torch.eye(n, dtype=F64).unsqueeze(0)
    p = torch.randn(1, n, generator=g, dtype=F64)
    sol = solve_lcp(Q, p, G, h, [blk.expand(1, count, size, size)])
    s, z = sol.s[0], sol.z[0]
    assert s.min() > -1e-9 and z.min() > -1e-12 and float((s * z).abs().max()) < 1e-9
    stationarity = Q[0] @ sol.x[0] + p[0] + G[0].T @ z
    assert float(stationarity.abs().max()) < 1e-9


def test_gradients_match_finite_differences():
    g = torch.Generator().manual_seed(3)
    batch, n, m, neq = 2, 4, 8, 1
    L = torch.randn(batch, n, n, generator=g, dtype=F64)
    Q = L @ L.mT + torch.eye(n, dtype=F64)
    p = torch.randn(batch, n, generator=g, dtype=F64)
    G = torch.randn(batch, m, n, generator=g, dtype=F64)
    h = torch.rand(batch, m, generator=g, dtype=F64) + 0.1
    A = torch.randn(batch, neq, n, generator=g, dtype=F64)
    b = 0.1 * torch.randn(batch, neq, generator=g, dtype=F64)
    K = 0.3 * torch.randn(batch, 2, 2, 2, generator=g, dtype=F64)
    blocks = [K @ K.mT + (K - K.mT), 0.2 * torch.eye(4, dtype=F64).expand(batch, 1, 4, 4).clone()]

    def solve(Q, p, G, h, A, b, F1, F2):
        sol = solve_lcp(Q, p, G, h, [F1, F2], A, b, tol=1e-13)
        return sol.x, sol.z, sol.y

    inputs = [t.clone().requires_grad_() for t in (Q, p, G, h, A, b, *blocks)]
    assert torch.autograd.gradcheck(solve, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)


def test_no_convergence_raises_with_residual():
    Q, p, G, h, A, b = random_qp(4)
    with pytest.raises(SolverError, match=r"residual \d\.\d+e[+-]\d+ > tol"):
        solve_lcp(Q, p, G, h, A=A, b=b, max_iter=1)


def test_non_finite_data_raises_instead_of_nan():
    Q, p, G, h, A, b = random_qp(5)
    h[1, 0] = float("nan")
    with pytest.raises(ValueError, match="^h must be finite, found nan"):
        solve_lcp(Q, p, G, h, A=A, b=b)


@pytest.mark.parametrize(
    ("change", "name", "error"),
    [
        (lambda t: {**t, "G": t["G"][:, :, :3]}, "G", ValueError),
        (lambda t: {**t, "h": t["h"].float()}, "h", TypeError),
        (lambda t: {**t, "b": t["b"][:, :1]}, "b", ValueError),
        (lambda t: {**t, "tol": 0.0}, "tol", ValueError),
        (lambda t: {**t, "max_iter": 0}, "max_iter", ValueError),
        (lambda t: {**t, "max_iter": 2.5}, "max_iter", TypeError),
    ],
)
def test_bad_shapes_or_dtypes_name_the_argument(change, name, error):
    Q, p, G, h, A, b = random_qp(6)
    args = change({"Q": Q, "p": p, "G": G, "h": h, "A": A, "b": b})
    with pytest.raises(error, match=rf"^{name} must"):
        solve_lcp(args.pop("Q"), args.pop("p"), args.pop("G"), args.pop("h"), **args)


def test_blocks_must_cover_z():
    Q, p, G, h, _, _ = random_qp(7)
    with pytest.raises(ValueError, match="F_blocks cover 4 rows"):
        solve_lcp(Q, p, G, h, [torch.zeros(1, 1, 4, 4, dtype=F64)])


def _block_pushed_by_finger(mu: float, angle: float, batch: int = 1):
    """A free unit mass on a frictionless plane, pushed by a finger moving at 1 m/s along a
    direction ``angle`` from the contact normal +y: the finger's rows of
    :class:`~physid.pushing.finger.FingerRows` alone, with Coulomb friction ``mu``."""
    from physid.pushing.finger import FingerRows

    velocity = torch.tensor([[math.sin(angle), math.cos(angle)]], dtype=F64).expand(batch, 2)
    J = torch.eye(2, dtype=F64).expand(batch, 2, 2)
    normal = torch.tensor([[0.0, 1.0]], dtype=F64).expand(batch, 2)
    rows = FingerRows.build(J, normal, torch.zeros(batch, dtype=F64), velocity, mu, 0.01)
    Q = torch.eye(2, dtype=F64).expand(batch, 2, 2)
    p = torch.zeros(batch, 2, dtype=F64)
    return Q, p, rows, velocity


@pytest.mark.parametrize(("mu", "angle"), [(1.0, 0.3), (0.2, 0.3), (0.0, 0.5), (0.5, -0.7)])
def test_coupled_friction_is_coulomb(mu, angle):
    """With the bound μ λ_n coupled into F, a block at rest pushed by a finger sticks when
    tan(angle) ≤ μ (it moves with the finger) and otherwise slides with the friction on the
    cone's edge: the exact Coulomb law of Figure 2, which the fixed-point rounds solve."""
    from physid.pushing.finger import FingerRows
    from physid.pushing.lcp import Coupling

    Q, p, rows, velocity = _block_pushed_by_finger(mu, angle)
    coupling = Coupling(block=0, row=FingerRows.BOUND_ROW, col=FingerRows.NORMAL_COL,
                        mu=rows.mu)
    sol = solve_lcp(Q, p, rows.G, rows.h, [rows.block], coupling=coupling)
    lam_n, lam_plus, lam_minus = (float(sol.z[0, i]) for i in range(3))
    v = sol.x[0].numpy()
    assert v[1] == pytest.approx(math.cos(angle), abs=1e-8)  # the finger's normal velocity
    assert lam_n == pytest.approx(math.cos(angle), abs=1e-8)  # unit mass: impulse = velocity
    friction = -(lam_plus - lam_minus)  # along x: the tangent ẑ × n is −x
    if math.tan(abs(angle)) <= mu:
        assert v[0] == pytest.approx(math.sin(angle), abs=1e-8)
    else:
        assert abs(friction) == pytest.approx(mu * lam_n, abs=1e-8)
        assert v[0] == pytest.approx(friction, abs=1e-8)
        assert abs(v[0]) < abs(math.sin(angle))  # it lags the finger: the finger slides


def test_coupled_friction_gradient_is_exact():
    """The implicit gradient of the coupled system, μ included, against finite differences."""
    from physid.pushing.finger import FingerRows
    from physid.pushing.lcp import Coupling

    def slide(mu: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
        velocity = torch.stack([torch.sin(angle), torch.cos(angle)]).unsqueeze(0)
        J = torch.eye(2, dtype=F64).unsqueeze(0)
        normal = torch.tensor([[0.0, 1.0]], dtype=F64)
        rows = FingerRows.build(J, normal, torch.zeros(1, dtype=F64), velocity, 0.0, 0.01)
        coupling = Coupling(block=0, row=FingerRows.BOUND_ROW, col=FingerRows.NORMAL_COL,
                            mu=mu.reshape(1, 1))
        sol = solve_lcp(torch.eye(2, dtype=F64).unsqueeze(0), torch.zeros(1, 2, dtype=F64),
                        rows.G, rows.h, [rows.block], coupling=coupling, tol=1e-12)
        return sol.x

    inputs = (torch.tensor(0.3, dtype=F64, requires_grad=True),
              torch.tensor(0.6, dtype=F64, requires_grad=True))
    assert torch.autograd.gradcheck(slide, inputs, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_bad_coupling_raises():
    from physid.pushing.lcp import Coupling

    Q, p, rows, _ = _block_pushed_by_finger(0.5, 0.2)
    for kwargs, message in (
        ({"block": 3}, "coupling.block"),
        ({"row": 7}, "coupling.row"),
        ({"mu": -rows.mu}, "coupling.mu"),
    ):
        args = {"block": 0, "row": 3, "col": 0, "mu": rows.mu, **kwargs}
        with pytest.raises(ValueError, match=message):
            solve_lcp(Q, p, rows.G, rows.h, [rows.block], coupling=Coupling(**args))
