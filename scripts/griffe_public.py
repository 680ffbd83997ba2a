"""A griffe extension for the API reference (mkdocs.yml): a class's special methods (``__str__``,
``__new__``, ``__slots__``...) are left out, as its docstring says what they mean for a user.

mkdocstrings' ``filters: public`` keeps what a module lists in ``__all__``, and every special
member of a class with it; this narrows the second half to ``__init__`` (merged into the class)
and ``__call__``.
"""

from __future__ import annotations

from typing import Any

import griffe

KEPT = {"__init__", "__call__"}


class SpecialMembersHidden(griffe.Extension):
    """Mark a class's special members other than ``__init__``/``__call__`` not public."""

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        for name, member in cls.members.items():
            if name.startswith("__") and name.endswith("__") and name not in KEPT:
                member.public = False
