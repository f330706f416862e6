"""Part II: probabilistic inference of simulation parameters (Heiden et al., 2022)."""
