"""The one registry pattern of physid: each kind of thing is registered once, by name.

A :class:`Registry` holds the entries of one kind (estimators, pushing methods, contact
models and baselines, contact tasks, summary statistics) in registration order. An entry is a
frozen dataclass with a ``name`` field (its *spec*) that carries what the chapters and the tests
need besides the thing itself (a label, a family, options, where it runs), so that registering
an entry is all it takes for it to appear in every table, figure, option list and test that
iterates over the registry. Nothing keeps a second list of names: they are
:meth:`Registry.names`.

A part registers its entries where it defines them, with :meth:`Registry.add` (or a small
decorator that builds the spec and calls it), and reads them back as a mapping
(``REGISTRY[name]``, ``for name in REGISTRY``) or with :meth:`Registry.get`, which names the
argument and the known entries when a name is unknown.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import fields, is_dataclass
from typing import Any, Generic, TypeVar

from physid.core.validate import check_choice

E = TypeVar("E")

__all__ = ["Registry", "RegistryView"]


class Registry(Mapping[str, E], Generic[E]):
    """Entries of one ``kind``, each a frozen dataclass of ``entry_type`` with a ``name``.

    Args:
        kind: what the entries are, in error messages ("estimator", "task", …).
        entry_type: the dataclass of the entries (the spec).
    """

    def __init__(self, kind: str, entry_type: type[E]):
        if not isinstance(kind, str) or not kind:
            raise TypeError(f"kind must be a non-empty string, got {kind!r}")
        if not (isinstance(entry_type, type) and is_dataclass(entry_type)):
            raise TypeError(f"entry_type must be a dataclass, got {entry_type!r}")
        if "name" not in {f.name for f in fields(entry_type)}:
            raise TypeError(f"entry_type {entry_type.__name__} must have a 'name' field")
        self.kind = kind
        self.entry_type = entry_type
        self._entries: dict[str, E] = {}

    def add(self, entry: E) -> E:
        """Register ``entry``; a ValueError if its name is taken, a TypeError for a wrong kind."""
        if not isinstance(entry, self.entry_type):
            raise TypeError(
                f"a {self.kind} entry must be a {self.entry_type.__name__}, "
                f"got {type(entry).__name__}"
            )
        name = entry.name  # type: ignore[attr-defined]
        if not isinstance(name, str) or not name:
            raise TypeError(f"a {self.kind}'s name must be a non-empty string, got {name!r}")
        if name in self._entries:
            raise ValueError(f"name {name!r} is registered already as a {self.kind}")
        self._entries[name] = entry
        return entry

    def remove(self, name: str) -> E:
        """Unregister ``name`` and return its entry (for tests that register a temporary one)."""
        return self._entries.pop(self.check(name))

    def check(self, name: Any, argument: str | None = None) -> str:
        """``name`` if it is registered, else a ValueError naming ``argument`` (by default the
        kind) and the registered names."""
        return check_choice(argument or self.kind, name, self.names())

    def get(self, name: Any, argument: str | None = None) -> E:  # type: ignore[override]
        """The entry ``name``, checked as :meth:`check` does."""
        return self._entries[self.check(name, argument)]

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._entries)

    def view(self, field_name: str) -> RegistryView:
        """A read-only mapping from each name to its entry's ``field_name``."""
        return RegistryView(self, field_name)

    def __getitem__(self, name: str) -> E:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"


class RegistryView(Mapping[str, Any]):
    """One field of every entry of a :class:`Registry`, by name: registering an entry adds it
    to every view."""

    def __init__(self, registry: Registry, field_name: str):
        names = tuple(f.name for f in fields(registry.entry_type))
        if field_name not in names:
            raise ValueError(f"field_name must be one of {names}, got {field_name!r}")
        self.registry = registry
        self.field_name = field_name

    def __getitem__(self, name: str) -> Any:
        return getattr(self.registry[name], self.field_name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.registry)

    def __len__(self) -> int:
        return len(self.registry)

    def __repr__(self) -> str:
        return repr(dict(self))
