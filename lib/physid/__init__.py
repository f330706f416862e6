"""physid: identifying physical parameters through differentiable simulation.

The library behind the physid book, one folder a layer:

* :mod:`physid.core`: what the parts share (validation, constants, run sizes, cached sweeps,
  benchmarks, progress bars, the contracts);
* :mod:`physid.book`: the book runner, the claims ledger and the helpers of the chapters;
* :mod:`physid.sliding`: the opening tutorial;
* :mod:`physid.pushing`, :mod:`physid.inference`, :mod:`physid.contact`: the three parts, each
  with its chapters' drivers in ``chapters/``, one module named after each chapter.

The parts import :mod:`physid.core` and never each other.
"""

from physid.core.scales import SCALES

__version__ = "0.1.0"
__all__ = ["SCALES", "__version__"]
