import matplotlib
import numpy as np
import pytest
import torch

from physid.book.display import (
    BOOK_STYLE,
    explorer,
    figure_output,
    glue_count,
    glue_number,
    plural,
    use_book_style,
)


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


def test_explorer_writes_the_figure_into_its_output_and_redraws():
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    calls = []

    def draw(a):
        calls.append(a)
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, a])
        return fig

    slider = widgets.FloatSlider(value=1.0, min=0.0, max=2.0)
    view = explorer(draw, a=slider)
    output = view.children[-1]
    assert calls == [1.0]
    (first,) = output.outputs
    assert first["output_type"] == "display_data" and first["data"]["image/png"]
    slider.value = 2.0
    assert calls == [1.0, 2.0]
    assert output.outputs[0]["data"]["image/png"] != first["data"]["image/png"]
    with pytest.raises(ValueError, match="controls"):
        explorer(draw)
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        figure_output("not a figure")
