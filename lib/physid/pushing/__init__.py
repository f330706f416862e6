"""Pushing objects made of cells: Song & Boularias (2020), "Identifying Mechanical Models
through Differentiable Simulations".

* :mod:`~physid.pushing.objects`: cell objects and the five objects of the paper;
* :mod:`~physid.pushing.pushes`: pushing actions, reachable by the finger;
* :mod:`~physid.pushing.finger`: the finger, its contact with the object and what it records;
* :mod:`~physid.pushing.lcp`: the batched interior-point LCP solver with implicit gradients;
* :mod:`~physid.pushing.lcp_engine`: formulation 1, the LCP of Figure 2 with one body per cell;
* :mod:`~physid.pushing.rigid_engine`: formulation 2, one rigid body with k friction points,
  its step compiled in :mod:`~physid.pushing.rigid_kernel` and its gradient in
  :mod:`~physid.pushing.rigid_adjoint`;
* :mod:`~physid.pushing.engine`: the engines' contract, what is simulated (``Scene``) and how
  (``Stepping``); :mod:`~physid.pushing.planar`: the planar geometry both engines share;
* :mod:`~physid.pushing.simulate`: :func:`simulate`, the common entry point;
* :mod:`~physid.pushing.bullet`: the pybullet "real world";
* :mod:`~physid.pushing.observations`: ground-truth maps and pushes observed in pybullet;
* :mod:`~physid.pushing.target`: Eq. (1) as a target; :mod:`~physid.pushing.budget`: what a
  method may spend and what it found; :mod:`~physid.pushing.identify`: Algorithm 1 and its
  baselines, registered once;
* :mod:`~physid.pushing.chapters.pushing_lcp` and :mod:`~physid.pushing.chapters.pushing_identify`:
  the experiments of the two chapters (the protocol of §7 and the identification studies as
  independent jobs), each with its ``*_figures`` module (figures and explorers).
"""

from physid.pushing.bullet import MAX_LINKS, simulate_bullet
from physid.pushing.finger import FINGER, ContactEvents, ContactRecord, Finger, contact_events
from physid.pushing.lcp import LCPSolution, SolverError, solve_lcp
from physid.pushing.objects import OBJECT_NAMES, CellObject, from_mask, load_object, rectangle
from physid.pushing.pushes import (
    Push,
    check_reachable,
    contact_face,
    finger_start,
    random_pushes,
)
from physid.pushing.simulate import Trajectory, cell_position_error, simulate

__all__ = [
    "FINGER",
    "MAX_LINKS",
    "OBJECT_NAMES",
    "CellObject",
    "ContactEvents",
    "ContactRecord",
    "Finger",
    "LCPSolution",
    "Push",
    "SolverError",
    "Trajectory",
    "cell_position_error",
    "check_reachable",
    "contact_events",
    "contact_face",
    "finger_start",
    "from_mask",
    "load_object",
    "random_pushes",
    "rectangle",
    "simulate",
    "simulate_bullet",
    "solve_lcp",
]
