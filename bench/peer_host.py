"""A plain-dict ``pi-agent-ask`` host written from the spec, used ONLY as a benchmark peer.

This is NOT a rules engine: nothing in pi-ask-sdk uses it, and it is not shipped. The one rules
engine is ``pi_ask_core``. ``bench/core.py`` times ``pi_ask_core`` against this file to answer one
question: is the core faster than the straightforward host anyone could write from
``shared/spec/protocol.md`` (§1-§5, Appendix A) with plain dicts and the ``json`` module (no
msgspec)? For that comparison to be fair it does the same work: it checks ask_user input, emits
``started``, checks submits in spec order, builds results and emits ``completed`` and
``submit-result`` as plain dicts on a synchronous bus. ``tests/test_bench_peer_host.py`` checks it
against the spec's ``examples.json``.

Straightforward means what a careful first implementation does (index the form by id once, look
values up in dicts), not tuned for speed, and not deliberately slow.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

STARTED = "pi-agent-ask:started"
COMPLETED = "pi-agent-ask:completed"
SUBMIT = "pi-agent-ask:submit"
SUBMIT_RESULT = "pi-agent-ask:submit-result"

# Appendix A.1: JavaScript's String.prototype.trim() whitespace.
JS_SPACE = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_SPACE_RUN = re.compile("[" + re.escape(JS_SPACE) + "]+")
_DASH_RUN = re.compile("[_-]+")

INSTRUCTION = (
    "First answer the user's noted clarification directly and concisely using the provided "
    "question and option context. Do not treat these notes as final answers. Then re-ask only "
    "the affected questions if a choice is still needed afterward. Do not jump straight to a "
    "follow-up question unless the note is already resolved."
)

Json = dict[str, Any]
Handler = Callable[[Any], None]


def to_json(value: Any) -> str:
    """JavaScript's ``JSON.stringify`` of a string (non-ASCII kept as is)."""
    return json.dumps(value, ensure_ascii=False)


def trim(text: str) -> str:
    return text.strip(JS_SPACE)


def js_keys(obj: Json) -> list[str]:
    """Appendix A.2: canonical array-index keys ascending, then the rest in insertion order."""
    index = [k for k in obj if k.isascii() and k.isdigit() and (k == "0" or k[0] != "0")]
    index = [k for k in index if int(k) <= 2**32 - 2]
    if not index:
        return list(obj)
    seen = set(index)
    return sorted(index, key=int) + [k for k in obj if k not in seen]


class PeerBus:
    """Synchronous fan-out, as Pi's EventEmitter: handlers run inside ``emit`` in order."""

    def __init__(self) -> None:
        self.handlers: dict[str, list[Handler]] = {}

    def on(self, channel: str, handler: Handler) -> None:
        self.handlers.setdefault(channel, []).append(handler)

    def emit(self, channel: str, data: Any) -> None:
        for handler in self.handlers.get(channel, ()):
            handler(data)


class PeerInvalidForm(Exception):
    """ask_user input refused: ``kind`` is ``schema_error`` or ``invalid_input``."""

    def __init__(self, kind: str, issues: list[Json]) -> None:
        super().__init__(f"{kind}: {issues}")
        self.kind = kind
        self.issues = issues


# --- form input (§2) ----------------------------------------------------------------------------


def derive_label(value: str) -> str | None:
    """§2.2: ``follow_up`` -> ``Follow up``; None when nothing is left."""
    words = trim(_SPACE_RUN.sub(" ", _DASH_RUN.sub(" ", value)))
    if not words:
        return None
    if ord(words[0]) > 0xFFFF:
        return words  # a surrogate pair in JavaScript: left unchanged
    return words[0].upper() + words[1:]


def schema_check(params: Any) -> None:
    """§2.1 step 2: present keys must have their declared JSON type (missing counts as empty)."""
    issues: list[Json] = []

    def want(ok: bool, path: str, what: str) -> None:
        if not ok:
            issues.append({"path": path, "message": f"must be {what}"})

    if not isinstance(params, dict):
        raise PeerInvalidForm("schema_error", [{"path": "", "message": "must be an object"}])
    if "title" in params:
        want(isinstance(params["title"], str), "title", "a string")
    if "background" in params:
        want(isinstance(params["background"], bool), "background", "a boolean")
    questions = params.get("questions", [])
    want(isinstance(questions, list), "questions", "an array")
    if isinstance(questions, list):
        for i, q in enumerate(questions):
            qp = f"questions[{i}]"
            if not isinstance(q, dict):
                want(False, qp, "an object")
                continue
            for key in ("id", "label", "prompt", "type"):
                if key in q:
                    want(isinstance(q[key], str), f"{qp}.{key}", "a string")
            if "required" in q:
                want(isinstance(q["required"], bool), f"{qp}.required", "a boolean")
            options = q.get("options", [])
            want(isinstance(options, list), f"{qp}.options", "an array")
            if not isinstance(options, list):
                continue
            for j, o in enumerate(options):
                op = f"{qp}.options[{j}]"
                if not isinstance(o, dict):
                    want(False, op, "an object")
                    continue
                for key in ("value", "label", "description", "preview", "previewFile"):
                    if key in o:
                        want(isinstance(o[key], str), f"{op}.{key}", "a string")
                if "recommended" in o:
                    want(isinstance(o["recommended"], bool), f"{op}.recommended", "a boolean")
    if issues:
        raise PeerInvalidForm("schema_error", issues)


