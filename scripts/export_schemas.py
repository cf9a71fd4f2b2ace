"""Write the JSON Schemas of the public payloads to `schemas/` (after changing a contract), or check them.

    .venv/bin/python scripts/export_schemas.py           # (re)write schemas/*.json
    .venv/bin/python scripts/export_schemas.py --check   # exit 1 and name the stale files

The schemas are generated from the pydantic models (`clients/schemas.py`);
`tests/project/test_schemas.py` fails when a committed schema is stale. docs/client.md says
how another service uses them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main() -> int:
    """Write or check the schema files; the exit code is 1 when `--check` finds stale files."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from clients.schemas import SCHEMA_FOLDER, stale_files, write_schema_files

    parser = argparse.ArgumentParser(description="Write or check the JSON Schemas of schemas/.")
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args()
    if args.check:
        stale = stale_files()
        for name in stale:
            print(f"stale: {SCHEMA_FOLDER.name}/{name}", file=sys.stderr)
        if stale:
            print("run .venv/bin/python scripts/export_schemas.py to regenerate them", file=sys.stderr)
        return 1 if stale else 0
    written = write_schema_files()
    print(f"wrote {len(written)} files to {SCHEMA_FOLDER}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
