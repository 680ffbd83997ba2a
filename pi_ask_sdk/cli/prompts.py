"""What ``pi-ask answer`` (and ``pi-ask demo --interactive``) asks, word for word.

Each prompt takes one line of input. Per form, in order: for each question a choice and a note,
then the final choice. A line that is refused is followed by a message (``  ! ...``) and the same
prompt again; ``!cancel`` at any prompt cancels the form. The help of ``pi-ask answer`` and
docs/relay.md quote these texts, so that scripted input can stay in step (a test checks both).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CHOOSE_MANY",
    "CHOOSE_ONE",
    "FINAL",
    "FINAL_CHOICES",
    "NOTE",
    "UNANSWERED",
    "choose_prompt",
    "note_prompt",
]

CHOOSE_ONE: Final = "  {id}> choose a number or a value; +text for custom text; Enter to skip: "
"""The choice of a single-select question (``{id}``: its id)."""
CHOOSE_MANY: Final = (
    "  {id}> choose numbers or values, comma-separated; +text for custom text; Enter to skip: "
)
"""The choice of a multi-select question."""
NOTE: Final = "  {id}> note (Enter for none): "
"""The note of a question, after its choice."""
FINAL: Final = "Submit (s), ask the agent to clarify first (e), or cancel (c)? "
"""After the last question: submit, elaborate (the agent clarifies first) or cancel."""
FINAL_CHOICES: Final = {"s": "submit", "e": "elaborate", "c": "cancel"}

UNANSWERED: Final = (
    "nothing was sent for the forms not answered. In Pi's TUI they stay open (answer them "
    "there or with another bridge); a headless Pi ends each as a tool error for its agent "
    "once no answering bridge has been connected for its grace period "
    "(PI_ASK_RELAY_GRACE_MS, 5 s by default)."
)
"""What becomes of the forms ``pi-ask answer`` leaves (docs/relay.md, the grace period)."""


def choose_prompt(question_id: str, *, multi: bool) -> str:
    return (CHOOSE_MANY if multi else CHOOSE_ONE).format(id=question_id)


def note_prompt(question_id: str) -> str:
    return NOTE.format(id=question_id)
