"""A reader for Java ``.properties`` files, with ``java.util.Properties.load`` semantics.

MirrorMaker 2 reads its configuration with ``Utils.loadProps``, which is
``Properties.load(InputStream)``: the bytes are ISO-8859-1, and non-Latin-1 characters must be
written as ``\\uXXXX``. ``load_properties`` decodes the same way, so a file means here what it
means to MM2.

Theory of operation, following the ``Properties.load`` contract:

1. The text splits into *natural lines* at ``\\n``, ``\\r`` or ``\\r\\n``.
2. A natural line that is blank (only space, tab, form feed) is skipped; one whose first
   non-blank character is ``#`` or ``!`` is a comment and is skipped *whole*, even when it ends
   in a backslash (comments never continue).
3. A line ending in an odd number of backslashes continues onto the next natural line; the
   backslash and the line terminator are dropped, and so is the leading white space of the
   continuation. A continuation line is never a comment, whatever it starts with.
4. In the resulting *logical line* the key runs from the first non-blank character to the first
   unescaped ``=``, ``:`` or white space. White space after the key is skipped, then at most one
   ``=`` or ``:``, then white space again; the rest of the line, trailing white space included,
   is the value.
5. Escapes in key and value: ``\\t \\n \\r \\f``, ``\\uXXXX`` (exactly four hex digits, else the
   file is malformed) and ``\\c`` for any other ``c`` meaning ``c`` itself.
6. A later key replaces an earlier one.

``PropertiesError`` names the line on which the offending logical line starts.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PropertiesError", "load_properties", "parse_properties"]

_BLANK = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """A malformed ``.properties`` file; the message names the line."""


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a ``.properties`` file as MM2 does (ISO-8859-1 bytes)."""
    return parse_properties(Path(path).read_bytes().decode("iso-8859-1"), source=str(path))


def parse_properties(text: str, *, source: str = "<properties>") -> dict[str, str]:
    """Parse ``.properties`` text into a dict; the last occurrence of a key wins."""
    result: dict[str, str] = {}
    for line_no, logical in _logical_lines(text):
        key, value = _split(logical)
        result[_unescape(key, source, line_no)] = _unescape(value, source, line_no)
    return result


def _natural_lines(text: str) -> list[str]:
    # str.splitlines would also split at \v, \x1c, \u2028 ...; Java splits only at \r and \n.
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Steps 1-3: (line number where it starts, logical line) pairs."""
    out: list[tuple[int, str]] = []
    lines = _natural_lines(text)
    i = 0
    while i < len(lines):
        start = i
        line = lines[i].lstrip(_BLANK)
        i += 1
        if not line or line[0] in "#!":
            continue
        parts = []
        while _continues(line):
            parts.append(line[:-1])
            if i >= len(lines):
                line = ""
                break
            line = lines[i].lstrip(_BLANK)
            i += 1
        parts.append(line)
        out.append((start + 1, "".join(parts)))
    return out


def _split(logical: str) -> tuple[str, str]:
    """Step 4: the raw (still escaped) key and value of a logical line."""
    i = 0
    n = len(logical)
    while i < n:
        c = logical[i]
        if c == "\\":
            i += 2
            continue
        if c in "=:" or c in _BLANK:
            break
        i += 1
    key = logical[: min(i, n)]
    j = i
    while j < n and logical[j] in _BLANK:
        j += 1
    if j < n and logical[j] in "=:":
        j += 1
        while j < n and logical[j] in _BLANK:
            j += 1
    return key, logical[j:]


def _unescape(raw: str, source: str, line_no: int) -> str:
    """Step 5."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        i += 1
        if c != "\\":
            out.append(c)
            continue
        if i >= n:
            break  # a lone trailing backslash (only possible at end of file) means nothing
        c = raw[i]
        i += 1
        if c == "u":
            digits = raw[i : i + 4]
            if len(digits) < 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                escape = "\\u" + digits
                raise PropertiesError(
                    f"{source}: line {line_no}: malformed \\uXXXX escape {escape!r}"
                )
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    return "".join(out)
