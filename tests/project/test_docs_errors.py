"""docs/errors.md lists exactly the error codes of `contracts.errors`, each with its own description.

The doc's tables are rows of `| `code` | description |`. Every table but the last section's
must hold exactly `DESCRIPTIONS` (same codes, same text, each once); the section "Snapshot
tokens" must hold exactly `SNAPSHOT_DESCRIPTIONS`, whose codes are those of `SnapshotErrorCode`.
A pure file comparison: no server.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import get_args

from contracts.errors import DESCRIPTIONS, SNAPSHOT_DESCRIPTIONS, SnapshotErrorCode

DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
SNAPSHOT_SECTION = "## Snapshot tokens"
ROW = re.compile(r"^\| `([a-z0-9_]+)` \| (.+?) \|$", flags=re.MULTILINE)


def rows(markdown: str) -> list[tuple[str, str]]:
    """The (code, description) of every table row that starts with a code in backticks."""
    return [(match.group(1), match.group(2)) for match in ROW.finditer(markdown)]


def sections() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The rows of the product's codes, and the rows of the snapshot section."""
    text = DOC.read_text(encoding="utf-8")
    assert text.count(SNAPSHOT_SECTION) == 1, f"docs/errors.md needs one {SNAPSHOT_SECTION!r} section"
    product, snapshot = text.split(SNAPSHOT_SECTION)
    return rows(product), rows(snapshot)


def test_the_doc_lists_every_code_of_descriptions_with_its_description() -> None:
    product, _ = sections()
    repeated = [code for code, count in Counter(code for code, _ in product).items() if count > 1]
    assert repeated == [], f"listed more than once in docs/errors.md: {repeated}"
    documented = dict(product)
    missing = {code: text for code, text in DESCRIPTIONS.items() if code not in documented}
    extra = sorted(set(documented) - set(DESCRIPTIONS))
    differing = {
        code: (documented[code], text)
        for code, text in DESCRIPTIONS.items()
        if code in documented and documented[code] != text
    }
    fixes = "\n".join(f"| `{code}` | {text} |" for code, text in missing.items())
    assert missing == {}, f"docs/errors.md lacks these codes; add the rows:\n{fixes}"
    assert extra == [], f"docs/errors.md lists codes that contracts/errors.py does not define: {extra}"
    assert differing == {}, f"descriptions differ from DESCRIPTIONS (doc, code): {differing}"


def test_the_snapshot_section_lists_exactly_the_snapshot_codes() -> None:
    _, snapshot = sections()
    codes = [code for code, _ in snapshot]
    assert sorted(codes) == sorted(get_args(SnapshotErrorCode))
    assert all(description.strip() for _, description in snapshot)
    assert sorted(SNAPSHOT_DESCRIPTIONS) == sorted(get_args(SnapshotErrorCode))
    assert dict(snapshot) == SNAPSHOT_DESCRIPTIONS, "docs/errors.md differs from SNAPSHOT_DESCRIPTIONS"


def test_a_changed_description_is_noticed() -> None:
    product, _ = sections()
    code, text = next(iter(DESCRIPTIONS.items()))
    assert (code, text) in product
    altered = DOC.read_text(encoding="utf-8").replace(f"| `{code}` | {text} |", f"| `{code}` | {text[:-1]} |")
    assert (code, text) not in rows(altered)
