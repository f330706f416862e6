"""The two-phase contact model: validation, energy, restitution, fallbacks, the frame."""

import dataclasses

import pytest
import torch

from physid.contact import fast
from physid.contact.lcp import LCPModel, lemke
from physid.contact.mechanics import Constraints
from physid.contact.model import (
    ContactModel,
    ContactSolverError,
    ContactSpace,
    SolverLog,
    authors_target,
    contact_frame,
    penetration_target,
)

#: The contact library computes in float64; tensors made here without a dtype follow.
pytestmark = pytest.mark.usefixtures("float64_default")


def space(B=16, C=1, k=2, seed=0, mu=0.5, cor=0.7, approaching=True):
    g = torch.Generator().manual_seed(seed)
    m = C * k
    factor = torch.randn(B, m + 2, m, generator=g)
    velocity = torch.randn(B, m, generator=g)
    if approaching:
        velocity.view(B, C, k)[..., 0] = -velocity.view(B, C, k)[..., 0].abs()
    return ContactSpace(
        factor=factor,
        velocity=velocity,
        target=torch.zeros(B, m),
        mu=torch.full((B, C), mu),
        cor=torch.full((B, C), cor),
        k=k,
    )


def energy_change(s: ContactSpace, impulse: torch.Tensor) -> torch.Tensor:
    f = impulse.flatten(1)
    return (f * (s.velocity + 0.5 * (s.A @ f[..., None])[..., 0])).sum(-1)


@pytest.mark.parametrize("k, mu, cor", [(2, 0.5, 1.0), (2, 1.2, 0.4), (3, 0.3, 0.9), (1, 0.0, 0.5)])
def test_poisson_restitution_never_creates_energy(k, mu, cor):
    s = space(B=40, C=2, k=k, mu=mu, cor=cor, seed=k)
    res = ContactModel().resolve(s)
    assert energy_change(s, res.impulse).max() <= 1e-10
    # Compression is the maximum-dissipation impulse: no feasible impulse loses more energy.
    assert (
        energy_change(s, res.compression) <= energy_change(s, 0.9 * res.compression) + 1e-12
    ).all()


def test_frictionless_elastic_impact_reverses_the_normal_velocity():
    s = space(B=8, C=1, k=2, mu=0.0, cor=1.0)
    res = ContactModel().resolve(s)
    torch.testing.assert_close(res.velocity_after[:, 0], -s.velocity[:, 0])
    assert energy_change(s, res.impulse).abs().max() < 1e-12


def test_poisson_and_newton_agree_on_frictionless_single_impacts():
    s = space(B=8, C=1, k=2, mu=0.0, cor=0.6)
    cm = ContactModel().resolve(s)
    lcp = LCPModel().resolve(s)
    torch.testing.assert_close(cm.velocity_after, lcp.velocity_after)


def test_lemke_solves_a_known_lcp():
    M = torch.tensor([[2.0, 1.0], [1.0, 2.0]]).numpy()
    q = torch.tensor([-5.0, -6.0]).numpy()
    z = lemke(M, q)
    w = M @ z + q
    assert (z >= -1e-12).all() and (w >= -1e-12).all() and abs(z @ w) < 1e-10
    assert z == pytest.approx([4 / 3, 7 / 3])


def test_cmr_is_close_to_cm_and_both_solvers_agree():
    s = space(B=12, C=2, k=2, seed=3)
    cm = ContactModel().resolve(s)
    cmr = ContactModel(variant="CMr", reg=1e-6).resolve(s)
    scale = 1 + cm.impulse.abs().amax((1, 2), keepdim=True)
    assert ((cm.impulse - cmr.impulse).abs() / scale).max() < 1e-3
    ref = ContactModel(variant="CMr", reg=1e-6, solver="reference").resolve(s)
    assert (ref.impulse - cmr.impulse).abs().max() < 1e-6


def singular_space(requires_grad: bool) -> ContactSpace:
    # Rank-1 A with an interior optimum: every f_t in [-0.8, 0.8] minimises problem (5).
    factor = torch.tensor([[[1.0, 0.0]]]).repeat(3, 1, 1).requires_grad_(requires_grad)
    velocity = torch.tensor([[-1.0, 0.0]]).repeat(3, 1)
    mu, cor = torch.full((3, 1), 0.8), torch.full((3, 1), 0.5)
    return ContactSpace(factor, velocity, torch.zeros(3, 2), mu, cor, k=2)


