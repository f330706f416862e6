"""The models of the paper's Fig. 3, registered once: :data:`MODELS`.

The four contact networks of :mod:`physid.contact.learned` (CM-CD-CLNN, CM-CD-CHNN, CMr-CD-CLNN,
CMr-CD-CHNN: the contact model CM or its regularised CMr inside a constrained Lagrangian or
Hamiltonian network) and the three baselines of :mod:`physid.contact.baselines` (MLP-CD-CLNN,
IN-CP-CLNN, IN-CP-SP). Every one is a :class:`LearnedModel`, the contract training and evaluation
rely on (checked by a test for every entry). Each :class:`ModelSpec` carries what training, the
chapters and the tests need: how to build the model for a task from a seed, its family
(``"contact"`` or ``"baseline"``), its colour in every figure, and whether its CMr regularisation ε
can be learned. A model registered here is trained, evaluated, drawn and tested with no other
change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from torch import Tensor, nn

from physid.contact.baselines import INCPCLNN, INCPSP, MLPCDCLNN, baseline_factory
from physid.contact.learned import ContactCHNN, ContactCLNN
from physid.contact.model import SolverLog
from physid.contact.tasks import Task, make_task
from physid.core.registry import Registry
from physid.core.validate import check_seed

__all__ = ["FAMILIES", "MODELS", "LearnedModel", "ModelSpec", "build", "family"]

#: The model families: the paper's contact networks, and the baselines they are compared with.
FAMILIES = ("contact", "baseline")


@runtime_checkable
class LearnedModel(Protocol):
    """What :mod:`physid.contact.training` trains and evaluates (an ``nn.Module`` besides).

    Attributes:
        task: the task the model is built for.
        one_step: trains on consecutive one-step pairs (the baselines) rather than on whole
            chunks (the contact networks).
        log: the contact solver's counts since it was last reset (zero for a model that
            resolves no contact).
    """

    task: Task
    one_step: bool
    log: SolverLog

    def rollout(self, x0: Tensor, v0: Tensor, n_steps: int) -> tuple[Tensor, Tensor]:
        """Positions and velocities ``(B, n_steps + 1, N)`` from ``(x0, v0)``, each ``(B, N)``."""
        ...

    def learned_parameters(self) -> dict:
        """The learned physical parameters as plain numbers (empty if there are none)."""
        ...


@dataclass(frozen=True)
class ModelSpec:
    """A registered model: ``build(task, seed, **options)`` returns it, untrained."""

    name: str
    build: Callable[..., nn.Module]
    family: str
    colour: str
    learns_reg: bool = False

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {self.family!r}")


def _contact(cls: type[nn.Module], variant: str) -> Callable[..., nn.Module]:
    def make(task: Task, seed: int, **options) -> nn.Module:
        return cls(task, variant, seed, **options)

    make.__name__ = f"make_{variant}_{cls.__name__}"
    make.__doc__ = f"A :class:`{cls.__name__}` with {variant} for ``task``, from ``seed``."
    return make


#: Every model by the paper's name, in the order of the figures: the contact networks in blues
#: and teals, the baselines in oranges and reds.
MODELS: Registry[ModelSpec] = Registry("model", ModelSpec)
MODELS.add(ModelSpec("CM-CD-CLNN", _contact(ContactCLNN, "CM"), "contact", "#08306b"))
MODELS.add(ModelSpec("CM-CD-CHNN", _contact(ContactCHNN, "CM"), "contact", "#2878b5"))
MODELS.add(ModelSpec("CMr-CD-CLNN", _contact(ContactCLNN, "CMr"), "contact", "#00807f", True))
MODELS.add(ModelSpec("CMr-CD-CHNN", _contact(ContactCHNN, "CMr"), "contact", "#5ab4d6", True))
MODELS.add(ModelSpec("MLP-CD-CLNN", baseline_factory(MLPCDCLNN), "baseline", "#e66101"))
MODELS.add(ModelSpec("IN-CP-CLNN", baseline_factory(INCPCLNN), "baseline", "#b2182b"))
MODELS.add(ModelSpec("IN-CP-SP", baseline_factory(INCPSP), "baseline", "#d9a400"))


def family(name: str) -> tuple[str, ...]:
    """The names of the models of family ``name`` (one of :data:`FAMILIES`), in order."""
    if name not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {name!r}")
    return tuple(m for m, spec in MODELS.items() if spec.family == name)


def build(name: str, task: Task | str, seed: int) -> nn.Module:
    """The model ``name`` (a key of :data:`MODELS`) for ``task``, initialised from ``seed``."""
    spec = MODELS.get(name, "name")
    task = make_task(task) if isinstance(task, str) else task
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task or a task name, got {type(task).__name__}")
    return spec.build(task, check_seed("seed", seed))
