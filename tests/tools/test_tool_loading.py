"""`worker.py --tools` and `--mcp-config`: real modules, real worker processes, one-line errors."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.tools.tool_loading import ToolLoadError, build_tool_registry, load_tool_module, option_values
from activities.tools.tool_registry import ToolRegistry
from tests.mcp_servers.harness import calls, process_exists, start_agent, stdio_server, tool_messages

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A folder on sys.path for the test's modules, and a prefix that keeps their names unique."""
    monkeypatch.syspath_prepend(str(tmp_path))  # pyright: ignore[reportUnknownMemberType]
    prefix = f"m{uuid.uuid4().hex[:8]}"
    yield tmp_path, prefix
    for name in [name for name in sys.modules if name.startswith(prefix)]:
        del sys.modules[name]


def write(folder: Path, name: str, source: str) -> str:
    (folder / f"{name}.py").write_text(textwrap.dedent(source))
    return name


GREET = '''
def greet(name: str) -> str:
    """Greet someone.

    Args:
        name: Who.
    """
    return f"hello {name}"
'''


def test_the_three_conventions_and_the_example(modules: tuple[Path, str]) -> None:
    folder, prefix = modules
    by_list = write(folder, f"{prefix}_list", GREET + "TOOLS = [greet]\n")
    by_function = write(
        folder,
        f"{prefix}_fn",
        GREET.replace("greet", "wave") + "def register(registry):\n    registry.register(wave)\n",
    )
    by_registry = write(
        folder,
        f"{prefix}_reg",
        "from activities.tools.tool_registry import ToolRegistry\nregistry = ToolRegistry()\n"
        + GREET.replace("def greet", "@registry.register(name='nod')\ndef greet"),
    )
    registry = build_tool_registry([by_list, by_function, by_registry, "examples.support_tools"])
    assert registry.names() == ["calculator", "greet", "issue_refund", "lookup_order", "nod", "wave"]
    assert registry.spec("greet").parameters["properties"] == {
        "name": {"type": "string", "description": "Who."}
    }


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (
            "x = 1\n",
            "registers no tools; define register(registry), a ToolRegistry named `registry`, or a TOOLS",
        ),
        ("def register(registry):\n    pass\n", "registers no tools"),
        ("1 / 0\n", "importing it failed: ZeroDivisionError: division by zero"),
        (
            "import not_installed_dependency\n",
            "importing it failed: ModuleNotFoundError: No module named 'not_in",
        ),
        ("def broken(:\n", "importing it failed: SyntaxError: invalid syntax"),
        (
            GREET + "TOOLS = [greet]\ndef register(r):\n    pass\n",
            "defines register and TOOLS; keep one of them",
        ),
        ("TOOLS = greet = 3\n", "TOOLS is a int, not a list of functions"),
        (GREET + "TOOLS = [greet, 'calculator']\n", "TOOLS[1] is not a function: 'calculator'"),
        (
            "def f(*args):\n    '''F.'''\nTOOLS = [f]\n",
            "TOOLS[0]: TypeError: tool 'f': *args and **kwargs cannot",
        ),
        (GREET + "TOOLS = [greet, greet]\n", "TOOLS[1]: ValueError: tool 'greet' is already registered"),
        ("registry = {}\n", "`registry` is a dict, not a ToolRegistry"),
        ("register = 5\n", "`register` is not a function"),
        (
            "def register(registry):\n    raise RuntimeError('no db')\n",
            "register failed: RuntimeError: no db",
        ),
        (
            "def calculator(x: int) -> int:\n    '''C.'''\n    return x\nTOOLS = [calculator]\n",
            "tool 'calculator' is already registered (by the built-in tools); rename one of them",
        ),
    ],
)
def test_a_module_that_cannot_be_used_is_one_clear_line(
    modules: tuple[Path, str], source: str, problem: str
) -> None:
    folder, prefix = modules
    name = write(folder, f"{prefix}_bad", source)
    with pytest.raises(ToolLoadError) as error:
        build_tool_registry([name])
    message = str(error.value)
    assert message.startswith(f"--tools {name}: ") and problem in message and "\n" not in message


