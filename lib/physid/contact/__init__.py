"""Contact models and systems with contact: Zhong, Dey & Chakraborty (2021), "Extending
Lagrangian and Hamiltonian Neural Networks with Differentiable Contact Models".

* :mod:`~physid.contact.model`: the contact model (compression, restitution with Poisson's
  hypothesis, penetration compensation; CM and CMr) and its contact space;
* :mod:`~physid.contact.fast`: the batched exact solver with implicit gradients, and its
  direct paths, :mod:`~physid.contact.active_sets` for small polyhedral problems and
  :mod:`~physid.contact.single_cone` for one spatial contact (both compiled on the CPU);
* :mod:`~physid.contact.reference`: the cvxpylayers layers, cached per contact count;
* :mod:`~physid.contact.lcp`: the LCP model with Newton's restitution (data baseline);
* :mod:`~physid.contact.mechanics`: inertia, explicit constraints, constrained dynamics;
* :mod:`~physid.contact.system`, :mod:`~physid.contact.planar`,
  :mod:`~physid.contact.pendulum`, :mod:`~physid.contact.gyroscope`,
  :mod:`~physid.contact.rope`: the five systems; :mod:`~physid.contact.tasks`: the eight tasks;
* :mod:`~physid.contact.integrate`: RK4, collision detection and impulses (Algorithm 1);
* :mod:`~physid.contact.datasets`: data sets of trajectory chunks;
* :mod:`~physid.contact.learned`: CLNN and CHNN with the contact model (learned potential,
  masses, μ and e); :mod:`~physid.contact.baselines`: MLP-CD-CLNN, IN-CP-CLNN and IN-CP-SP;
  :mod:`~physid.contact.training`: the model registry, training, evaluation and cached jobs;
* :mod:`~physid.contact.chapters.contact_model`, :mod:`~physid.contact.chapters.contact_learning`
  and their ``*_figures`` modules: the two chapters.
"""

from physid.contact.datasets import TaskData, add_noise, generate
from physid.contact.integrate import Rollout, simulate
from physid.contact.lcp import LCPModel
from physid.contact.model import ContactModel, ContactSpace, SolverLog, contact_frame
from physid.contact.reference import ContactSolverError
from physid.contact.tasks import ROPE_NODES, TASK_NAMES, Task, make_task, rope_task

__all__ = [
    "ROPE_NODES",
    "TASK_NAMES",
    "ContactModel",
    "ContactSolverError",
    "ContactSpace",
    "LCPModel",
    "Rollout",
    "SolverLog",
    "Task",
    "TaskData",
    "add_noise",
    "contact_frame",
    "generate",
    "make_task",
    "rope_task",
    "simulate",
]
