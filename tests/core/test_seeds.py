"""Streams that follow names: stable across runs and machines, distinct for the book's names."""

from __future__ import annotations

import pytest

from physid.core.seeds import name_stream


def test_a_name_stream_is_the_same_on_every_run_and_machine():
    """Pinned values: a change of the function would silently move every seeded number."""
    assert name_stream("hammer") == 3740633654
    assert name_stream("crimp") == 517342958
    assert name_stream("crimp") != name_stream("Crimp")


def test_the_books_objects_and_methods_get_distinct_streams():
    from physid.pushing.identify import METHODS
    from physid.pushing.objects import OBJECT_NAMES

    assert len({name_stream(n) % 1_009 for n in OBJECT_NAMES}) == len(OBJECT_NAMES)
    assert len({name_stream(n) for n in METHODS}) == len(METHODS)


@pytest.mark.parametrize("bad", ["", 3, None])
def test_bad_names_are_refused(bad):
    with pytest.raises(TypeError, match="^name"):
        name_stream(bad)
