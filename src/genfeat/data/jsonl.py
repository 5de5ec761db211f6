"""JSON Lines files: one JSON value a line, blank lines skipped, a bad line named by its number."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from genfeat.errors import DataError


def jsonl_rows(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line; DataError "PATH:LINE: not JSON (...)" on a bad one."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{n}: not JSON ({e.msg})") from None
