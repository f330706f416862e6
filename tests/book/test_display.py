import matplotlib
import numpy as np
import pytest
import torch

from physid.book import display
from physid.book.display import (
    BOOK_RUN_ENV,
    BOOK_STYLE,
    explorer,
    figure_output,
    glue_count,
    glue_figure,
    glue_number,
    glue_text,
    plural,
    use_book_style,
)


@pytest.fixture(autouse=True)
def glued(monkeypatch):
    """What the glue calls hand to myst_nb: name → (value, display)."""
    import myst_nb

    calls = {}
    monkeypatch.setattr(myst_nb, "glue", lambda n, v, display=True: calls.update({n: (v, display)}))
    return calls


def value(glued, name):
    return glued[name][0]


def test_glue_number_accepts_scalars_and_refuses_bad_values(glued):
    assert glue_number("a", np.float32(1.5)) is None  # a hidden cell ending here shows nothing
    glue_number("b", torch.tensor(2.0), within=(0, 3))
    assert glued == {"a": (1.5, False), "b": (2.0, False)}
    assert type(value(glued, "a")) is float
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="value for 'c' must be finite"):
            glue_number("c", bad)
    with pytest.raises(ValueError, match="value for 'd' must be <= 100"):
        glue_number("d", 8.9e16, within=(-100, 100))
    with pytest.raises(TypeError, match="value for 'e' must be a real number"):
        glue_number("e", "1")


@pytest.mark.parametrize(
    "within",
    [
        (float("nan"), 1.0),
        (0.0, float("nan")),
        (np.float64("nan"), np.float64("nan")),
        (3.0, 1.0),
        (float("inf"), float("-inf")),
        (0.0,),
        (0.0, 1.0, 2.0),
        "01",
        (0.0, "1"),
        (0.0, None),
    ],
)
def test_glue_number_refuses_a_nan_reversed_or_malformed_within(within):
    # Each of these would let a value through unchecked (NaN compares false) or refuse all.
    with pytest.raises(ValueError, match=r"within for 'f' must be \(low, high\)") as error:
        glue_number("f", 0.5, within=within)
    assert repr(within) in str(error.value)


def test_glue_number_within_accepts_ordered_and_infinite_ends(glued):
    glue_number("g", 2.0, within=(2.0, 2.0))
    glue_number("h", 1e300, within=(0, float("inf")))
    glue_number("i", -5, within=[np.float32(-10), torch.tensor(0.0)])
    assert [value(glued, n) for n in "ghi"] == [2.0, 1e300, -5.0]
    with pytest.raises(ValueError, match="value for 'j' must be >= 0"):
        glue_number("j", -1.0, within=(0, float("inf")))


def test_plural_and_glue_count(glued):
    assert plural(1, "push", "pushes") == "1 push"
    assert plural(4, "push", "pushes") == "4 pushes"
    assert plural(0, "seed") == "0 seeds"
    assert plural(np.int64(1), "local maximum", "local maxima") == "1 local maximum"
    assert glue_count("n", 2, "seed") is None and value(glued, "n") == "2 seeds"
    assert glue_text("t", "a phrase") is None and glued["t"] == ("a phrase", False)
    with pytest.raises(ValueError, match="count must be >= 0"):
        plural(-1, "seed")


def test_a_glued_figure_shows_in_jupyter_and_not_in_the_book(glued, monkeypatch):
    import matplotlib.pyplot as plt

    monkeypatch.delenv(BOOK_RUN_ENV, raising=False)
    glue_figure("fig-a", plt.figure())
    monkeypatch.setenv(BOOK_RUN_ENV, "1")
    assert display.in_book_run()
    glue_figure("fig-b", plt.figure())
    assert (glued["fig-a"][1], glued["fig-b"][1]) == (True, False)
    assert plt.get_fignums() == []


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
    # With a live kernel the controls move; only the built pages disable them.
    assert not slider.disabled
    (first,) = output.outputs
    assert first["output_type"] == "display_data" and first["data"]["image/png"]
    slider.value = 2.0
    assert calls == [1.0, 2.0]
    assert output.outputs[0]["data"]["image/png"] != first["data"]["image/png"]
    with pytest.raises(ValueError, match="controls"):
        explorer(draw)
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        figure_output("not a figure")
