"""A user's text files as strings.

    read_utf8(path)      labelled splits (TSV / CSV / JSONL): a byte that is not UTF-8 is a one-line DataError
                         naming its line, not a UnicodeDecodeError
    read_corpus(path)    a language-model corpus: up to MAX_BAD_SHARE of its bytes may be undecodable (each becomes
                         U+FFFD, as a stray byte in a large crawl would); above that, or with control bytes of a
                         binary file, a DataError says it is not UTF-8 text
"""

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


MAX_BAD_SHARE = 0.001  # of a corpus file's bytes: undecodable as UTF-8, or control bytes (NUL, ESC, ...)
_CONTROLS = bytes(c for c in range(32) if c not in b"\t\n\r\f\v")


def read_corpus(path: str | Path) -> str:
    path = Path(path)
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    bad = len(raw) - len(raw.decode("utf-8", errors="ignore").encode("utf-8"))
    controls = len(raw) - len(raw.translate(None, _CONTROLS))
    for n, what in ((bad, "are not UTF-8 (another encoding? `iconv -f latin1 -t utf-8`)"),
                    (controls, "are control bytes (a binary file?)")):
        if n > MAX_BAD_SHARE * len(raw):
            raise DataError(f"{path}: {n:,} of its {len(raw):,} bytes ({n / len(raw):.1%}) {what}; a corpus is "
                            f"UTF-8 text (at most {MAX_BAD_SHARE:.1%} of its bytes may be replaced)")
    return text
