"""Bad input to every public entry point of Part III fails at once, naming the argument.

NaN, ±inf, negative, zero, wrong-shape, wrong-dtype and out-of-range values go to the system
and task constructors, the contact model and its contact space, the fast and reference solvers,
the integrator and the data-set generator. Each must raise a ValueError (a TypeError for the
wrong kind of value) whose message names the argument, before any work: a check that only ran
inside a contact event would let a run without contacts through.
"""

import math

import numpy as np
import pytest
import torch

from physid.contact import datasets, fast, reference
from physid.contact.chapters import contact_model as ex
from physid.contact.chapters import contact_model_gallery as sims
from physid.contact.chapters import contact_model_timing as timing
from physid.contact.gyroscope import Gyroscope
from physid.contact.integrate import apply_contacts, simulate
from physid.contact.lcp import LCPModel
from physid.contact.mechanics import body_inverse_mass
from physid.contact.model import (
    ContactModel,
    ContactSolverError,
    ContactSpace,
    SolverLog,
    authors_target,
    check_inverse_inertia,
    contact_frame,
    penetration_target,
)
from physid.contact.pendulum import ChainPendulum
from physid.contact.planar import BouncingBodies
from physid.contact.rope import Rope
from physid.contact.tasks import make_task

F64 = torch.float64


def zeros(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, dtype=F64)
BAD_NUMBERS = [math.nan, math.inf, -math.inf, -1.0]


def t(*values, dtype=F64):
    return torch.tensor(values, dtype=dtype)


@pytest.fixture(scope="module")
def cp3():
    task = make_task("CP3")
    x0, v0 = task.system.sample_state(2, np.random.default_rng(0))
    return task, x0, v0


# ---------------------------------------------------------------------------------------------
# Systems and tasks.


@pytest.mark.parametrize("bad", BAD_NUMBERS + [0.0])
@pytest.mark.parametrize(
    "make, name",
    [
        (lambda b: BouncingBodies([0.1, b], [0.1, 0.1]), "masses"),
        (lambda b: BouncingBodies([0.1, 0.1], [b, 0.1]), "radii"),
        (lambda b: ChainPendulum([b], [0.3], [0.1]), "masses"),
        (lambda b: ChainPendulum([0.1], [b], [0.1]), "lengths"),
        (lambda b: ChainPendulum([0.1], [0.3], [b]), "radii"),
        (lambda b: ChainPendulum([0.1], [0.3], [0.1], ground=b), "ground"),
        (lambda b: Gyroscope(mass=b), "mass"),
        (lambda b: Gyroscope(moments=(0.2, b, 0.1)), "moments"),
        (lambda b: Gyroscope(com_offset=b), "com_offset"),
        (lambda b: Gyroscope(rim_radius=b), "rim_radius"),
        (lambda b: Gyroscope(wall=b), "wall"),
        (lambda b: Rope(mass=b), "mass"),
        (lambda b: Rope(rest_length=b), "rest_length"),
        (lambda b: Rope(stiffness=b), "stiffness"),
        (lambda b: Rope(bend=b), "bend"),
        (lambda b: body_inverse_mass(torch.tensor(b, dtype=F64), torch.ones(2, dtype=F64)), "mass"),
    ],
)
def test_system_parameters_must_be_positive_and_finite(make, name, bad):
    with pytest.raises(ValueError, match=name):
        make(bad)


