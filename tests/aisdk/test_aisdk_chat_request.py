"""`gateway.aisdk.chat_request`: the AI SDK's chat request as a neutral request; junk refused by name."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.aisdk.chat_request import ApprovalAnswer, ChatRequest, parse_chat_request
from gateway.errors import GatewayError


def _user(text: str, message_id: str = "msg-u1", **extra: Any) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}], **extra}


def _body(*messages: dict[str, Any], chat_id: str = "thread-1", **extra: Any) -> dict[str, Any]:
    return {
        "id": chat_id,
        "messages": list(messages),
        "trigger": "submit-message",
        "messageId": None,
        **extra,
    }


def _responded(call_id: str, approved: bool, reason: str | None = None) -> dict[str, Any]:
    approval: dict[str, Any] = {"id": call_id, "approved": approved}
    if reason is not None:
        approval["reason"] = reason
    return {
        "type": "dynamic-tool",
        "toolName": "calculator",
        "toolCallId": call_id,
        "state": "approval-responded",
        "input": {"expression": "1+1"},
        "approval": approval,
    }


def test_the_last_user_message_is_the_ask() -> None:
    earlier = {"id": "a0", "role": "assistant", "parts": [{"type": "text", "text": "Hi!"}]}
    request = parse_chat_request(_body(_user("old", "u0"), earlier, _user("What is 2+2?", "u1")))
    assert request == ChatRequest("thread-1", "u1", ask="What is 2+2?")
    parts = [{"type": "step-start"}, {"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    joined = parse_chat_request(_body({"id": "u2", "role": "user", "parts": parts}))
    assert joined.ask == "one\n\ntwo"
    assert parse_chat_request({"id": "t", "messages": [_user("no trigger")]}).ask == "no trigger"


def test_the_busy_policy_comes_from_the_transports_extra_body() -> None:
    request = parse_chat_request(_body(_user("Be brief"), on_busy="steer", mode="interrupt"))
    assert (request.on_busy, request.mode, request.expected_last_request) == ("steer", "interrupt", None)
    stale = parse_chat_request(_body(_user("Next"), on_busy="enqueue", expected_last_request="r-1"))
    assert (stale.on_busy, stale.mode, stale.expected_last_request) == ("enqueue", "queue", "r-1")
    plain = parse_chat_request(_body(_user("Hi")))
    assert (plain.on_busy, plain.mode) == ("reject", "queue")


def test_approval_responses_in_the_assistant_message_are_decisions() -> None:
    assistant = {
        "id": "req-9",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "text", "text": "Let me compute."},
            _responded("call-a", True),
            _responded("call-b", False, "too costly"),
            {**_responded("call-c", True), "state": "output-available"},  # decided before: not again
        ],
    }
    request = parse_chat_request(_body(_user("compute"), assistant))
    assert request == ChatRequest(
        "thread-1",
        "req-9",
        approvals=(ApprovalAnswer("call-a", True), ApprovalAnswer("call-b", False, "too costly")),
    )
    answer = parse_chat_request(_body(_user("compute"), {**assistant, "id": "req-9:answer"}))
    assert answer.message_id == "req-9", "the answer's message id names its request"


def test_a_regenerate_names_the_request_of_its_message_id_and_an_edit_its_own_id() -> None:
    again = parse_chat_request(_body(_user("x"), trigger="regenerate-message", messageId="req-9:answer"))
    assert (again.regenerate, again.message_id, again.ask) == (True, "req-9", None)
    of_user = parse_chat_request(_body(trigger="regenerate-message", messageId="req-9"))
    assert (of_user.regenerate, of_user.message_id) == (True, "req-9"), "no messages needed"
    last = parse_chat_request(_body(_user("x"), trigger="regenerate-message"))
    assert (last.regenerate, last.message_id) == (True, ""), "no messageId: the thread's last request"
    edit = parse_chat_request(_body(_user("edited", "req-3"), messageId="req-3"))
    assert (edit.edits, edit.message_id, edit.ask) == (True, "req-3", "edited")
    assert not parse_chat_request(_body(_user("new", "req-4"))).edits


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        ([], "invalid_input", "JSON object"),
        ({"messages": [_user("x")]}, "invalid_input", "`id`"),
        (_body(_user("x"), chat_id="bad id!"), "invalid_input", "thread id"),
        (_body(_user("x"), chat_id="t-run-3"), "invalid_input", "thread id"),
        (_body(), "invalid_input", "non-empty"),
        ({"id": "t", "messages": "hi"}, "invalid_input", "non-empty"),
        (_body(_user("x"), trigger="regenerate-message", messageId="bad!"), "invalid_input", "`messageId`"),
        (_body(_user("x"), messageId=7), "invalid_input", "`messageId`"),
        (_body(_user("x"), trigger="other"), "invalid_input", "`trigger`"),
        (_body("junk"), "invalid_input", "UI message object"),  # pyright: ignore[reportArgumentType]
        (_body(_user("x", "bad id!")), "invalid_input", "`id` must match"),
        (_body({"id": "u", "role": "user"}), "invalid_input", "`parts`"),
        (_body({"id": "u", "role": "system", "parts": []}), "invalid_input", "the user's"),
        (_body(_user("   ")), "invalid_input", "no text"),
        (
            _body({"id": "u", "role": "user", "parts": [{"type": "text", "text": 3}]}),
            "invalid_input",
            "string",
        ),
        (_body({"id": "u", "role": "user", "parts": ["x"]}), "invalid_input", "object"),
        (
            _body(
                {
                    "id": "u",
                    "role": "user",
                    "parts": [{"type": "file", "url": "ftp://x", "mediaType": "text/plain"}],
                }
            ),
            "invalid_attachment",
            "data URL",
        ),
        (_body(_user("x" * 100_001)), "payload_too_large", "100,000"),
        (
            _body({"id": "a", "role": "assistant", "parts": [{"type": "text", "text": "hi"}]}),
            "invalid_input",
            "without",
        ),
        (
            _body({"id": "a", "role": "assistant", "parts": [{**_responded("c", True), "approval": None}]}),
            "invalid_input",
            "must carry `approval`",
        ),
        (
            _body(
                {
                    "id": "a",
                    "role": "assistant",
                    "parts": [{**_responded("c", True), "approval": {"id": "c"}}],
                }
            ),
            "invalid_input",
            "true or false",
        ),
        (
            _body({"id": "a", "role": "assistant", "parts": [_responded("c", True), _responded("c", False)]}),
            "invalid_input",
            "decided twice",
        ),
        (
            _body({"id": "a", "role": "assistant", "parts": [_responded("c", True, "r" * 2001)]}),
            "invalid_input",
            "`reason`",
        ),
    ],
)
def test_junk_is_refused_by_name(body: object, code: str, words: str) -> None:
    with pytest.raises(GatewayError) as refused:
        parse_chat_request(body)
    assert refused.value.code == code
    assert words in refused.value.message


_JSON: st.SearchStrategy[object] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def _object(required: dict[str, st.SearchStrategy[object]], **optional: st.SearchStrategy[object]) -> Any:
    """Objects with the `required` keys and any of the `optional` ones."""
    return st.fixed_dictionaries(required, optional=optional)


_APPROVAL = _object({}, id=_JSON, approved=_JSON, reason=_JSON) | _JSON
_STATE: st.SearchStrategy[object] = st.sampled_from(["approval-responded", "approval-requested", None])
_PART_TYPE: st.SearchStrategy[object] = st.sampled_from(
    ["text", "file", "step-start", "dynamic-tool", "tool-x", 3]
)
_PART = _object({"type": _PART_TYPE}, text=_JSON, state=_STATE, approval=_APPROVAL)
_ID: st.SearchStrategy[object] = st.sampled_from(["m-1", "", "bad id", 7]) | st.text(max_size=5)
_ROLE: st.SearchStrategy[object] = st.sampled_from(["user", "assistant", "system", None])
_MESSAGE = _object({}, id=_ID, role=_ROLE, parts=st.lists(_PART | _JSON, max_size=4) | _JSON)
_THREAD: st.SearchStrategy[object] = st.sampled_from(["thread-1", "bad id!", "", "t-run-1"]) | _JSON
_TRIGGER: st.SearchStrategy[object] = st.sampled_from(["submit-message", "regenerate-message", None]) | _JSON
_BODY = _object({}, id=_THREAD, messages=st.lists(_MESSAGE | _JSON, max_size=3) | _JSON, trigger=_TRIGGER)


@settings(max_examples=400, deadline=None)
@given(_BODY | _JSON)
def test_any_json_is_a_chat_request_or_a_named_refusal(body: object) -> None:
    try:
        request = parse_chat_request(body)
    except GatewayError as refused:
        assert refused.code in {
            "invalid_input",
            "unsupported_content",
            "payload_too_large",
            "invalid_attachment",
        }
        assert refused.message
        return
    if request.regenerate:  # the messages are not read: the thread says what is asked again
        assert request.ask is None and not request.approvals
        return
    assert (request.ask is None) != (not request.approvals)
    assert request.ask is None or request.ask.strip()
