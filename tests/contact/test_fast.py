"""The batched exact solver against cvxpylayers (the reference) and finite differences."""

import pytest
import torch

from physid.contact import fast, reference, single_cone

#: The contact library computes in float64; tensors made here without a dtype follow.
pytestmark = pytest.mark.usefixtures("float64_default")


def random_problems(B: int, C: int, k: int, seed: int, lb_scale: float = 0.3, mu_min=0.1):
    g = torch.Generator().manual_seed(seed)
    m = C * k
    F = torch.randn(B, m + 1, m, generator=g)
    c = torch.randn(B, m, generator=g)
    mu = mu_min + torch.rand(B, C, generator=g)
    lb = lb_scale * torch.rand(B, C, generator=g)
    return F, c, mu, lb


@pytest.mark.parametrize("k, C", [(1, 3), (2, 1), (2, 2), (3, 1), (3, 2)])
def test_fast_matches_cvxpylayers_in_impulses_and_gradients(k, C):
    F, c, mu, lb = random_problems(12, C, k, seed=10 * k + C)
    weights = torch.randn(12, C, k, generator=torch.Generator().manual_seed(1))
    inputs = [t.clone().requires_grad_(True) for t in (F, c, mu, lb)]
    sol = fast.solve(inputs[0].transpose(1, 2) @ inputs[0], inputs[1], inputs[2], inputs[3], k)
    assert sol.polished.all() and sol.converged.all()
    grads_fast = torch.autograd.grad((sol.impulse * weights).sum(), inputs, allow_unused=True)
    ref_inputs = [t.clone().requires_grad_(True) for t in (F, c, mu, lb)]
    f_ref = reference.solve(*ref_inputs, k)
    grads_ref = torch.autograd.grad((f_ref * weights).sum(), ref_inputs, allow_unused=True)
    assert (sol.impulse - f_ref).abs().max() < 1e-6
    for a, b in zip(grads_fast, grads_ref, strict=True):
        if b is None:  # μ is not a parameter of a limit constraint (k = 1)
            assert a is None or a.abs().max() == 0
            continue
        assert (a - b).abs().max() < 1e-6


