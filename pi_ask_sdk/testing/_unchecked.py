"""``unchecked_answer``: an answer the SDK does not check, for tests that need the host to refuse
something (re-exported by ``pi_ask_sdk.testing``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pi_ask_core.protocol import ResultMode
from pi_ask_sdk.forms import F, FlowView
from pi_ask_sdk.responses import UncheckedAnswer

__all__ = ["unchecked_answer"]


def unchecked_answer(
    flow: FlowView[F], values: Mapping[str, Sequence[str]], *, mode: ResultMode = "submit"
) -> UncheckedAnswer[F]:
    """An answer selecting these *strings* verbatim, with **no** local check: only for tests
    that need the host to refuse something (a label, an unknown question). Bridges use
    ``AnswerBuilder``. It is an ``UncheckedAnswer``, not an ``Answer``: ``submit`` takes it,
    and a signature that accepts it says so.

    Args:
        flow: The flow the answer is for.
        values: The strings to select, by question id (sent as they are).
        mode: ``"submit"``, or ``"elaborate"`` to ask the agent to clarify first.
    """
    # tuple([...]), not tuple(<generator>): a tuple grown from a generator is resized at the
    # end, which leaves gc bookkeeping behind per call, and the benchmarks count what each flow
    # leaves (the gc line of bench/relay.py)
    answers = tuple([(qid, tuple([str(text) for text in texts])) for qid, texts in values.items()])
    return UncheckedAnswer(flow.flow_id, answers, mode)
