"""Registries of plug-ins (policies by name, platforms by kind): one way to register, checked."""

from __future__ import annotations

from typing import Any, Generic, Iterator, TypeVar

from .errors import SpecError
from .params import Param

__all__ = ["Registry"]

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
        self._classes: dict[str, T] = {}

    def register(self, cls: T) -> T:
        """Add ``cls`` under its registry name (usable as a class decorator).

        Raises:
            TypeError: ``cls`` is not of the family, declares no name, reuses a registered name,
                or declares parameters that are not :class:`~tiersweep.core.params.Param` or
                take a reserved key.
        """
        family = self.family
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise TypeError(f"{cls!r} is not a {self.base.__name__} subclass")
        name = getattr(cls, self.attribute)
        if not name:
            raise TypeError(f"{family} class {cls.__name__} declares no {self.attribute}")
        if name in self._classes and self._classes[name] is not cls:
            raise TypeError(f"{family} {self.attribute} {name!r} is already registered ({self._classes[name].__name__})")
        for key, param in cls.params.items():
            if not isinstance(param, Param):
                raise TypeError(f"{family} {name!r}: parameter {key!r} is not a Param")
            if key in self.reserved:
                raise TypeError(f"{family} {name!r}: parameter {key!r} clashes with a reserved key")
        self._classes[name] = cls
        return cls

    def lookup(self, name: Any) -> T:
        """The class registered as ``name``.

        Raises:
            SpecError: None is; the message names the key and lists the valid choices.
        """
        try:
            return self._classes[name]
        except (KeyError, TypeError):
            valid = ", ".join(self._classes)
            raise SpecError(f"{self.family}.{self.attribute}: unknown value {name!r}; valid choices: {valid}") from None

    # -- a read-only mapping of names to classes ----------------------------------------------------
    def __getitem__(self, name: str) -> T:
        return self._classes[name]

    def __contains__(self, name: object) -> bool:
        return name in self._classes

    def __iter__(self) -> Iterator[str]:
        return iter(self._classes)

    def __len__(self) -> int:
        return len(self._classes)

    def items(self):
        """``(name, class)`` pairs in registration order."""
        return self._classes.items()

    def values(self):
        """The classes in registration order."""
        return self._classes.values()

    def pop(self, name: str, default: Any = None) -> Any:
        """Unregister ``name`` (for tests that register a plug-in for a while)."""
        return self._classes.pop(name, default)