@pytest.mark.parametrize(
    "make, error, name",
    [
        (lambda: BouncingBodies([0.1, 0.1], [0.1]), ValueError, "radii"),
        (lambda: BouncingBodies([[0.1]], [[0.1]]), ValueError, "masses"),
        (lambda: BouncingBodies([], []), ValueError, "masses"),
        (lambda: BouncingBodies([0.1], [0.6]), ValueError, "radii"),
        (lambda: BouncingBodies([0.1], [0.1], disks=1), TypeError, "disks"),
        (lambda: ChainPendulum([0.1, 0.2], [0.3], [0.1, 0.1]), ValueError, "lengths"),
        (lambda: ChainPendulum([0.1], [0.3], [0.1], gravity=-9.81), ValueError, "gravity"),
        (lambda: ChainPendulum([0.1], [0.3], [0.1], gravity=math.nan), ValueError, "gravity"),
        (lambda: Gyroscope(moments=(0.2, 0.2)), ValueError, "moments"),
        (lambda: Gyroscope(rim_points=2), ValueError, "rim_points"),
        (lambda: Gyroscope(rim_points=20.0), TypeError, "rim_points"),
        (lambda: Rope(n_nodes=1), ValueError, "n_nodes"),
        (lambda: Rope(n_nodes=np.float64(4)), TypeError, "n_nodes"),
        (lambda: Rope(stretch=(1.1, 1.2)), ValueError, "stretch"),
        (lambda: Rope(gravity=math.inf), ValueError, "gravity"),
        (lambda: make_task("BP6"), ValueError, "task"),
    ],
)
def test_system_shapes_kinds_and_ranges(make, error, name):
    with pytest.raises(error, match=name):
        make()


def test_numpy_and_torch_scalars_are_numbers():
    Gyroscope(mass=np.float32(0.1), rim_points=np.int64(12), wall=torch.tensor(0.33))
    Rope(n_nodes=torch.tensor(4), stiffness=np.float32(50.0))


# ---------------------------------------------------------------------------------------------
# The contact model.


def good_space(**changes):
    fields = dict(
        factor=torch.randn(2, 3, 2, dtype=F64, generator=torch.Generator().manual_seed(0)),
        velocity=t([-1.0, 0.2], [-0.5, 0.0]),
        target=torch.zeros(2, 2, dtype=F64),
        mu=t([0.5], [0.5]),
        cor=t([0.5], [0.5]),
        k=2,
    )
    fields.update(changes)
    return ContactSpace(**fields)


@pytest.mark.parametrize(
    "changes, error, name",
    [
        (dict(velocity=t([math.nan, 0.0], [0.0, 0.0])), ValueError, "velocity"),
        (dict(factor=torch.full((2, 3, 2), math.inf, dtype=F64)), ValueError, "factor"),
        (dict(target=t([0.0, -math.inf], [0.0, 0.0])), ValueError, "target"),
        (dict(mu=t([-0.1], [0.5])), ValueError, "mu"),
        (dict(mu=t([math.nan], [0.5])), ValueError, "mu"),
        (dict(cor=t([1.5], [0.5])), ValueError, "cor"),
        (dict(cor=t([-0.1], [0.5])), ValueError, "cor"),
        (dict(velocity=torch.zeros(2, 3, dtype=F64)), ValueError, "velocity"),
        (dict(factor=torch.zeros(2, 2, dtype=F64)), ValueError, "factor"),
        (dict(cor=t([0.5])), ValueError, "cor"),
        (dict(velocity=t([-1.0, 0.2], [-0.5, 0.0], dtype=torch.float32)), TypeError, "velocity"),
        (dict(mu=torch.ones(2, 1, dtype=torch.long)), TypeError, "mu"),
        (dict(target=np.zeros((2, 2))), TypeError, "target"),
        (dict(k=4), ValueError, "k"),
        (dict(k=2.0), TypeError, "k"),
    ],
)
def test_contact_space_refuses_bad_fields(changes, error, name):
    good_space()
    with pytest.raises(error, match=name):
        good_space(**changes)


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(variant="CMx"), ValueError, "variant"),
        (dict(solver="scs"), ValueError, "solver"),
        (dict(reg=0.0), ValueError, "reg"),
        (dict(reg=-1e-3), ValueError, "reg"),
        (dict(reg=math.nan), ValueError, "reg"),
        (dict(reg="0.01"), TypeError, "reg"),
        (dict(compensation=-1.0), ValueError, "compensation"),
        (dict(compensation=math.inf), ValueError, "compensation"),
        (dict(fallback=1), TypeError, "fallback"),
        (dict(batched_reference="yes"), TypeError, "batched_reference"),
    ],
)
def test_contact_model_refuses_bad_settings(kwargs, error, name):
    with pytest.raises(error, match=name):
        ContactModel(**kwargs)


