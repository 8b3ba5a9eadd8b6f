"""Extension points: named components that plugins, and esbridge's own built-ins, provide.

Each kind of component has a registry filled from a Python entry-point group the first time it is
read. The built-ins are declared in esbridge's own ``pyproject.toml`` under the same groups, so they
arrive exactly the way a third-party package's components do::

    [project.entry-points."esbridge.fusion"]
    my_fusion = "my_package.fusion:my_fusion"     # then: esbridge search --fusion my_fusion

Groups: ``esbridge.fusion`` (fusion methods), ``esbridge.retrievers``, ``esbridge.rerankers`` and
``esbridge.embedders`` (factories taking the settings). ``register`` adds one at run time.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

from esbridge.errors import ConfigError

T = TypeVar("T")

FUSION_GROUP = "esbridge.fusion"
RETRIEVER_GROUP = "esbridge.retrievers"
RERANKER_GROUP = "esbridge.rerankers"
EMBEDDER_GROUP = "esbridge.embedders"


class Registry(MutableMapping[str, T], Generic[T]):
    """Name -> component, loaded lazily from an entry-point group; explicit registrations win."""

    def __init__(self, kind: str, group: str) -> None:
        self.kind = kind
        self.group = group
        self._items: dict[str, T] = {}
        self._ambiguous: dict[str, str] = {}
        self._loaded = False

    def load(self) -> None:
        """Read the entry-point group once; a plugin that fails to import is an error naming it. A name that two
        distributions give different components is left out and refused by name (``get_named``)."""
        if self._loaded:
            return
        self._loaded = True
        found: dict[str, EntryPoint] = {}
        for point in entry_points(group=self.group):
            first = found.setdefault(point.name, point)
            if first is not point:
                if first.value != point.value:  # which would win depends on the order of sys.path
                    self._items.pop(point.name, None)
                    self._ambiguous[point.name] = " and ".join(sorted((_origin(first), _origin(point))))
                continue
            if point.name in self._items:
                continue
            try:
                self._items[point.name] = point.load()
            except Exception as exc:  # a broken plugin must not look like a missing one
                self._loaded = False  # so the next read names it again, not the components after it as unknown
                raise ConfigError(
                    f"{self.kind} {point.name!r} from {point.value} (entry point group {self.group}) failed to load: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc

    def register(self, name: str, component: T, *, replace: bool = False) -> T:
        if not name or name != name.strip():
            raise ConfigError(f"a {self.kind} needs a non-empty name without surrounding spaces, got {name!r}")
        self.load()
        if name in self._items and not replace and self._items[name] is not component:
            raise ConfigError(f"{self.kind} {name!r} is already registered")
        self._items[name] = component
        return component

    def get_named(self, name: str) -> T:
        self.load()
        if name in self._ambiguous and name not in self._items:
            raise ConfigError(f"{self.kind} {name!r} is provided twice: {self._ambiguous[name]}; uninstall one")
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def __getitem__(self, name: str) -> T:
        self.load()
        return self._items[name]

    def __setitem__(self, name: str, component: T) -> None:
        self._items[name] = component

    def __delitem__(self, name: str) -> None:
        del self._items[name]

    def __iter__(self) -> Iterator[str]:
        self.load()
        return iter(self._items)

    def __len__(self) -> int:
        self.load()
        return len(self._items)


def _origin(point: EntryPoint) -> str:
    """``module:attribute (distribution)``."""
    return f"{point.value} ({point.dist.name})" if point.dist is not None else point.value
