"""The Typer application class: exits the process without interpreter teardown.

The Temporal SDK's Rust core keeps threads that may call into Python while a
short-lived process finalizes, which sometimes aborts it with "Fatal Python
error: PyGILState_Release" and exit code 134 after the command has finished
(temporalio/sdk-python#300). A CLI must not turn success into a crash, so once a
command is done we flush the standard streams and leave with `os._exit`.
`typer.testing.CliRunner` does not go through `__call__`, so tests are unaffected.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import typer

from hosting.tracing import flush_tracing


class CliApp(typer.Typer):
    """A `typer.Typer` whose process exit skips interpreter finalization."""

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Run the command line, then exit with its code (see the module docstring for why)."""
        code = 0
        try:
            super().__call__(*args, **kwargs)
        except SystemExit as done:
            if isinstance(done.code, str):
                print(done.code, file=sys.stderr)
                code = 1
            else:
                code = done.code or 0
        finally:
            flush_tracing()  # os._exit skips the tracer provider's own flush at exit
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
