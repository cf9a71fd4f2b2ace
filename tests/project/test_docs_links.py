"""Every relative link and every repository path the docs name exists.

The docs are README.md, docs/*.md and bench/README.md. A relative markdown link must reach a
file of the repository, and its `#anchor`, if any, a heading of that file (GitHub's rule:
lower case, punctuation dropped, spaces as hyphens). A path in backticks (`workflows/run/loop.py`,
`activities/`, `llm.py`) must exist: from the repository's root or the doc's folder, or, in a
table row that starts with a folder (`| `payloads/` | ... |`, as docs/architecture.md's tables
do), from that folder; a bare file name with no such row must name a file somewhere in the
repository. A folder (`tests/histories/`) counts when it starts at a top-level entry (`openai/`
is a model prefix). Runtime paths (`.temporal/`, `.venv/`), placeholders (`<digest>`), URLs and
model names (`openai/gpt-4o-mini`, no file suffix) are not repository paths. A pure file check:
no server.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", ROOT / "bench" / "README.md", *(ROOT / "docs").glob("*.md")])

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\s]+)`")
FENCE = re.compile(r"^(```|````).*?^\1\s*$", flags=re.MULTILINE | re.DOTALL)
ROW_FOLDER = re.compile(r"^\| `([\w.-]+(?:/[\w.-]+)*/)` \|")
SUFFIXES = (".py", ".md", ".json", ".yaml", ".yml", ".sh", ".toml", ".txt", ".lock", ".html")
RUNTIME = (".temporal/", ".venv/", ".bench/", "/", "~")
THIRD_PARTY = ("openai/_utils/",)
"""Paths inside installed packages that the docs name (the OpenAI SDK's request transform)."""


def prose(markdown: str) -> str:
    """The text outside fenced code blocks (commands and examples are not references)."""
    return FENCE.sub("", markdown)


def anchor_of(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a markdown file's headings (a repeated heading gets `-1`, `-2`, ...)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose(path.read_text(encoding="utf-8")).splitlines():
        if match := re.match(r"^#{1,6} (.+)$", line):
            anchor = anchor_of(match.group(1))
            count = seen.get(anchor, 0)
            seen[anchor] = count + 1
            found.add(anchor if count == 0 else f"{anchor}-{count}")
    return frozenset(found)


@cache
def basenames() -> frozenset[str]:
    """The file names present anywhere in the repository (outside hidden and cache folders)."""
    names: set[str] = set()
    for _folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if not name.startswith(".") and name != "__pycache__"]
        names.update(files, subfolders)
    return frozenset(names)


def shown(path: Path) -> str:
    """A path as the messages show it: from the repository's root when it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def broken_links(doc: Path) -> list[str]:
    """The relative links of a doc that reach no file, or no heading of it."""
    problems: list[str] = []
    for target in LINK.findall(prose(doc.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        path = (doc.parent / file_part).resolve() if file_part else doc
        if not path.exists():
            problems.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            problems.append(f"{target}: no heading #{anchor} in {shown(path)}")
    return problems


def is_repository_path(token: str) -> bool:
    """Whether a backticked token names a file or folder of the repository."""
    if token.startswith(RUNTIME + THIRD_PARTY) or re.search(r"[<>*{}:=,()\[\]]", token):
        return False
    name = token.rstrip("/")
    if token.endswith("/"):  # a folder when it starts at one of the repository's top-level entries
        return bool(re.fullmatch(r"[\w.-]+(/[\w.-]+)*", name)) and (ROOT / name.split("/")[0]).exists()
    return name.endswith(SUFFIXES) and bool(re.fullmatch(r"[\w./-]+", name))


def missing_paths(doc: Path) -> list[str]:
    """The repository paths a doc names in backticks that do not exist."""
    problems: list[str] = []
    for line in prose(doc.read_text(encoding="utf-8")).splitlines():
        row = ROW_FOLDER.match(line)
        folder = ROOT / row.group(1) if row else None
        for token in CODE.findall(line):
            if not is_repository_path(token):
                continue
            bases = [ROOT, doc.parent] + ([folder] if folder else [])
            if any((base / token).exists() for base in bases):
                continue
            if "/" not in token.rstrip("/") and folder is None and token in basenames():
                continue
            problems.append(token)
    return problems


def test_the_docs_are_found() -> None:
    names = {str(doc.relative_to(ROOT)) for doc in DOCS}
    assert {"README.md", "bench/README.md", "docs/index.md", "docs/architecture.md"} <= names


def test_every_relative_link_resolves() -> None:
    problems = {str(doc.relative_to(ROOT)): broken_links(doc) for doc in DOCS}
    assert {doc: found for doc, found in problems.items() if found} == {}


def test_every_repository_path_in_backticks_exists() -> None:
    problems = {str(doc.relative_to(ROOT)): missing_paths(doc) for doc in DOCS}
    assert {doc: found for doc, found in problems.items() if found} == {}


def test_every_docs_page_is_in_the_index() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([\w-]+\.md)(?:#[^)]*)?\)", index))
    pages = {doc.name for doc in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages - listed == set(), "docs/index.md lacks these pages"


def test_the_checks_catch_a_broken_link_a_missing_path_and_a_missing_anchor(tmp_path: Path) -> None:
    doc = tmp_path / "probe.md"
    doc.write_text(
        "# Probe\n\n[gone](nowhere.md), [here](probe.md#probe), [no anchor](probe.md#elsewhere).\n"
        "`contracts/llm.py` and `payloads/payload_storage.py`, `openai/gpt-4o-mini`, `.temporal/dev.db`.\n"
        "| `payloads/` | `codec.py`, `payload_storage.py` |\n"
        "```bash\ncat `docs/none.md`\n```\n",
        encoding="utf-8",
    )
    assert broken_links(doc) == [
        "nowhere.md: no such file",
        f"probe.md#elsewhere: no heading #elsewhere in {doc}",
    ]
    assert missing_paths(doc) == ["payloads/payload_storage.py", "payload_storage.py"]
