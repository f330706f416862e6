"""The API pages' one-line summaries: the first sentence of a docstring."""

import pytest

from physid.book.apidoc import first_sentence


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        ("One. Two.", "One."),
        (
            "Identify μ by gradient descent on eq. ``tut-loss`` through the rollout. More.",
            "Identify μ by gradient descent on eq. ``tut-loss`` through the rollout.",
        ),
        (
            "The distance (m), eq. (2), of the slide. Then.",
            "The distance (m), eq. (2), of the slide.",
        ),
        (
            "As in Fig. 3 (e.g. the hammer) of Song et al. (2020). Next.",
            "As in Fig. 3 (e.g. the hammer) of Song et al. (2020).",
        ),
        ("A :func:`~physid.x.f` call. Next.", "A ``physid.x.f`` call."),
        ("First line\nstill first. Second.\n\nOther paragraph.", "First line still first."),
        ("No end", "No end"),
        ("Uses ``a. b`` inside. Next.", "Uses ``a. b`` inside. Next."),
    ],
)
def test_first_sentence(text, summary):
    assert first_sentence(text) == summary
