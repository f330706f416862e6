"""The one registry pattern: entries by name, checked, in order, with views of their fields."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from physid.core.registry import Registry, RegistryView


@dataclass(frozen=True)
class Thing:
    name: str
    colour: str


def test_entries_keep_their_order_and_views_follow_them():
    things = Registry("thing", Thing)
    things.add(Thing("b", "blue"))
    things.add(Thing("a", "amber"))
    assert things.names() == ("b", "a") and list(things) == ["b", "a"] and len(things) == 2
    colours = things.view("colour")
    assert isinstance(colours, RegistryView) and dict(colours) == {"b": "blue", "a": "amber"}
    things.add(Thing("c", "cyan"))
    assert list(colours) == ["b", "a", "c"]
    assert things.get("a") is things["a"] and things.check("c") == "c"
    assert things.remove("b").colour == "blue" and things.names() == ("a", "c")


def test_bad_entries_and_names_are_refused_naming_them():
    things = Registry("thing", Thing)
    things.add(Thing("a", "amber"))
    with pytest.raises(ValueError, match=r"^name 'a' is registered already as a thing"):
        things.add(Thing("a", "azure"))
    with pytest.raises(TypeError, match="must be a Thing"):
        things.add({"name": "b"})
    with pytest.raises(TypeError, match="non-empty string"):
        things.add(Thing("", "grey"))
    with pytest.raises(ValueError, match=r"^colour_of must be one of 'a'; got 'z'"):
        things.get("z", "colour_of")
    with pytest.raises(ValueError, match=r"^thing must be one of"):
        things.check(3)
    with pytest.raises(ValueError, match="field_name"):
        things.view("size")
    with pytest.raises(TypeError, match="dataclass"):
        Registry("thing", dict)
    with pytest.raises(TypeError, match="kind"):
        Registry("", Thing)


def test_every_registry_of_the_library_is_one():
    """Estimators, pushing methods and formulations, contact models and tasks, statistics."""
    from physid.contact.models import MODELS
    from physid.contact.tasks import TASK_NAMES, TASKS
    from physid.inference.base import REGISTRY
    from physid.inference.statistics import STATISTICS
    from physid.pushing.identify import METHODS
    from physid.pushing.simulate import FORMULATIONS

    for registry in (MODELS, TASKS, REGISTRY, STATISTICS, METHODS, FORMULATIONS):
        assert isinstance(registry, Registry) and len(registry) > 0
    assert TASK_NAMES == TASKS.names()
