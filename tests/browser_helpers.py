"""Debian's `chromium`, headless, driven by Playwright: the system browser, nothing downloaded.

The `playwright` package brings only its driver (in the wheel); `executable_path` points it at
/usr/bin/chromium (`scripts/setup.sh` installs it), so `playwright install` is never needed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from playwright.async_api import Browser, async_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """One headless browser process for as long as the block runs.

    Raises:
        FileNotFoundError: there is no /usr/bin/chromium (`scripts/setup.sh` installs it).
    """
    if not Path(CHROMIUM).is_file():
        raise FileNotFoundError(
            f"{CHROMIUM} is missing: run scripts/setup.sh (it installs Debian's chromium)"
        )
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=list(ARGS))
        try:
            yield browser
        finally:
            await browser.close()
