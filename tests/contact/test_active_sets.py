"""Small contact problems by enumeration of active sets, against the interior point."""

import pytest
import torch

from physid.contact import active_sets, fast
from tests.contact.test_fast import random_problems

pytestmark = pytest.mark.usefixtures("float64_default")


@pytest.mark.parametrize("k, C", [(1, 1), (1, 5), (2, 1), (2, 2)])
@pytest.mark.parametrize("lb_scale", [0.0, 0.5])
def test_enumeration_matches_the_interior_point_in_impulses_and_gradients(k, C, lb_scale):
    F, c, mu, lb = random_problems(20, C, k, seed=20 + 3 * k + C, lb_scale=lb_scale)
    mu[::6] = 0.0  # the one-sided derivative at μ = 0, as the polish gives it
    F = torch.cat([F, 0.05 * torch.eye(C * k).expand(20, -1, -1)], 1)
    weights = torch.randn(20, C, k, generator=torch.Generator().manual_seed(4))
    solutions, grads = [], []
    for enumerate_sets in (True, False):
        inputs = [t.clone().requires_grad_(True) for t in (F, c, mu, lb)]
        sol = fast.solve(inputs[0].mT @ inputs[0], *inputs[1:], k, direct=enumerate_sets)
        assert sol.polished.all()
        solutions.append(sol)
        grad = torch.autograd.grad((sol.impulse * weights).sum(), inputs, allow_unused=True)
        grads.append(
            [torch.zeros_like(t) if g is None else g for t, g in zip(inputs, grad, strict=True)]
        )
    assert solutions[0].iterations == 0 and solutions[1].iterations > 0
    torch.testing.assert_close(solutions[0].impulse, solutions[1].impulse, rtol=0, atol=1e-9)
    # At an apex with lb = 0 the polish may take the two cone sides, which give no derivative
    # in lb (test_apex_derivative_in_lb_is_the_bound_s below).
    apex = (solutions[0].impulse.abs().amax(-1) < 1e-12) & (lb == 0)
    grads[1][3] = torch.where(apex, grads[0][3], grads[1][3])
    for name, a, b in zip("F c mu lb".split(), *grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-7, atol=1e-7, msg=name)


def test_apex_derivative_in_lb_is_the_bound_s():
    # One planar contact pulled away (f = 0, every constraint active at lb = 0): raising lb to
    # ε forces f_n = ε, and f_t = ∓με on the cone side opposite the tangential pull.
    A = torch.tensor([[[2.0, 0.3], [0.3, 1.0]]])
    c = torch.tensor([[1.0, -0.2]])
    mu = torch.tensor([[0.5]])
    lb = torch.zeros(1, 1, requires_grad=True)
    f, solved = active_sets.solve(A, c, mu, lb, 2)
    assert solved.all() and f.abs().max() < 1e-15  # the apex, to rounding
    rows = [torch.autograd.grad(f[0, 0, i], lb, retain_graph=True)[0].item() for i in range(2)]
    eps = 1e-7
    ahead = fast.solve(A, c, mu, torch.full((1, 1), eps), 2, direct=False)
    assert rows == pytest.approx((ahead.impulse[0, 0] / eps).tolist(), abs=1e-6)
    assert rows == pytest.approx([1.0, 0.5])


