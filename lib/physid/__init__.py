"""physid: identifying physical parameters through differentiable simulation.

The library behind the physid book. Each part of the book has its own sub-package or module;
the book machinery lives in :mod:`physid.book` (the chapter runner), :mod:`physid.claims`
(reproduced claims) and :mod:`physid.scales` (run sizes).
"""

from physid.scales import SCALES

__version__ = "0.1.0"
__all__ = ["SCALES", "__version__"]
