"""Part II: probabilistic inference of simulation parameters (Heiden et al., 2022).

* :mod:`~physid.inference.pendulum`, :mod:`~physid.inference.box` and
  :mod:`~physid.inference.panda`: the double pendulum and the shaken box (with the Panda arm that
  records it in pybullet); :mod:`~physid.inference.ibm`: the IBM double-pendulum recordings;
* :mod:`~physid.inference.pendulum_kernel` and :mod:`~physid.inference.box_kernel`: their
  rollouts compiled (numba) with hand-derived adjoints, made torch functions by
  :mod:`~physid.inference.lanes`;
* :mod:`~physid.inference.likelihood`: single- and multiple-shooting trajectory likelihoods,
  targets of the :class:`~physid.core.target.Target` contract;
* :mod:`~physid.inference.base`: the estimator interface and its one registry
  (:data:`~physid.inference.base.REGISTRY`); :mod:`~physid.inference.svgd`: SVGD and CSVGD;
  :mod:`~physid.inference.estimators`: Emcee, NUTS, SGLD, CEM and BayesSim;
* :mod:`~physid.inference.statistics`: BayesSim's summary statistics;
  :mod:`~physid.inference.metrics`: KL divergences and MMD;
* ``chapters/``: the drivers of the synthetic-data and real-data chapters.

Importing the package registers every estimator, in the chapters' order.
"""

from physid.inference.base import REGISTRY, Estimator, register
from physid.inference.estimators import CEM, NUTS, SGLD, BayesSim, Emcee, make_estimator
from physid.inference.likelihood import TrajectoryLikelihood
from physid.inference.metrics import gaussian_kl, knn_kl, mmd
from physid.inference.pendulum import DoublePendulum
from physid.inference.svgd import CSVGD, SVGD, RBFKernel, svgd_direction

__all__ = [
    "CEM",
    "CSVGD",
    "NUTS",
    "REGISTRY",
    "SGLD",
    "SVGD",
    "BayesSim",
    "DoublePendulum",
    "Emcee",
    "Estimator",
    "RBFKernel",
    "TrajectoryLikelihood",
    "gaussian_kl",
    "knn_kl",
    "make_estimator",
    "mmd",
    "register",
    "svgd_direction",
]