def prepare_labels(params: Json) -> Json:
    """§2.2 on a copy of the raw arguments."""
    questions = params.get("questions")
    if not isinstance(questions, list):
        return params
    new_questions: list[Any] = []
    for q in questions:
        if isinstance(q, dict) and isinstance(q.get("options"), list):
            options: list[Any] = []
            for o in q["options"]:
                if isinstance(o, dict) and isinstance(o.get("value"), str):
                    label = o.get("label")
                    if "label" not in o or (isinstance(label, str) and not trim(label)):
                        derived = derive_label(o["value"])
                        if derived is not None:
                            o = {**o, "label": derived}
                options.append(o)
            q = {**q, "options": options}
        new_questions.append(q)
    return {**params, "questions": new_questions}


def semantic_issues(params: Json) -> list[Json]:
    """§2.3: every issue, in rule order."""
    questions = params.get("questions", [])
    if not questions:
        return [{"path": "questions", "message": "At least one question is required"}]
    issues: list[Json] = []
    seen_ids: set[str] = set()
    for i, q in enumerate(questions):
        n, qp = i + 1, f"questions[{i}]"
        qtype = q.get("type")
        if qtype is not None and qtype not in ("single", "multi", "preview"):
            issues.append(
                {
                    "path": f"{qp}.type",
                    "message": f"Question {n}: invalid type {to_json(qtype)}; "
                    'expected "single", "multi", or "preview"',
                }
            )
        qid = trim(q.get("id", ""))
        if not qid:
            issues.append({"path": f"{qp}.id", "message": f"Question {n}: id is required"})
        elif qid in seen_ids:
            issues.append(
                {"path": f"{qp}.id", "message": f'Question {n}: duplicate question id "{qid}"'}
            )
        seen_ids.add(qid)
        if not trim(q.get("prompt", "")):
            issues.append({"path": f"{qp}.prompt", "message": f"Question {n}: prompt is required"})
        options = q.get("options", [])
        if not options:
            issues.append(
                {
                    "path": f"{qp}.options",
                    "message": f"Question {n}: at least one option is required",
                }
            )
        seen_values: set[str] = set()
        for j, o in enumerate(options):
            prefix, op = f"Question {n}, option {j + 1}", f"{qp}.options[{j}]"
            value = trim(o.get("value", ""))
            if not value:
                issues.append({"path": f"{op}.value", "message": f"{prefix}: value is required"})
            elif value in seen_values:
                issues.append(
                    {
                        "path": f"{op}.value",
                        "message": f'{prefix}: duplicate option value "{value}"',
                    }
                )
            seen_values.add(value)
            if not trim(o.get("label", "")):
                issues.append({"path": f"{op}.label", "message": f"{prefix}: label is required"})
            preview, preview_file = trim(o.get("preview", "")), trim(o.get("previewFile", ""))
            if preview and preview_file:
                issues.append(
                    {
                        "path": f"{op}.previewFile",
                        "message": f"{prefix}: use either preview or previewFile, not both",
                    }
                )
            if qtype == "preview" and not preview and not preview_file:
                issues.append(
                    {
                        "path": f"{op}.preview",
                        "message": f"{prefix}: preview questions require preview text for every "
                        'option; add preview text or use type "single" instead',
                    }
                )
    return issues


