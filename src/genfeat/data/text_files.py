"""A user's text file (labelled TSV / CSV / JSONL splits) as one string: a file that is not UTF-8 is a one-line
DataError naming the line and the byte, not a UnicodeDecodeError."""

from __future__ import annotations

from pathlib import Path

from genfeat.errors import DataError


def read_utf8(path: str | Path) -> str:
    path = Path(path)
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise DataError(f"{path}:{line}: not UTF-8 text (byte 0x{raw[e.start]:02x}); save the file as UTF-8 "
                        "(e.g. `iconv -f latin1 -t utf-8`)") from None