@pytest.mark.parametrize("solver", ["fast", "reference"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_cm_returns_the_least_norm_minimiser_on_every_path(solver, requires_grad):
    log = SolverLog()
    s = singular_space(requires_grad)
    res = ContactModel(solver=solver).resolve(s, log)
    tol = 1e-9 if solver == "fast" else 1e-4
    expected_c = torch.tensor([[1.0, 0.0]]).repeat(3, 1)
    expected_r = torch.tensor([[0.5, 0.0]]).repeat(3, 1)
    torch.testing.assert_close(res.compression[:, 0].detach(), expected_c, atol=tol, rtol=0)
    torch.testing.assert_close(res.restitution[:, 0].detach(), expected_r, atol=tol, rtol=0)
    if solver == "fast":
        assert log.fast_exact == log.fast_enumerated == 6
        assert log.fallbacks == 0 and log.fast_unpolished == 0
    if requires_grad:
        res.velocity_after.sum().backward()
        assert torch.isfinite(s.factor.grad).all()


def test_fast_solver_failures_fall_back_and_are_counted(monkeypatch):
    s = singular_space(True)
    real = fast._solve

    def unpolished(*args, **kwargs):
        solution = real(*args, **kwargs)
        return dataclasses.replace(solution, polished=torch.zeros_like(solution.polished))

    monkeypatch.setattr(fast, "_solve", unpolished)
    log = SolverLog()
    res = ContactModel().resolve(s, log)
    assert log.fallbacks == 6 and log.problems == 6
    assert "cvxpylayers fallbacks" in log.summary()
    res.velocity_after.sum().backward()
    assert torch.isfinite(s.factor.grad).all()
    with pytest.raises(ContactSolverError, match="fallback=False"):
        ContactModel(fallback=False).resolve(s)
    with torch.no_grad():  # no gradient needed: the interior point's optimum is used
        log = SolverLog()
        ContactModel(fallback=False).resolve(singular_space(False), log)
        assert log.fast_unpolished == 6 and log.fallbacks == 0


def test_penetration_target_corrects_an_eighth_per_step():
    target = penetration_target(torch.tensor([[-0.008, 0.002]]), k=2, dt=0.01)
    torch.testing.assert_close(target, torch.tensor([[0.1, 0.0, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="dt"):
        penetration_target(torch.zeros(1, 1), k=2, dt=0.0)


def test_restitution_target_separates_a_penetrating_inelastic_contact():
    s = space(B=4, C=1, k=2, mu=0.0, cor=0.0)
    target = penetration_target(torch.full((4, 1), -0.01), 2, 0.01)
    s = ContactSpace(s.factor, s.velocity, target, s.mu, s.cor, 2)
    res = ContactModel().resolve(s)
    torch.testing.assert_close(res.velocity_after[:, 0], torch.full((4,), 0.125))


def test_frame_gives_the_constrained_inverse_inertia():
    # Two points joined by a rod of length 1 along x; a contact on point 1.
    minv = torch.diag(torch.tensor([2.0, 2.0, 1.0, 1.0]))
    x = torch.tensor([[0.0, 0.0, 1.0, 0.0]])
    G = Constraints(dim=2, n_points=2, distances=[(1, 0, 1.0)]).jacobian(x)
    J = torch.tensor([[[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]])
    frame = contact_frame(minv, J, G)
    mg = minv @ G.transpose(1, 2)
    hat = minv - mg @ torch.linalg.solve(G @ mg, mg.transpose(1, 2))
    torch.testing.assert_close(
        frame.factor.transpose(1, 2) @ frame.factor, J @ hat @ J.transpose(1, 2)
    )
    dv = frame.velocity_change(torch.tensor([[[0.3, -0.2]]]))
    assert (G @ dv[..., None]).abs().max() < 1e-12  # the impulse respects the rod


@pytest.mark.parametrize("rows, constraints", [(3, 0), (3, 2), (9, 0), (9, 2)])
def test_authors_target_is_their_formula_and_lies_in_the_range_of_A(rows, constraints):
    """The authors' projection of v*, written out as their two branches (contacts
    outnumbering the freedoms or not), on random full-rank Jacobians: J (JᵀJ)⁻¹ Jᵀ v* or
    v* − J Gᵀ (G Gᵀ)⁻¹ G Jᵀ (J Jᵀ)⁻¹ v* (with Gᵀ(GGᵀ)⁻¹G also removed in the tall case). It
    lies in the range of A = J M̂⁻¹ Jᵀ; without constraints a wide J leaves v* as it is."""
    g = torch.Generator().manual_seed(rows + constraints)
    B, N = 5, 6
    J = torch.randn(B, rows, N, generator=g)
    v = torch.randn(B, rows, generator=g)[..., None]
    G = torch.randn(B, constraints, N, generator=g) if constraints else None
    ours = authors_target(v[..., 0], J, G)
    if rows > N:  # least squares
        u = torch.linalg.solve(J.mT @ J, J.mT @ v)
    else:  # least norm
        u = J.mT @ torch.linalg.solve(J @ J.mT, v)
    if G is not None:
        u = u - G.mT @ torch.linalg.solve(G @ G.mT, G @ u)
    torch.testing.assert_close(ours, (J @ u)[..., 0], rtol=1e-10, atol=1e-10)
    if G is None and rows <= N:
        torch.testing.assert_close(ours, v[..., 0], rtol=1e-10, atol=1e-10)
    frame = contact_frame(torch.eye(N), J, G)
    A = frame.factor.mT @ frame.factor
    in_range = A @ torch.linalg.pinv(A) @ ours[..., None]
    torch.testing.assert_close(in_range[..., 0], ours, rtol=1e-8, atol=1e-8)
    assert not authors_target(v[..., 0].requires_grad_(), J, G).requires_grad  # detached


def test_authors_target_changes_only_the_constrained_data():
    """Data made with the authors' projection of the target ("CM-authors") equal the book's
    on BP5 to rounding (no equality constraints: both projections leave a reachable target
    alone, up to the last bit) and differ on the constrained CP3 once a contact penetrates."""
    from physid.contact import datasets
    from physid.contact.tasks import make_task

    assert datasets.DATA_MODELS["CM-authors"]().authors_target
    for name, equal in (("BP5", True), ("CP3", False)):
        book = datasets.simulate_task(make_task(name), 2, 0, "CM")
        theirs = datasets.simulate_task(make_task(name), 2, 0, "CM-authors")
        assert bool(book.contact.any())
        assert bool((book.v - theirs.v).abs().max() < 1e-12) == equal