def load_previews(params: Json, cwd: str) -> tuple[dict[tuple[int, int], str], list[Json]]:
    """§2.5: the text of every non-blank previewFile, and the issues of those that fail."""
    texts: dict[tuple[int, int], str] = {}
    issues: list[Json] = []
    for i, q in enumerate(params["questions"]):
        for j, o in enumerate(q["options"]):
            name = trim(o.get("previewFile", ""))
            if not name:
                continue
            path = os.path.abspath(os.path.join(cwd, name))
            try:
                with open(path, "rb") as fh:
                    text = fh.read().decode("utf-8")
                if "\0" in text:
                    raise ValueError("Expected UTF-8 text, not binary data")
                if not trim(text):
                    raise ValueError("Preview file is empty")
                texts[(i, j)] = text
            except (OSError, ValueError) as exc:
                issues.append(
                    {
                        "path": f"questions[{i}].options[{j}].previewFile",
                        "message": f'Cannot load preview file "{path}": {exc}',
                    }
                )
    return texts, issues


def normalize(params: Json, previews: dict[tuple[int, int], str], as_multi: bool) -> list[Json]:
    """§2.4: the questions of ``started``, in the reference key order."""
    out: list[Json] = []
    for i, q in enumerate(params["questions"]):
        qtype = q.get("type") or "single"
        question: Json = {
            "id": trim(q["id"]),
            "label": trim(q.get("label", "")) or f"Q{i + 1}",
            "prompt": trim(q["prompt"]),
            "type": qtype,
        }
        if as_multi and qtype == "single":
            question["type"] = "multi"
            question["requestedType"] = "single"
            question["presentedType"] = "multi"
        question["required"] = q.get("required", False)
        options: list[Json] = []
        for j, o in enumerate(q["options"]):
            option: Json = {"value": trim(o["value"]), "label": trim(o["label"])}
            description = trim(o.get("description", ""))
            if description:
                option["description"] = description
            preview = trim(previews.get((i, j), o.get("preview", "")))
            if preview:
                option["preview"] = preview
            if "recommended" in o:
                option["recommended"] = o["recommended"]
            options.append(option)
        question["options"] = options
        out.append(question)
    return out


# --- flows and results (§3, §5) -----------------------------------------------------------------


class PeerFlow:
    """One open form, indexed once: questions by id, options by value."""

    def __init__(
        self, flow_id: str, tool_call_id: str | None, title: str | None, qs: list[Json]
    ) -> None:
        self.flow_id = flow_id
        self.tool_call_id = tool_call_id
        self.title = title
        self.questions = qs
        self.by_id = {q["id"]: q for q in qs}
        self.options = {
            q["id"]: {o["value"]: (index, o) for index, o in enumerate(q["options"], 1)} for q in qs
        }


def requested_type(q: Json) -> str:
    return str(q.get("requestedType", q["type"]))


def summary(q: Json) -> Json:
    out: Json = {"id": q["id"], "label": q["label"], "prompt": q["prompt"]}
    out["type"] = requested_type(q)
    if "presentedType" in q and q["presentedType"] != out["type"]:
        out["presentedType"] = q["presentedType"]
    return out


def context(q: Json) -> Json:
    out = summary(q)
    out["options"] = [context_option(o) for o in q["options"]]
    return out


def context_option(o: Json) -> Json:
    out: Json = {"value": o["value"], "label": o["label"]}
    for key in ("description", "preview", "recommended"):
        if key in o:
            out[key] = o[key]
    return out


def serialize(answer: Json) -> Json:
    """§5.1, from the accepted answer ``{selections, custom, note, optionNotes}``."""
    selections = answer["selections"]
    custom = answer["custom"]
    out: Json = {
        "values": [s[0] for s in selections],
        "labels": [s[1] for s in selections],
        "indices": [s[2] for s in selections],
    }
    if custom is not None:
        out["values"].append(custom)
        out["labels"].append(custom)
        out["customText"] = custom
    if answer["note"] is not None:
        out["note"] = answer["note"]
    notes = answer["optionNotes"]
    selected_notes = {s[0]: notes[s[0]] for s in selections if notes.get(s[0])}
    if selected_notes:
        out["optionNotes"] = selected_notes
    return out


def is_empty(serialized: Json) -> bool:
    return not (
        serialized["values"]
        or "customText" in serialized
        or "note" in serialized
        or "optionNotes" in serialized
    )