@pytest.mark.parametrize("k, C", [(2, 2), (3, 1)])
def test_gradients_pass_gradcheck(k, C):
    F, c, mu, lb = random_problems(2, C, k, seed=k)

    def impulse(F, c, mu, lb):
        sol = fast.solve(F.transpose(1, 2) @ F, c, mu, lb, k)
        assert sol.polished.all()
        return sol.impulse

    args = tuple(t.requires_grad_(True) for t in (F, c, mu, lb))
    assert torch.autograd.gradcheck(impulse, args, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("k", [2, 3])
def test_derivative_at_zero_friction_is_the_one_sided_one(k):
    F, c, _, _ = random_problems(4, 1, k, seed=7)
    c[:, 0] = -c[:, 0].abs()  # approaching contacts
    A = F.transpose(1, 2) @ F
    lb = torch.zeros(4, 1)
    weights = torch.randn(4, 1, k, generator=torch.Generator().manual_seed(2))
    mu = torch.zeros(4, 1, requires_grad=True)
    sol = fast.solve(A, c, mu, lb, k)
    assert sol.polished.all()
    assert sol.impulse[..., 1:].abs().max() < 1e-12
    (grad,) = torch.autograd.grad((sol.impulse * weights).sum(), mu)
    h = 1e-7
    ahead = fast.solve(A, c, torch.full((4, 1), h), lb, k).impulse
    one_sided = ((ahead - sol.impulse.detach()) * weights).sum((1, 2)) / h
    torch.testing.assert_close(grad[:, 0], one_sided, atol=1e-5, rtol=1e-4)


def test_nesterov_todd_scaling_maps_both_points_to_lambda():
    s = torch.tensor([[[2.0, 0.5, 0.3]]])
    z = torch.tensor([[[1.5, -0.4, 0.9]]])
    scaling = fast._nt_scaling(torch.ones(1, 1, 1), torch.ones(1, 1, 1), s, z)
    torch.testing.assert_close(scaling.apply_q(z), scaling.apply_q_inv(s))
    torch.testing.assert_close(scaling.apply_q(scaling.apply_q_inv(s)), s)


def test_singular_problem_is_flagged_not_polished_and_still_optimal():
    # A of rank 1 in a 2-D contact with the interior of the cone optimal along its null space:
    # the minimisers form a segment, so the active-set system is singular.
    A = torch.tensor([[[1.0, 0.0], [0.0, 0.0]]])
    c = torch.tensor([[-1.0, 0.0]])
    mu, lb = torch.tensor([[0.8]]), torch.zeros(1, 1)
    sol = fast.solve(A, c, mu, lb, 2)
    assert bool(sol.converged[0]) and not bool(sol.polished[0])
    f = sol.impulse[0, 0]
    assert f[0] == pytest.approx(1.0, abs=1e-6) and abs(f[1]) <= 0.8 * f[0] + 1e-8


@pytest.mark.parametrize(
    "shapes",
    [
        ((2, 4, 4), (2, 4), (2, 2), (2, 3)),  # lb of the wrong shape
        ((2, 3, 3), (2, 3), (2, 2), (2, 2)),  # m is not C·k
    ],
)
def test_inconsistent_shapes_raise(shapes):
    A, c, mu, lb = (torch.zeros(s) for s in shapes)
    with pytest.raises(ValueError, match="inconsistent shapes"):
        fast.solve(A, c, mu, lb, 2)


def test_reference_layer_is_cached_and_checks_its_arguments():
    assert reference.contact_layer(1, 2, 3) is reference.contact_layer(1, 2, 3)
    with pytest.raises(ValueError, match="k must be <= 3"):
        reference.contact_layer(1, 4, 3)


@pytest.mark.parametrize("k, C", [(2, 3), (3, 1), (1, 4)])
@pytest.mark.parametrize("scale", [1e-5, 1e5])
def test_solution_and_gradient_are_invariant_to_the_scale_of_A(k, C, scale):
    # A learned inverse inertia may be 1e5 times off the data's: the problem in f' = s f with
    # A' = A / s and lb' = s lb is the same one, and the polish must still verify.
    F, c, mu, lb = random_problems(16, C, k, seed=7 * k + C)
    A = F.transpose(1, 2) @ F
    base = fast.solve(A, c, mu, lb, k)
    A_s = (A * scale).requires_grad_(True)
    scaled = fast.solve(A_s, c, mu, lb / scale, k)
    assert base.polished.all() and scaled.polished.all()
    torch.testing.assert_close(scaled.impulse * scale, base.impulse, rtol=1e-8, atol=1e-10)
    A_1 = A.clone().requires_grad_(True)
    (grad_base,) = torch.autograd.grad(fast.solve(A_1, c, mu, lb, k).impulse.sum(), A_1)
    (grad_scaled,) = torch.autograd.grad(scaled.impulse.sum(), A_s)
    torch.testing.assert_close(grad_scaled * scale**2, grad_base, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("k, C", [(3, 1), (2, 1), (3, 2)])
def test_early_polish_is_exact_against_cvxpylayers(k, C, monkeypatch):
    # Polishing after a few interior-point iterations must give the optimum (verified), with
    # its gradient, on random problems with lb > 0, some μ = 0 and a singular A + εI (CMr).
    monkeypatch.setattr(fast, "_EARLY_POLISH", (2, 4))
    F, c, mu, lb = random_problems(24, C, k, seed=40 + 3 * k + C, lb_scale=0.5)
    mu[::5] = 0.0
    F[1::4, -2:] = 0.0  # a rank-deficient factor; εI keeps the minimiser unique
    F = torch.cat([F, 0.1 * torch.eye(C * k).expand(24, -1, -1)], 1)
    weights = torch.randn(24, C, k, generator=torch.Generator().manual_seed(3))
    inputs = [t.clone().requires_grad_(True) for t in (F, c, mu, lb)]
    # The interior point for every sample (one contact would be solved directly).
    sol = fast.solve(inputs[0].mT @ inputs[0], *inputs[1:], k, direct=False)
    assert sol.polished.all() and sol.converged.all()
    grads_fast = torch.autograd.grad((sol.impulse * weights).sum(), inputs)
    ref_inputs = [t.clone().requires_grad_(True) for t in (F, c, mu, lb)]
    f_ref = reference.solve(*ref_inputs, k)
    grads_ref = torch.autograd.grad((f_ref * weights).sum(), ref_inputs)
    assert (sol.impulse - f_ref).abs().max() < 1e-6
    if k == 3:  # (k = 2: two samples of this draw differ from SCS by up to 7e-5 in dF, on
        # either path; see the report of the early polish)
        for name, a, b in zip("F c mu lb".split(), grads_fast, grads_ref, strict=True):
            if name == "mu":  # μ = 0 is a kink: the fast solver gives the one-sided derivative
                a, b = a[mu != 0], b[mu != 0]
            assert (a - b).abs().max() < 1e-6, name
    # The same impulse and gradient as polishing only after the interior point converged.
    monkeypatch.setattr(fast, "_EARLY_POLISH", ())
    late_inputs = [t.clone().requires_grad_(True) for t in (F, c, mu, lb)]
    late = fast.solve(late_inputs[0].mT @ late_inputs[0], *late_inputs[1:], k, direct=False)
    grads_late = torch.autograd.grad((late.impulse * weights).sum(), late_inputs)
    torch.testing.assert_close(sol.impulse, late.impulse, rtol=0, atol=1e-12)
    for a, b in zip(grads_fast, grads_late, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)


def test_reference_layers_built_per_call_give_the_cached_answer():
    F, c, mu, lb = random_problems(3, 1, 3, seed=5)
    cached = reference.solve(F, c, mu, lb, 3, batched=False)
    before = reference.contact_layer.cache_info().misses
    per_call = reference.solve(F, c, mu, lb, 3, batched=False, per_call=True)
    with reference.layers_built_per_call():
        inside = reference.solve(F, c, mu, lb, 3, batched=False)
    assert reference.contact_layer.cache_info().misses == before
    torch.testing.assert_close(per_call, cached, rtol=0, atol=1e-8)
    torch.testing.assert_close(inside, cached, rtol=0, atol=1e-8)
    assert reference.build_layer(1, 3, 4) is not reference.build_layer(1, 3, 4)
    with pytest.raises(TypeError, match="per_call"):
        reference.solve(F, c, mu, lb, 3, per_call=1)


@pytest.mark.parametrize("lb_scale", [0.0, 0.5, 3.0])
def test_single_spatial_contact_solved_directly_matches_the_interior_point(lb_scale):
    # Every piece of the cone holds some minimisers of this draw: the interior, the face at the
    # bound, the apex (lb = 0), the surface and its rim at the bound. μ = 0 takes the
    # interior point.
    F, c, mu, lb = random_problems(120, 1, 3, seed=11, lb_scale=lb_scale)
    mu[::10] = 0.0
    weights = torch.randn(120, 1, 3, generator=torch.Generator().manual_seed(5))
    solutions, grads = [], []
    for direct in (True, False):
        inputs = [t.clone().requires_grad_(True) for t in (F, c, mu, lb)]
        sol = fast.solve(inputs[0].mT @ inputs[0], *inputs[1:], 3, direct=direct)
        assert sol.polished.all()
        solutions.append(sol)
        grads.append(torch.autograd.grad((sol.impulse * weights).sum(), inputs))
    direct = solutions[0].enumerated
    assert not direct[::10].any() and direct.float().mean() > 0.85
    torch.testing.assert_close(solutions[0].impulse, solutions[1].impulse, rtol=0, atol=1e-9)
    for name, a, b in zip("F c mu lb".split(), *grads, strict=True):
        if name == "lb":  # at the apex the polish may take either derivative in lb
            apex = solutions[0].impulse.abs().amax(-1) < 1e-12
            a, b = a[~apex], b[~apex]
        torch.testing.assert_close(a, b, rtol=1e-7, atol=1e-7, msg=name)
    f = solutions[0].impulse.detach()[:, 0]
    at_bound = (f[:, 0] - lb[:, 0]).abs() < 1e-9
    on_surface = (mu[:, 0] * f[:, 0] - f[:, 1:].norm(dim=-1)).abs() < 1e-9
    pieces = {
        "interior": ~at_bound & ~on_surface,
        "surface": on_surface & ~at_bound,
        "rim" if lb_scale else "apex": at_bound & on_surface,
    }
    if lb_scale:  # at lb = 0 the face is the apex
        pieces["face"] = at_bound & ~on_surface
    for piece, where in pieces.items():
        assert bool((where & direct).any()), f"no {piece} minimiser solved directly"


@pytest.mark.parametrize("lb_scale", [0.0, 0.5, 3.0])
def test_the_compiled_single_cone_is_the_batched_one(lb_scale):
    # The CPU's compiled path against the tensor form that runs elsewhere: the same samples
    # verify, with the same impulses and implicit derivatives (μ = 0 is left to both).
    F, c, mu, lb = random_problems(120, 1, 3, seed=12, lb_scale=lb_scale)
    mu[::10] = 0.0
    c[1::5] = c[1::5].abs()  # pulled away: the apex where lb = 0
    weights = torch.randn(120, 1, 3, generator=torch.Generator().manual_seed(6))
    out = []
    for solver in (single_cone.solve, fast._single_cone):
        inputs = [t.clone().requires_grad_(True) for t in (F, c, mu, lb)]
        f, solved = solver(inputs[0].mT @ inputs[0], *inputs[1:], 8)
        out.append((f, solved, torch.autograd.grad((f * weights).sum(), inputs)))
    (f, solved, grads), (f_ref, solved_ref, grads_ref) = out
    assert solved.tolist() == solved_ref.tolist() and not solved[::10].any()
    assert solved.float().mean() > 0.85
    torch.testing.assert_close(f, f_ref, rtol=0, atol=1e-11)
    for name, a, b in zip("F c mu lb".split(), grads, grads_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-8, msg=name)


def test_a_nearly_singular_cone_problem_is_solved_directly():
    # A gyroscope's problem under CM (A has the least-norm term's eigenvalue 1e-6): on the
    # cone's surface two local minima of the angle differ by 1e-6 of the objective, less than
    # the grid of 32 angles resolves; starting Newton's method from the grid's best alone ended
    # in the wrong one, which did not verify, and the sample went to the interior point.
    A = torch.tensor([[[0.7751744676697192, 0.4529729445730819, -0.3392670747945409],
                       [0.4529729445730819, 0.6702787813606822, 0.38942184268833224],
                       [-0.3392670747945409, 0.38942184268833224, 1.0]]])
    c = torch.tensor([[-1.1917946110953035, -0.8111866559849661, 0.35532410814738913]])
    mu, lb = torch.tensor([[0.25513473986843827]]), torch.zeros(1, 1)
    assert float(torch.linalg.eigvalsh(A).min()) < 1.1e-6
    inner = fast.solve(A, c, mu, lb, 3, tol=1e-11, direct=False)
    assert inner.polished.all()
    for solver in (single_cone.solve, fast._single_cone):
        f, solved = solver(A, c, mu, lb, 8)
        assert solved.all(), solver
        torch.testing.assert_close(f, inner.impulse, rtol=0, atol=1e-7)


def test_the_compiled_single_cone_passes_gradcheck():
    F, c, mu, lb = random_problems(4, 1, 3, seed=7, lb_scale=0.4)

    def impulse(F, c, mu, lb):
        f, solved = single_cone.solve(F.mT @ F, c, mu, lb, 8)
        assert solved.all()
        return f

    args = tuple(t.requires_grad_(True) for t in (F, c, mu, lb))
    assert torch.autograd.gradcheck(impulse, args, eps=1e-6, atol=1e-6, rtol=1e-5)
