"""Registries of plug-ins (policies by name, platforms by kind): one way to register, checked.

A plug-in is registered either as a class (:meth:`Registry.register`) or by where it lives
(:meth:`Registry.register_lazy`): then its module is imported, and the class checked, only when
the registry is first asked for that class. The built-in registries name their plug-ins this way
(all but the defaults), so that a run imports the modules of its own policy and platform only:
the consolidation policies and the shared-VM allocator alone cost more start-up time than the
scheduling of a small run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib import import_module
from typing import Any, Generic, TypeVar

from .errors import SpecError
from .params import Param

__all__ = ["Registry", "lazy_exports"]

T = TypeVar("T", bound=type)


class Registry(Generic[T]):
    """Classes of one family by their registry name, in registration order.

    Args:
        family: What the classes are (``"policy"``, ``"platform"``), for messages.
        base: The class every member must subclass.
        attribute: The class attribute holding the registry name (``name``, ``kind``).
        reserved: Keys no member may declare as a parameter (the fixed and common keys).
    """

    def __init__(self, family: str, base: type, attribute: str, reserved: tuple[str, ...]) -> None:
        self.family, self.base, self.attribute, self.reserved = family, base, attribute, reserved
        # In registration order; a name registered lazily maps to None until first asked for.
        self._classes: dict[str, T | None] = {}
        self._lazy: dict[str, tuple[str, str]] = {}  # unresolved name -> (module, class name)

    def register(self, cls: T) -> T:
        """Add ``cls`` under its registry name (usable as a class decorator).

        Raises:
            TypeError: ``cls`` is not of the family, declares no name, reuses a registered name,
                or declares parameters that are not :class:`~tiersweep.core.params.Param` or
                take a reserved key.
        """
        name = self._checked_name(cls)
        if name in self._classes:
            registered = self._resolve(name)
            if registered is not cls:
                raise TypeError(
                    f"{self.family} {self.attribute} {name!r} is already registered ({registered.__name__})"
                )
        self._classes[name] = cls
        return cls

    def register_lazy(self, name: str, module: str, qualname: str) -> None:
        """Register class ``qualname`` of ``module`` (an absolute module name) as ``name``
        without importing it. The import, and the checks :meth:`register` makes (plus that the
        class declares ``name``), happen when the class is first asked for.

        Raises:
            TypeError: ``name`` is already registered.
        """
        if name in self._classes:
            raise TypeError(f"{self.family} {self.attribute} {name!r} is already registered")
        self._classes[name] = None
        self._lazy[name] = (module, qualname)

    def _checked_name(self, cls: type) -> str:
        """The registry name of ``cls``, once it has passed every check of :meth:`register`."""
        family = self.family
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise TypeError(f"{cls!r} is not a {self.base.__name__} subclass")
        name = getattr(cls, self.attribute)
        if not name:
            raise TypeError(f"{family} class {cls.__name__} declares no {self.attribute}")
        # Every family's base class declares ``params``; ``base`` is only known as a type here.
        for key, param in cls.params.items():  # type: ignore[attr-defined]
            if not isinstance(param, Param):
                raise TypeError(f"{family} {name!r}: parameter {key!r} is not a Param")
            if key in self.reserved:
                raise TypeError(f"{family} {name!r}: parameter {key!r} clashes with a reserved key")
        return name

    def _resolve(self, name: str) -> T:
        """The class registered as ``name`` (``KeyError`` if none), imported on first use."""
        cls = self._classes[name]
        if cls is None:
            module, qualname = self._lazy[name]
            cls = getattr(import_module(module), qualname)
            if self._checked_name(cls) != name:
                raise TypeError(
                    f"{module}.{qualname} declares {self.attribute} {getattr(cls, self.attribute)!r}, "
                    f"registered as {name!r}"
                )
            self._classes[name] = cls  # same key: keeps its place in the registration order
            del self._lazy[name]
        return cls

    def lookup(self, name: Any) -> T:
        """The class registered as ``name``.

        Raises:
            SpecError: None is; the message names the key and lists the valid choices.
        """
        try:
            return self._resolve(name)
        except (KeyError, TypeError):
            if isinstance(name, str) and name in self._classes:
                raise  # registered, but the lazily imported class fails a check: a bug, not a bad spec
            valid = ", ".join(self._classes)
            raise SpecError(f"{self.family}.{self.attribute}: unknown value {name!r}; valid choices: {valid}") from None

    # -- a read-only mapping of names to classes ----------------------------------------------------
    def __getitem__(self, name: str) -> T:
        return self._resolve(name)

    def __contains__(self, name: object) -> bool:
        return name in self._classes

    def __iter__(self) -> Iterator[str]:
        return iter(self._classes)

    def __len__(self) -> int:
        return len(self._classes)

    def items(self) -> list[tuple[str, T]]:
        """``(name, class)`` pairs in registration order (every plug-in imported)."""
        return [(name, self._resolve(name)) for name in list(self._classes)]

    def values(self) -> list[T]:
        """The classes in registration order (every plug-in imported)."""
        return [self._resolve(name) for name in list(self._classes)]

    def pop(self, name: str, default: Any = None) -> Any:
        """Unregister ``name`` (for tests that register a plug-in for a while)."""
        self._lazy.pop(name, None)
        return self._classes.pop(name, default)


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) for ``package``: ``exports`` maps a class re-exported
    there to the submodule defining it, imported on first access (so that importing the
    package does not import every plug-in)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f".{module}", package), name)

    return __getattr__