def test_contact_model_accepts_numpy_and_torch_scalars():
    model = ContactModel(variant="CMr", reg=np.float32(0.01), compensation=torch.tensor(0.125))
    assert isinstance(model.reg, float) and model.compensation == 0.125


@pytest.mark.parametrize(
    "make, error, name",
    [
        (lambda: LCPModel(directions=2), ValueError, "directions"),
        (lambda: LCPModel(directions=4.0), TypeError, "directions"),
        (lambda: LCPModel(compensation=math.nan), ValueError, "compensation"),
        (lambda: penetration_target(torch.zeros(1, 1, dtype=F64), k=2, dt=0.0), ValueError, "dt"),
        (lambda: penetration_target(torch.zeros(1, 1, dtype=F64), 2, math.nan), ValueError, "dt"),
        (lambda: penetration_target(torch.zeros(1, 1, dtype=F64), 4, 0.01), ValueError, "k"),
        (
            lambda: penetration_target(torch.zeros(1, 1, dtype=F64), 2, 0.01, fraction=-0.1),
            ValueError,
            "fraction",
        ),
        (lambda: penetration_target(t([math.nan]), 2, 0.01), ValueError, "distance"),
        (lambda: authors_target(zeros(1, 3), zeros(1, 2, 4)), ValueError, "target"),
        (lambda: authors_target(zeros(1, 2), zeros(2, 4)), ValueError, "jacobian"),
        (
            lambda: authors_target(zeros(1, 2), zeros(1, 2, 4), zeros(1, 1, 3)),
            ValueError,
            "constraint_jacobian",
        ),
        (lambda: LCPModel(authors_target=1), TypeError, "authors_target"),
        (lambda: ContactModel(authors_target="yes"), TypeError, "authors_target"),
        (lambda: check_inverse_inertia(torch.diag(t(1.0, -1.0))), ValueError, "inv_mass"),
        (lambda: check_inverse_inertia(t([1.0, 0.5], [0.0, 1.0])), ValueError, "inv_mass"),
        (lambda: check_inverse_inertia(torch.eye(2)[:, :1].double()), ValueError, "inv_mass"),
        (lambda: check_inverse_inertia(torch.eye(2, dtype=torch.float32)), TypeError, "inv_mass"),
        (
            lambda: contact_frame(torch.eye(4, dtype=F64), torch.zeros(1, 2, 3, dtype=F64)),
            ValueError,
            "jacobian",
        ),
        (
            lambda: contact_frame(
                torch.eye(4, dtype=F64),
                torch.zeros(1, 2, 4, dtype=F64),
                torch.zeros(1, 1, 3, dtype=F64),
            ),
            ValueError,
            "constraint_jacobian",
        ),
    ],
)
def test_model_helpers_refuse_bad_input(make, error, name):
    with pytest.raises(error, match=name):
        make()


# ---------------------------------------------------------------------------------------------
# The solvers.


def problem():
    A = torch.eye(2, dtype=F64)[None]
    return A, t([-1.0, 0.3]), t([0.5]), t([0.0])


@pytest.mark.parametrize(
    "index, value, error, name",
    [
        (0, torch.full((1, 2, 2), math.nan, dtype=F64), ValueError, "A"),
        (1, t([math.inf, 0.0]), ValueError, "c"),
        (2, t([-0.5]), ValueError, "mu"),
        (3, t([math.nan]), ValueError, "lb"),
        (1, t([-1.0, 0.3], dtype=torch.float32), TypeError, "c"),
        (0, torch.eye(2, dtype=F64), ValueError, "A"),
        (3, t([0.0, 0.0]), ValueError, "inconsistent shapes"),
    ],
)
def test_fast_solver_refuses_bad_input(index, value, error, name):
    args = list(problem())
    args[index] = value
    with pytest.raises(error, match=name):
        fast.solve(*args, 2)


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(k=0), ValueError, "k"),
        (dict(tol=0.0), ValueError, "tol"),
        (dict(tol=math.nan), ValueError, "tol"),
        (dict(max_iter=0), ValueError, "max_iter"),
        (dict(newton_steps=2.5), TypeError, "newton_steps"),
    ],
)
def test_fast_solver_refuses_bad_settings(kwargs, error, name):
    settings = dict(k=2) | kwargs
    with pytest.raises(error, match=name):
        fast.solve(*problem(), **settings)


