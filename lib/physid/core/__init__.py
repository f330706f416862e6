"""What every part of the book shares: validation, constants, run sizes, cached sweeps,
benchmarks, threads, progress bars, the contracts the parts implement, and the compiled
kernels' small linear solves.

* :mod:`~physid.core.validate`: checks of arguments at the public entry points;
* :mod:`~physid.core.constants`: physical constants (one ``GRAVITY``);
* :mod:`~physid.core.scales`: the run sizes per ``SCALE``;
* :mod:`~physid.core.registry`: the one registry pattern (every kind of thing by name);
* :mod:`~physid.core.seeds`: random streams that follow names, not positions in a list;
* :mod:`~physid.core.target`: the ``Target`` every estimator works on, and its ``Limits``;
* :mod:`~physid.core.sweeps`: independent jobs through joblib, cached on disk by code version;
* :mod:`~physid.core.bench`: interleaved timing for ``benchmarks/``;
* :mod:`~physid.core.threads`: one torch thread per job;
* :mod:`~physid.core.progress`: progress bars on the terminal, never on a page;
* :mod:`~physid.core.stages`: the wall time of a chapter's stages, for its closing table;
* :mod:`~physid.core.quiet_bullet`: pybullet imported without its banner;
* :mod:`~physid.core.simulator`: the ``Simulator`` contract of the estimators' targets;
* :mod:`~physid.core.linalg`: the small linear systems of the compiled kernels.
"""