def test_enumerated_gradient_passes_gradcheck():
    F, c, mu, lb = random_problems(3, 1, 2, seed=5, lb_scale=0.4)

    def impulse(F, c, mu, lb):
        f, solved = active_sets.solve(F.mT @ F, c, mu, lb, 2)
        assert solved.all()
        return f

    args = tuple(t.requires_grad_(True) for t in (F, c, mu, lb))
    assert torch.autograd.gradcheck(impulse, args, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_singular_problem_is_left_to_the_interior_point():
    # The minimisers of this problem form a segment: no active set identifies one of them.
    A = torch.tensor([[[1.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]])
    c = torch.tensor([[-1.0, 0.0], [-1.0, 0.5]])
    mu, lb = torch.tensor([[0.8], [0.8]]), torch.zeros(2, 1)
    f, solved = active_sets.solve(A, c, mu, lb, 2)
    assert solved.tolist() == [False, True]
    torch.testing.assert_close(f[1, 0], torch.tensor([1.0, -0.5]))
    sol = fast.solve(A, c, mu, lb, 2)
    assert sol.polished.tolist() == [False, True] and bool(sol.converged[0])


def test_sizes_beyond_the_enumeration_raise_and_are_not_enumerated():
    # The batched form is bounded by its work over the whole batch, the compiled one (the
    # CPU's) by the contact count alone.
    assert active_sets.supports(200, 1, 2) and active_sets.supports(25, 2, 2)
    assert not active_sets.supports(200, 2, 2) and not active_sets.supports(1, 4, 2)
    assert not active_sets.supports(1, 1, 3) and active_sets.supports(1, 8, 1)
    assert active_sets.supports(200, 4, 2, compiled=True)
    assert active_sets.supports(500, 10, 1, compiled=True)
    assert not active_sets.supports(1, 5, 2, compiled=True)
    assert not active_sets.supports(1, 1, 3, compiled=True)
    F, c, mu, lb = random_problems(200, 2, 2, seed=1)
    with pytest.raises(ValueError, match="B=200"):
        active_sets._solve_batched(F.mT @ F, c, mu, lb, 2)
    F, c, mu, lb = random_problems(2, 5, 2, seed=1)
    with pytest.raises(ValueError, match="C=5"):
        active_sets.solve(F.mT @ F, c, mu, lb, 2)
    with pytest.raises(TypeError, match="direct"):
        fast.solve(F.mT @ F, c, mu, lb, 2, direct=1)


@pytest.mark.parametrize("k, C, B", [(1, 1, 30), (1, 5, 30), (2, 1, 30), (2, 2, 30), (1, 6, 6)])
def test_the_compiled_enumeration_is_the_batched_one(k, C, B):
    # The CPU's compiled path against the tensor form that runs elsewhere: the same sets
    # verify, the same impulses and the same implicit derivatives, on problems with μ = 0, an
    # apex (c pulling away at lb = 0) and a singular A among them (unsolved, with a zero
    # impulse and no derivative on either path).
    F, c, mu, lb = random_problems(B, C, k, seed=31 + 5 * k + C, lb_scale=0.5)
    lb[::4] = 0.0
    mu[::5] = 0.0
    c[1::4] = c[1::4].abs()  # pulled away: the apex where lb = 0
    F = torch.cat([F, 0.05 * torch.eye(C * k).expand(B, -1, -1)], 1)
    F[-1, :, -1] = 0.0  # A singular: no unique minimiser
    weights = torch.randn(B, C, k, generator=torch.Generator().manual_seed(2))
    out = []
    for solver in (active_sets.solve, active_sets._solve_batched):
        inputs = [t.clone().requires_grad_(True) for t in (F, c, mu, lb)]
        f, solved = solver(inputs[0].mT @ inputs[0], *inputs[1:], k)
        grads = torch.autograd.grad((f * weights).sum(), inputs, allow_unused=True)
        grads = [torch.zeros_like(t) if g is None else g
                 for t, g in zip(inputs, grads, strict=True)]
        out.append((f, solved, grads))
    (f, solved, grads), (f_ref, solved_ref, grads_ref) = out
    assert solved.tolist() == solved_ref.tolist() and not solved[-1] and solved[:-1].all()
    scale = 1 + f_ref.abs().amax((1, 2), keepdim=True)
    torch.testing.assert_close(f / scale, f_ref / scale, rtol=0, atol=1e-13)
    for name, a, b in zip("F c mu lb".split(), grads, grads_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9, msg=name)
    if k == 1:
        assert grads[2].abs().max() == 0  # μ is not a parameter of a limit



def test_contacts_that_nothing_couples_are_solved_alone_with_the_same_answer():
    # Contacts 0 and 1 coupled; contact 2 on a body no other contact touches (odd samples) or
    # a dummy as the integrator pads with (even samples: a unit block, separating, μ = lb =
    # 0): the compiled path solves contact 2 alone first and tries only the sets that agree
    # with its own; the batched path (one sample at a time, its size limit) tries every set.
    # The same sets verify, with the same impulses and derivatives.
    B, k = 12, 2
    g = torch.Generator().manual_seed(5)
    _, c, mu, lb = random_problems(B, 3, k, seed=8, lb_scale=0.5)
    F = torch.zeros(B, 8, 6)
    F[:, :5, :4] = torch.randn(B, 5, 4, generator=g)
    F[:, 5:, 4:] = torch.randn(B, 3, 2, generator=g)
    F[::2, 5:, 4:] = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    c[::2, 4:] = torch.tensor([1.0, 0.0])
    mu[::2, 2] = 0.0
    lb[::2, 2] = 0.0
    c[1::4, 4] = c[1::4, 4].abs()  # contact 2 pulled away: at its apex where lb = 0
    A = F.mT @ F
    assert (A[:, 4:, :4] == 0).all()
    weights = torch.randn(B, 3, k, generator=g)

    def solved_with(solver, rows):
        inputs = [t[rows].clone().requires_grad_(True) for t in (A, c, mu, lb)]
        f, solved = solver(*inputs, k)
        grads = torch.autograd.grad((f * weights[rows]).sum(), inputs, allow_unused=True)
        return f, solved, [torch.zeros_like(t) if d is None else d
                           for t, d in zip(inputs, grads, strict=True)]

    f, solved, grads = solved_with(active_sets.solve, slice(None))
    assert solved.all() and (f[::2, 2] == 0).all()
    for b in range(B):
        f_ref, solved_ref, grads_ref = solved_with(active_sets._solve_batched, slice(b, b + 1))
        assert solved_ref.all()
        torch.testing.assert_close(f[b : b + 1], f_ref, rtol=0, atol=1e-12)
        for name, a, d in zip("A c mu lb".split(), grads, grads_ref, strict=True):
            torch.testing.assert_close(a[b : b + 1], d, rtol=1e-9, atol=1e-9, msg=name)