def test_reference_solver_refuses_bad_input():
    A, c, mu, lb = problem()
    factor = A.clone()
    with pytest.raises(ValueError, match="c"):
        reference.solve(factor, t([math.nan, 0.0]), mu, lb, 2)
    with pytest.raises(ValueError, match="mu"):
        reference.solve(factor, c, t([-1.0]), lb, 2)
    with pytest.raises(ValueError, match="columns"):
        reference.solve(factor, c, mu, lb, 3)
    with pytest.raises(TypeError, match="factor"):
        reference.solve(factor.float(), c, mu, lb, 2)


def test_an_inaccurate_scs_answer_is_an_error_not_a_result():
    g = torch.Generator().manual_seed(0)
    factor = torch.randn(1, 5, 4, dtype=F64, generator=g)
    c = torch.randn(1, 4, dtype=F64, generator=g)
    mu, lb = t([0.3, 0.8]), t([0.0, 0.1])
    with pytest.raises(ContactSolverError, match="inaccurate"):
        reference.solve(factor, c, mu, lb, 2, solver_args={"max_iters": 2, "eps": 1e-12})


# ---------------------------------------------------------------------------------------------
# The integrator: checked before any step, so a run without contacts cannot slip through.


@pytest.mark.parametrize(
    "changes, error, name",
    [
        (dict(cor="cor_high"), ValueError, "cor"),
        (dict(mu="mu_negative"), ValueError, "mu"),
        (dict(mu="mu_short"), ValueError, "mu"),
        (dict(x0="x_nan"), ValueError, "x"),
        (dict(v0="v_inf"), ValueError, "v"),
        (dict(x0="x_float32"), TypeError, "x"),
        (dict(x0="x_narrow"), ValueError, "x"),
        (dict(n_steps=0), ValueError, "n_steps"),
        (dict(n_steps=2.0), TypeError, "n_steps"),
        (dict(dt=0.0), ValueError, "dt"),
        (dict(dt=-0.01), ValueError, "dt"),
        (dict(dt=math.nan), ValueError, "dt"),
        (dict(inv_mass="minv_not_psd"), ValueError, "inv_mass"),
        (dict(inv_mass="minv_wrong_size"), ValueError, "inv_mass"),
        (dict(inv_mass="minv_float32"), TypeError, "inv_mass"),
        (dict(model="not a model"), TypeError, "model"),
        (dict(force=3.0), TypeError, "force"),
    ],
)
def test_simulate_refuses_bad_input_before_any_step(cp3, changes, error, name):
    task, x0, v0 = cp3
    N = task.system.n_coords
    variants = {
        "cor_high": torch.full_like(task.cor, 1.5),
        "mu_negative": torch.full_like(task.mu, -0.1),
        "mu_short": task.mu[:2],
        "x_nan": x0.clone().fill_(math.nan),
        "v_inf": v0.clone().fill_(math.inf),
        "x_float32": x0.float(),
        "x_narrow": x0[:, :4],
        "minv_not_psd": -torch.eye(N, dtype=F64),
        "minv_wrong_size": torch.eye(N - 2, dtype=F64),
        "minv_float32": torch.eye(N, dtype=torch.float32),
    }
    args = dict(
        system=task.system,
        x0=x0,
        v0=v0,
        n_steps=1,
        dt=task.dt,
        model=ContactModel(),
        mu=task.mu,
        cor=task.cor,
    )
    for key, value in changes.items():
        args[key] = variants.get(value, value) if isinstance(value, str) else value
    with pytest.raises(error, match=name):
        simulate(**args)


