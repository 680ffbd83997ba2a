"""``AskParams``, ``ask_user`` tool input as a plain dict, and ``yes_no_params``, a small one
(``pi_ask_sdk.testing`` re-exports them; the conformance checks open their forms with them)."""

from __future__ import annotations

from typing_extensions import Required, TypedDict

from pi_ask_core.protocol import QuestionType

__all__ = ["AskParams", "AskParamsOption", "AskParamsQuestion", "yes_no_params"]


# The functional syntax keeps ``Required`` visible at run time (``__required_keys__``) despite
# ``from __future__ import annotations``.
AskParamsOption = TypedDict(  # noqa: UP013
    "AskParamsOption",
    {
        "value": Required[str],
        "label": str,
        "description": str,
        "preview": str,
        "previewFile": str,
        "recommended": bool,
    },
    total=False,
)
"""One option of ``ask_user`` input (what the agent writes)."""

AskParamsQuestion = TypedDict(  # noqa: UP013
    "AskParamsQuestion",
    {
        "id": Required[str],
        "label": str,
        "prompt": Required[str],
        "type": QuestionType,
        "required": bool,
        "options": Required[list[AskParamsOption]],
    },
    total=False,
)
"""One question of ``ask_user`` input."""

AskParams = TypedDict(  # noqa: UP013
    "AskParams",
    {"title": str, "background": bool, "questions": Required[list[AskParamsQuestion]]},
    total=False,
)
"""``ask_user`` tool input as a plain dict: what ``FakeHost.open`` takes (the same keys as the
``pi_ask_wire.AskParams`` stub and the ``pi_ask_core.AskParams`` Struct; a test checks it)."""


def yes_no_params(
    question_id: str = "deploy", *, prompt: str = "Deploy to production?", title: str = "Approval"
) -> AskParams:
    """``ask_user`` input with one single-choice question, values ``yes`` / ``no``."""
    return {
        "title": title,
        "questions": [
            {
                "id": question_id,
                "prompt": prompt,
                "options": [
                    {"value": "yes", "label": "Yes", "recommended": True},
                    {"value": "no", "label": "No"},
                ],
            }
        ],
    }