def build_result(flow: PeerFlow, accepted: Json | None, mode: str, cancelled: bool) -> Json:
    result: Json = {}
    if flow.title is not None:
        result["title"] = flow.title
    result["cancelled"] = cancelled
    result["mode"] = mode
    result["questions"] = [summary(q) for q in flow.questions]
    accepted = accepted or {}
    answers: Json = {}
    for qid, answer in accepted.items():
        serialized = serialize(answer)
        if mode == "submit":
            if not is_empty(serialized):
                answers[qid] = serialized
        elif serialized["values"]:  # committed: a value or custom text
            answers[qid] = serialized
    result["answers"] = answers
    if mode != "elaborate":
        return result
    affected: list[str] = []
    preserved: Json = {}
    states: Json = {}
    items: list[Json] = []
    for q in flow.questions:
        qid = q["id"]
        answer = accepted.get(qid)
        if answer is not None and (answer["note"] is not None or answer["optionNotes"]):
            affected.append(qid)
            states[qid] = {"status": "needs_clarification"}
            items += elaboration_items(flow, q, answer)
        elif qid in answers:
            preserved[qid] = dict(answers[qid])
            states[qid] = {"status": "answered"}
        else:
            states[qid] = {"status": "unanswered"}
    result["continuation"] = {
        "affectedQuestionIds": affected,
        "preservedAnswers": {k: preserved[k] for k in js_keys(preserved)},
        "questionStates": {k: states[k] for k in js_keys(states)},
        "strategy": "refine_only",
    }
    if not cancelled:
        result["elaboration"] = {
            "instruction": INSTRUCTION,
            "nextAction": "clarify_then_reask",
            "items": items,
        }
    return result


def elaboration_items(flow: PeerFlow, q: Json, answer: Json) -> list[Json]:
    """§5.5 for one question with notes."""
    answered = bool(answer["selections"]) or answer["custom"] is not None
    serialized = serialize(answer) if answered else None
    items: list[Json] = []
    if answer["note"] is not None:
        item: Json = {"target": {"kind": "question"}, "question": context(q), "answered": answered}
        if serialized is not None:
            item["answer"] = serialized
        item["note"] = answer["note"]
        items.append(item)
    options = flow.options[q["id"]]
    selected = {s[0] for s in answer["selections"]}
    for value, note in answer["optionNotes"].items():
        if value not in options or not note:
            continue
        item = {
            "target": {"kind": "option", "optionValue": value},
            "question": context(q),
            "option": context_option(options[value][1]),
            "selected": value in selected,
            "answered": answered,
        }
        if serialized is not None:
            item["answer"] = serialized
        item["note"] = note
        items.append(item)
    return items


# --- the host (§3, §4) --------------------------------------------------------------------------


class PeerHost:
    """A headless host on ``bus``: ``start`` opens a flow, submits on ``SUBMIT`` are answered."""

    def __init__(
        self, bus: PeerBus, *, present_single_as_multi: bool = False, cwd: str = "."
    ) -> None:
        self.bus = bus
        self.as_multi = present_single_as_multi
        self.cwd = cwd
        self.active: dict[str, PeerFlow] = {}
        bus.on(SUBMIT, self.handle_submit)

    def start(self, params: Any, tool_call_id: str | None = None) -> str:
        """Check the input (§2), open the flow and emit ``started`` (synchronously)."""
        schema_check(params)
        params = prepare_labels(params)
        issues = semantic_issues(params)
        if issues:
            raise PeerInvalidForm("invalid_input", issues)
        previews, issues = load_previews(params, self.cwd)
        if issues:
            raise PeerInvalidForm("invalid_input", issues)
        questions = normalize(params, previews, self.as_multi)
        now = int(time.time() * 1000)
        if tool_call_id:
            flow_id = f"tool:{tool_call_id}"
        else:
            flow_id = f"flow:{now}:{os.urandom(8).hex()[:11]}"
        title = trim(params.get("title", "")) or None
        flow = PeerFlow(flow_id, tool_call_id or None, title, questions)
        self.active[flow_id] = flow
        started: Json = {"version": 1, "flowId": flow_id}
        if flow.tool_call_id is not None:
            started["toolCallId"] = flow.tool_call_id
        started["source"] = "tool"
        if title is not None:
            started["title"] = title
        started["questions"] = [
            {**q, "options": [dict(o) for o in q["options"]]} for q in questions
        ]
        started["createdAt"] = now
        self.bus.emit(STARTED, started)
        return flow_id

    def handle_submit(self, data: Any) -> None:
        self.bus.emit(SUBMIT_RESULT, self.resolve(data))

    def resolve(self, data: Any) -> Json:
        """§4.1: envelope, flow, answers; the first failure wins."""
        if not isinstance(data, dict):
            return refuse("", "", "invalid_request", "Submit event must be an object.")
        rid = data.get("requestId")
        fid = data.get("flowId")
        rid = rid if isinstance(rid, str) else ""
        fid = fid if isinstance(fid, str) else ""
        version = data.get("version")
        if isinstance(version, bool) or not isinstance(version, (int, float)) or version != 1:
            return refuse(rid, fid, "invalid_request", "Submit event version must be 1.")
        if not rid:
            return refuse(rid, fid, "invalid_request", "Submit event requestId is required.")
        if not fid:
            return refuse(rid, fid, "invalid_request", "Submit event flowId is required.")
        response = data.get("response")
        if not isinstance(response, dict):
            return refuse(rid, fid, "invalid_request", "Submit response must be an object.")
        kind = response.get("kind")
        if kind not in ("answer", "cancel"):
            return refuse(
                rid, fid, "invalid_request", 'Submit response kind must be "answer" or "cancel".'
            )
        flow = self.active.get(fid)
        if flow is None:
            return refuse(rid, fid, "flow_not_found", "Ask flow is not active.")
        if kind == "cancel":
            self.complete(flow, None, "submit", cancelled=True)
            return {"version": 1, "requestId": rid, "flowId": fid, "ok": True}
        answers = response.get("answers")
        if not isinstance(answers, dict):
            return refuse(
                rid, fid, "invalid_answer", "Answer response must include an answers object."
            )
        mode = response.get("mode", "submit")
        if "mode" in response and mode not in ("submit", "elaborate"):
            return refuse(
                rid, fid, "invalid_answer", 'Answer mode must be "submit" or "elaborate".'
            )
        accepted: Json = {}
        for qid in js_keys(answers):
            question = flow.by_id.get(qid)
            if question is None:
                return refuse(rid, fid, "invalid_answer", f'Unknown question id "{qid}".')
            checked = check_answer(flow, question, answers[qid])
            if isinstance(checked, str):
                return refuse(rid, fid, "invalid_answer", checked)
            accepted[qid] = checked
        self.complete(flow, accepted, mode, cancelled=False)
        return {"version": 1, "requestId": rid, "flowId": fid, "ok": True}

    def complete(
        self, flow: PeerFlow, accepted: Json | None, mode: str, *, cancelled: bool
    ) -> None:
        """§3.4: leave the active set first, then emit ``completed``."""
        if self.active.get(flow.flow_id) is flow:
            del self.active[flow.flow_id]
        event: Json = {"version": 1, "flowId": flow.flow_id}
        if flow.tool_call_id is not None:
            event["toolCallId"] = flow.tool_call_id
        event["source"] = "tool"
        event["result"] = build_result(flow, accepted, mode, cancelled)
        event["completedAt"] = int(time.time() * 1000)
        self.bus.emit(COMPLETED, event)


