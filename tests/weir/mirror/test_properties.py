"""java.util.Properties.load semantics of the MM2 file reader (pure logic)."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir.mirror.properties import PropertiesError, load_properties, parse_properties


def test_separators_equals_colon_and_whitespace() -> None:
    text = "a=1\nb: 2\nc 3\nd   =   4\ne\t:\tfive six\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "five six"}


def test_comments_blank_lines_and_key_without_value() -> None:
    text = "# hash\n   ! bang\n\n \t \nlonely\nx=\n"
    assert parse_properties(text) == {"lonely": "", "x": ""}


def test_value_keeps_trailing_whitespace_and_second_separator() -> None:
    assert parse_properties("k = v  \nm==n\n") == {"k": "v  ", "m": "=n"}


def test_continuation_drops_leading_whitespace_of_next_line() -> None:
    text = "topics = orders, \\\n          payments, \\\n    # not a comment\n"
    assert parse_properties(text) == {"topics": "orders, payments, # not a comment"}


def test_even_backslashes_do_not_continue() -> None:
    assert parse_properties("a=x\\\\\nb=y\n") == {"a": "x\\", "b": "y"}


def test_comment_ending_in_backslash_does_not_continue() -> None:
    assert parse_properties("# comment \\\na=1\n") == {"a": "1"}


def test_escapes_in_keys_and_values() -> None:
    text = "key\\ with\\:colon = tab\\there\\nnew\\u0041\\z\n"
    assert parse_properties(text) == {"key with:colon": "tab\there\nnewAz"}


def test_crlf_and_cr_line_endings() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3") == {"a": "1", "b": "2", "c": "3"}


def test_last_occurrence_wins() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


def test_malformed_unicode_escape_names_the_line() -> None:
    with pytest.raises(PropertiesError, match=r"mm2\.properties: line 3: malformed"):
        parse_properties("a=1\n\nb=\\u12g4\n", source="mm2.properties")


def test_malformed_escape_on_continued_line_names_the_first_line() -> None:
    with pytest.raises(PropertiesError, match="line 2:"):
        parse_properties("a=1\nb=x\\\n  \\u00\n")


def test_load_reads_latin1_like_mm2(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_bytes("name=caf\xe9\nother=\\u00e9\n".encode("iso-8859-1"))
    assert load_properties(path) == {"name": "café", "other": "é"}
