"""A box sliding on a plane under Coulomb friction: the book's opening tutorial.

* :mod:`~physid.sliding.model`: the differentiable rollout, pybullet's slide and the fit of μ;
* :mod:`~physid.sliding.chapters.tutorial_sliding_box_claims`: the tutorial's claims, as functions;
* :mod:`~physid.sliding.chapters.tutorial_sliding_box_figures`: the tutorial's figures and
  explorer.
"""