def test_a_diverging_force_is_reported_with_its_step(cp3):
    task, x0, v0 = cp3

    def force(x):
        return torch.full_like(x, math.nan)

    with pytest.raises(ValueError, match="no longer finite after step 1"):
        simulate(task.system, x0, v0, 3, task.dt, ContactModel(), task.mu, task.cor, force=force)


def test_apply_contacts_refuses_bad_input(cp3):
    task, x0, v0 = cp3
    log = SolverLog()
    with pytest.raises(ValueError, match="cor"):
        apply_contacts(
            task.system, ContactModel(), x0, v0, task.mu, task.cor + 2, task.dt, log=log
        )
    with pytest.raises(TypeError, match="system"):
        apply_contacts("CP3", ContactModel(), x0, v0, task.mu, task.cor, task.dt, log=log)
    with pytest.raises(TypeError, match="log"):
        apply_contacts(task.system, ContactModel(), x0, v0, task.mu, task.cor, task.dt, log=None)


# ---------------------------------------------------------------------------------------------
# Data sets and the chapter's drivers.


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(n_train=-1), ValueError, "n_train"),
        (dict(n_val=1.5), TypeError, "n_val"),
        (dict(n_train=0, n_val=0, n_test=0), ValueError, "n_train"),
        (dict(seed=None), ValueError, "seed"),
        (dict(seed=-1), ValueError, "seed"),
        (dict(model="PGS"), ValueError, "model"),
        (dict(chunk_len=1), ValueError, "chunk_len"),
        (dict(p_collision=1.5), ValueError, "p_collision"),
        (dict(p_collision=math.nan), ValueError, "p_collision"),
        (dict(task="CP4"), ValueError, "task"),
    ],
)
def test_generate_refuses_bad_input(kwargs, error, name):
    args = dict(task="CP3", n_train=1, n_val=0, n_test=0, seed=0) | kwargs
    with pytest.raises(error, match=name):
        datasets.generate(**args)


def test_add_noise_and_select_chunks_refuse_bad_input():
    with pytest.raises(TypeError, match="data"):
        datasets.add_noise("data", 0.1, seed=0)
    with pytest.raises(TypeError, match="rollout"):
        datasets.select_chunks(None, 5, 0.5, np.random.default_rng(0))
    with pytest.raises(TypeError, match="task"):
        datasets.simulate_task("CP3", 2, seed=0)


@pytest.mark.parametrize("std", [-0.1, math.nan, math.inf])
def test_add_noise_refuses_a_bad_level(std):
    data = datasets.generate("Rope", 1, 0, 0, seed=0)
    with pytest.raises(ValueError, match="std"):
        datasets.add_noise(data, std, seed=0)


@pytest.mark.parametrize(
    "make, error, name",
    [
        (lambda: ex.SIZES["huge"], ValueError, "SCALE"),
        (lambda: ex.run_tasks((1, 0), seed=0), ValueError, "n"),
        (lambda: ex.run_tasks((1, -1, 0), seed=0), ValueError, r"n\[1\]"),
        (lambda: ex.run_tasks((1, 0, 0), seed=None), ValueError, "seed"),
        (lambda: sims.pendulum_rollout(1.5, 0.0), ValueError, "cor"),
        (lambda: sims.pendulum_rollout(0.5, -0.1), ValueError, "mu"),
        (lambda: sims.pendulum_rollout(math.nan, 0.1), ValueError, "cor"),
        (lambda: sims.energy_budget(refinements=0), ValueError, "refinements"),
        (lambda: sims.penetration_study(n_steps=-5), ValueError, "n_steps"),
        (lambda: ex.restitution_study(None, mu=-1.0, cor=0.5), ValueError, "mu"),
        (lambda: ex.restitution_study(None, mu=0.5, cor=2.0), ValueError, "cor"),
        (lambda: timing.time_resolutions(None, (1,), repeat=2), ValueError, "repeat"),
    ],
)
def test_chapter_drivers_refuse_bad_input(make, error, name):
    with pytest.raises(error, match=name):
        make()