def test_missing_modules_clashes_between_modules_and_nothing_half_registered(
    modules: tuple[Path, str],
) -> None:
    folder, prefix = modules
    with pytest.raises(
        ToolLoadError, match=r"--tools nope\.tools: no module named 'nope' \(install it, or add"
    ):
        build_tool_registry(["nope.tools"])
    with pytest.raises(ToolLoadError, match="not a dotted module name"):
        build_tool_registry(["tools/mine.py"])
    first = write(folder, f"{prefix}_one", GREET + "TOOLS = [greet]\n")
    second = write(
        folder, f"{prefix}_two", GREET.replace("greet", "other") + GREET + "TOOLS = [other, greet]\n"
    )
    with pytest.raises(
        ToolLoadError, match=rf"--tools {second}: tool 'greet' is already registered \(by --tools {first}\)"
    ):
        build_tool_registry([first, second])
    registry = ToolRegistry()
    load_tool_module(registry, first)
    with pytest.raises(ToolLoadError):
        load_tool_module(registry, second)
    assert registry.names() == ["greet"]  # `other` was not added either


def test_flags_replace_the_environment_variable() -> None:
    env = {"REACT_TOOLS": " a.tools, b ,,a.tools"}
    assert option_values(None, "REACT_TOOLS", env) == ["a.tools", "b"]
    assert option_values(["c", "c"], "REACT_TOOLS", env) == ["c"]
    assert option_values(None, "REACT_TOOLS", {}) == []


def worker_command(*flags: str) -> list[str]:
    return [sys.executable, str(REPO / "worker.py"), *flags]


def worker_env(**extra: str) -> dict[str, str]:
    """This environment without the caller's own tool settings, plus `extra`."""
    base = {k: v for k, v in os.environ.items() if k not in ("REACT_TOOLS", "REACT_MCP_CONFIG")}
    return {**base, **extra}


@pytest.mark.parametrize(
    ("flags", "env", "expected"),
    [
        (["--tools", "nope_tools"], {}, "worker: --tools nope_tools: no module named 'nope_tools'"),
        ([], {"REACT_TOOLS": "examples.support_tools,nope2"}, "worker: --tools nope2: no module named"),
        (["--mcp-config", "/nonexistent.json"], {}, "worker: MCP config /nonexistent.json: cannot read it"),
    ],
)
def test_the_worker_refuses_to_start_with_one_line(
    flags: list[str], env: dict[str, str], expected: str
) -> None:
    done = subprocess.run(
        worker_command("--address", "127.0.0.1:1", *flags),
        env=worker_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith(expected), done.stderr


async def test_a_worker_process_with_tools_and_mcp_and_how_it_stops(client: Client, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"demo": stdio_server(tmp_path, ["add", "pid"])}}))
    mounted = tmp_path / "mounted"  # like a folder mounted at /tools in the container
    mounted.mkdir()
    write(mounted, "my_tools", GREET + "TOOLS = [greet]\n")
    queue = f"react-cli-test-{uuid.uuid4().hex[:8]}"
    address = client.service_client.config.target_host
    for stop in (signal.SIGTERM, signal.SIGKILL):
        log = tmp_path / f"worker-{stop.name}.log"
        with log.open("w") as stderr_file:
            worker = await asyncio.create_subprocess_exec(
                *worker_command("--address", address, "--task-queue", queue),
                env=worker_env(
                    REACT_TOOLS="examples.support_tools,my_tools",
                    REACT_MCP_CONFIG=str(config),
                    PYTHONPATH=str(mounted),
                ),
                stderr=stderr_file,
            )
        try:
            round_ = calls(
                ("lookup_order", {"order_id": "A-1002"}), ("greet", {"name": "Ada"}), ("demo__pid", {})
            )
            handle = await start_agent(
                client, queue, [round_, {"content": "."}], ["lookup_order", "greet", "demo__pid"]
            )
            result = await asyncio.wait_for(handle.result(), 120)
            order, greeting, pid = tool_messages(result)
            assert order["result"]["status"] == "shipped" and greeting["result"] == "hello Ada"
            mcp_pid = int(pid["result"]["result"])
            assert process_exists(mcp_pid)
        finally:
            worker.send_signal(stop)
            await asyncio.wait_for(worker.wait(), 60)
        stderr = log.read_text()
        # A stopped worker closes its MCP sessions; a killed one leaves the server its closed stdin.
        for _ in range(200):
            if not process_exists(mcp_pid):
                break
            await asyncio.sleep(0.1)
        assert not process_exists(mcp_pid), f"MCP server {mcp_pid} outlived the worker ({stop.name})"
        if stop == signal.SIGTERM:
            assert worker.returncode == 0, stderr
            assert "tools from examples.support_tools: issue_refund, lookup_order" in stderr
            assert "MCP tools: demo__add, demo__pid" in stderr
