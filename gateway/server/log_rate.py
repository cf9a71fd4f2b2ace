"""Repeated log lines, rate-limited: one of each a window, then how many more there were.

A storm (a client flood, the process out of file descriptors) repeats one line thousands of times a
second; written out, it fills the disk in minutes and hides everything else. `RepeatedLines` lets
the first record of each line (logger, level and message, arguments filled in) through, drops the repeats for
`window_s`, and adds to the next one let through how many it dropped. `rate_limit_logs` puts it on
every handler of the root logger and of uvicorn's loggers.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable

__all__ = ["LOG_WINDOW_S", "RepeatedLines", "rate_limit_logs"]

LOG_WINDOW_S = 10.0
"""How long the repeats of a line are dropped after one is written."""
MAX_LINES_TRACKED = 1024
"""Distinct lines remembered (the least recently written forgotten first): the filter's memory is bounded."""
_UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")
_DECIDED = "_repeated_lines_passes"


class _Seen:
    __slots__ = ("dropped", "written_at")

    def __init__(self, written_at: float) -> None:
        self.written_at = written_at
        self.dropped = 0


class RepeatedLines(logging.Filter):
    """Lets one record of each line through per `window_s`; the next one says how many were dropped."""

    def __init__(self, window_s: float = LOG_WINDOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._window_s = window_s
        self._clock = clock
        # Keyed by a digest of the whole message: lines that differ (each request's access line) all
        # pass, and a long line costs the filter 16 bytes.
        self._seen: OrderedDict[tuple[str, int, bytes], _Seen] = OrderedDict()

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether `record` is written (its message then counts the repeats dropped before it)."""
        decided = record.__dict__.get(_DECIDED)
        if decided is not None:  # the same record at a second handler: the same answer
            return bool(decided)
        passes = self._passes(record)
        record.__dict__[_DECIDED] = passes
        return passes

    def _passes(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit the message: the handler reports that, not this filter
            message = str(record.msg)
        digest = hashlib.blake2b(message.encode("utf-8", "replace"), digest_size=16).digest()
        key = (record.name, record.levelno, digest)
        now = self._clock()
        seen = self._seen.get(key)
        if seen is not None and now - seen.written_at < self._window_s:
            seen.dropped += 1
            return False
        if seen is not None and seen.dropped:
            since = now - seen.written_at
            record.msg = f"{record.msg} [{seen.dropped} more like this in the last {since:.0f} s]"
        self._seen[key] = _Seen(now)
        self._seen.move_to_end(key)
        while len(self._seen) > MAX_LINES_TRACKED:
            self._seen.popitem(last=False)
        return True


def rate_limit_logs(
    window_s: float = LOG_WINDOW_S, loggers: Iterable[str] = _UVICORN_LOGGERS
) -> RepeatedLines:
    """Put one `RepeatedLines` on every handler of the root logger and of `loggers`; the filter."""
    repeated = RepeatedLines(window_s)
    handlers = list(logging.getLogger().handlers)
    for name in loggers:
        handlers.extend(logging.getLogger(name).handlers)
    for handler in dict.fromkeys(handlers):
        handler.addFilter(repeated)
    return repeated
