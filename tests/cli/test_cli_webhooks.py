"""A session's webhooks from the command line: `ask --session-webhook-url`, `ask --webhook-url`, `webhook`.

Separate `client.py` processes against the real dev server and a worker on the product's task
queue; a real receiver on 127.0.0.1 verifies every signature with `standardwebhooks`.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from temporalio.client import Client

from tests.cli.test_cli_schedules import cli, product_queue
from tests.webhook_receiver import Receiver

__all__ = ["product_queue"]  # the worker fixture, shared with the schedules' CLI tests


async def test_a_sessions_webhook_is_set_at_start_shown_refused_cleared_and_overridden(
    client: Client, product_queue: str, tmp_path: Path
) -> None:
    session_hook, own = Receiver(), Receiver()
    await session_hook.start()
    await own.start()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "done"}]), encoding="utf-8")
    sid = f"agent-cli-hooks-{uuid.uuid4().hex[:8]}"
    agent = ("--script", str(script), "--no-stream")
    try:
        code, out, err = await cli(
            client, "ask", "One", "--session", sid, *agent, "--session-webhook-url", session_hook.url
        )
        assert code == 0, err
        [first] = await session_hook.wait_for(1)
        assert first.verified and first.body["data"]["thread_id"] == sid

        code, out, err = await cli(client, "webhook", sid)
        assert code == 0, err
        assert f"session: {session_hook.url}" in out and "agent:   (none)" in out

        code, out, err = await cli(client, "webhook", sid, "--set", "http://10.0.0.1/hook")
        assert code == 1 and "invalid_input" in out + err and "webhook_url:" in out + err
        code, out, err = await cli(
            client, "ask", "Bad", "--session", sid, *agent, "--webhook-url", "http://10.0.0.1/"
        )
        assert code == 1 and "invalid_input" in out + err and "webhook_url:" in out + err

        code, out, err = await cli(client, "ask", "Two", "--session", sid, *agent, "--webhook-url", own.url)
        assert code == 0, err
        [second] = await own.wait_for(1)
        assert second.verified and second.body["data"]["request_id"] != first.body["data"]["request_id"]

        code, out, err = await cli(client, "webhook", sid, "--clear")
        assert code == 0 and "accepted" in out, out + err
        code, out, err = await cli(client, "webhook", sid)
        assert "session: (none)" in out
        code, out, err = await cli(client, "ask", "Three", "--session", sid, *agent)
        assert code == 0, err
    finally:
        await session_hook.stop()
        await own.stop()
    assert len(session_hook.received) == 1 and len(own.received) == 1  # the refused ask asked nothing