def refuse(rid: str, fid: str, error: str, message: str) -> Json:
    return {
        "version": 1,
        "requestId": rid,
        "flowId": fid,
        "ok": False,
        "error": error,
        "message": message,
    }


def check_answer(flow: PeerFlow, question: Json, entry: Any) -> Json | str:
    """§4.3 P1-P10: the accepted answer, or the message of the first failed check."""
    q = question["id"]
    if not isinstance(entry, dict):
        return f'Answer for question "{q}" must be an object.'
    values = entry.get("values", [])
    if "values" in entry and not (
        isinstance(values, list) and all(isinstance(v, str) for v in values)
    ):
        return f'Answer values for question "{q}" must be strings.'
    if len(set(values)) != len(values):
        return f'Answer values for question "{q}" must be unique.'
    multi = question["type"] == "multi"
    if not multi and len(values) > 1:
        return f'Question "{q}" accepts only one selected value.'
    custom = entry.get("customText")
    if "customText" in entry and not isinstance(custom, str):
        return f'Custom text for question "{q}" must be a string.'
    if isinstance(custom, str) and trim(custom) and not multi and values:
        return f'Question "{q}" cannot combine a selected value and custom text.'
    note = entry.get("note")
    if "note" in entry and not isinstance(note, str):
        return f'Note for question "{q}" must be a string.'
    notes = entry.get("optionNotes", {})
    if "optionNotes" in entry and not (
        isinstance(notes, dict) and all(isinstance(v, str) for v in notes.values())
    ):
        return f'Option notes for question "{q}" must be string values.'
    options = flow.options[q]
    selections: list[tuple[str, str, int]] = []
    for value in values:
        found = options.get(value)
        if found is None:
            return f'Unknown option value "{value}" for question "{q}".'
        selections.append((value, found[1]["label"], found[0]))
    kept: Json = {}
    for key in js_keys(notes):
        if not trim(notes[key]):
            continue
        if key not in options:
            return f'Unknown option note value "{key}" for question "{q}".'
        kept[key] = notes[key]
    return {
        "selections": selections,
        "custom": custom if isinstance(custom, str) and trim(custom) else None,
        "note": note if isinstance(note, str) and trim(note) else None,
        "optionNotes": kept,
    }
