"""A griffe extension for the API reference (mkdocs.yml): a class's special methods (``__str__``,
``__new__``, ``__slots__``...) are left out, as its docstring says what they mean for a user.

mkdocstrings' ``filters: public`` keeps what a module lists in ``__all__``, and every special
member of a class with it; this narrows the second half to ``__init__`` (merged into the class)
and ``__call__``. The members are dropped from the loaded model (not marked private), so a class
documented where it is re-exported loses them too.
"""

from __future__ import annotations

from typing import Any

import griffe

KEPT = {"__init__", "__call__"}


class SpecialMembersHidden(griffe.Extension):
    """Drop a class's special members other than ``__init__``/``__call__``."""

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        special = [
            name
            for name in cls.members
            if name.startswith("__") and name.endswith("__") and name not in KEPT
        ]
        for name in special:
            cls.del_member(name)
