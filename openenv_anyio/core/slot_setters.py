"""Building frozen, slotted dataclass instances on the per-frame path.

A frozen dataclass's ``__init__`` stores each field with ``object.__setattr__(self, name,
value)`` (its own ``__setattr__`` refuses); setting the slot through its member descriptor
stores the same value for less (bench/README.md, "Client CPU per step"). The classes stay
frozen and their constructors unchanged; only code that builds one instance per frame (the
frame decoder, the client's step result) uses these setters, and it passes every field (a
test compares what it builds with the constructor's result).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

__all__ = ["new_instance", "slot_setters"]

#: ``cls.__new__`` without ``__init__``: the object whose slots the setters then fill
new_instance: Callable[[type[Any]], Any] = object.__new__


def slot_setters(cls: type[Any]) -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of ``cls``'s fields, in field order: ``setter(instance, value)``.

    ``cls`` must be a slotted dataclass; whoever builds an instance with
    :data:`new_instance` must call every setter (an unset slot raises ``AttributeError``
    when read).
    """
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a slotted dataclass")
    return tuple(cls.__dict__[item.name].__set__ for item in dataclasses.fields(cls))
