import matplotlib
import numpy as np
import pytest
import torch

from physid.display import BOOK_STYLE, glue_count, glue_number, plural, use_book_style


def test_glue_number_accepts_scalars_and_refuses_bad_values():
    assert glue_number("a", np.float32(1.5)) == 1.5
    assert glue_number("b", torch.tensor(2.0), within=(0, 3)) == 2.0
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="value for 'c' must be finite"):
            glue_number("c", bad)
    with pytest.raises(ValueError, match="value for 'd' must be <= 100"):
        glue_number("d", 8.9e16, within=(-100, 100))
    with pytest.raises(TypeError, match="value for 'e' must be a real number"):
        glue_number("e", "1")


def test_plural_and_glue_count():
    assert plural(1, "push", "pushes") == "1 push"
    assert plural(4, "push", "pushes") == "4 pushes"
    assert plural(0, "seed") == "0 seeds"
    assert plural(np.int64(1), "local maximum", "local maxima") == "1 local maximum"
    assert glue_count("n", 2, "seed") == "2 seeds"
    with pytest.raises(ValueError, match="count must be >= 0"):
        plural(-1, "seed")


def test_book_style_sets_dpi():
    use_book_style()
    assert matplotlib.rcParams["figure.dpi"] == BOOK_STYLE["figure.dpi"] >= 150
