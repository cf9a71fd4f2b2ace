"""`client.py memory put|get|search|list|delete`, as a user runs it: a real process on a real store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "client.py", "memory", *args, "--store-url", url]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_put_get_search_list_delete_and_a_refusal(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    put = cli(url, "put", "assistant", "drink", "Prefers green tea", "--value", '{"drink": "tea"}')
    assert put.returncode == 0, put.stderr
    assert json.loads(put.stdout)["value"] == {"drink": "tea"}
    assert json.loads(cli(url, "get", "assistant", "drink").stdout)["text"] == "Prefers green tea"
    found = [json.loads(line) for line in cli(url, "search", "assistant", "which drink").stdout.splitlines()]
    assert [item["key"] for item in found] == ["drink"]
    listed = cli(url, "list", "assistant", "--principal", "bob")
    assert (listed.returncode, listed.stdout) == (0, "")  # bob's memory holds nothing of local's
    refused = cli(url, "put", "assistant", "bad key", "x")
    assert refused.returncode == 1 and "invalid_input" in refused.stdout and "key" in refused.stdout
    assert cli(url, "delete", "assistant", "drink").stdout.strip() == "deleted drink"
    assert cli(url, "get", "assistant", "drink").returncode == 1
