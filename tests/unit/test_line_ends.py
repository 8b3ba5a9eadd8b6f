"""Lines of text files end at ``\\n``, ``\\r\\n`` or ``\\r`` and at nothing else, read a block at a time; where a
file stops being UTF-8 is named by such a line."""

from __future__ import annotations

import io

import pytest

from esbridge.line_ends import byte_lines, split_lines
from esbridge.text import line_not_utf8, where_not_utf8

MIXED = b"one\rtwo\r\nthree\nfour \xe2\x80\xa8 \xc2\x85 \x0c \x1c still four\r\r\nsix"


@pytest.mark.parametrize("block", [1, 2, 3, 5, 7, 64, 1 << 16])
def test_each_line_ends_at_one_of_three_line_ends_whatever_the_block_size(block: int) -> None:
    lines = list(byte_lines(io.BytesIO(MIXED), block))
    assert lines == [
        b"one\r",
        b"two\r\n",
        b"three\n",
        b"four \xe2\x80\xa8 \xc2\x85 \x0c \x1c still four\r",
        b"\r\n",
        b"six",
    ]


@pytest.mark.parametrize(
    ("data", "lines"),
    [(b"", []), (b"\r", [b"\r"]), (b"a\r", [b"a\r"]), (b"\n\n", [b"\n", b"\n"]), (b"\r\n", [b"\r\n"])],
)
def test_the_last_line_and_an_empty_file(data: bytes, lines: list[bytes]) -> None:
    assert list(byte_lines(io.BytesIO(data), 1)) == lines


class CountingReader(io.BytesIO):
    """A file that counts the bytes read from it."""

    given = 0

    def readline(self, size: int | None = -1, /) -> bytes:
        data = super().readline(size)
        self.given += len(data)
        return data


@pytest.mark.parametrize("end", [b"\r", b"\n", b"\r\n"])
def test_a_large_file_is_not_read_whole_before_its_first_line(end: bytes) -> None:
    handle = CountingReader(b"{}" * 10 + end + (b"x" * 1000 + end) * 10_000)  # some 10 MB
    first = next(byte_lines(handle))
    assert first == b"{}" * 10 + end
    assert handle.given <= 1 << 16


def test_a_line_longer_than_many_blocks_is_read_whole() -> None:
    long = b"y" * (5 * (1 << 16) + 3)
    assert list(byte_lines(io.BytesIO(long + b"\r" + long))) == [long + b"\r", long]


def test_split_lines_ends_lines_only_at_the_three_line_ends() -> None:
    assert split_lines("a\rb\r\nc\nd\u2028e\x85f\x0cg") == ["a", "b", "c", "d\u2028e\x85f\x0cg"]


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_where_a_file_stops_being_utf8_is_named_by_its_line_whatever_its_line_ends(end: bytes) -> None:
    raw = end.join([b"a = 1", b"b = 2", b"name = 'caf\xe9'"])
    with pytest.raises(UnicodeDecodeError) as raised:
        raw.decode("utf-8")
    said = "invalid UTF-8: byte 0xe9 at byte offset 11 of the line (invalid continuation byte)"
    assert line_not_utf8(raised.value) == (3, said)
    assert where_not_utf8(raised.value) == f"line 3: {said}"


def test_a_byte_order_mark_the_decoder_dropped_does_not_move_the_line() -> None:
    # utf-8-sig reports offsets in the text after the mark: the newline just before the bad byte still counts.
    raw = b"\xef\xbb\xbfab\n\xff"
    with pytest.raises(UnicodeDecodeError) as raised:
        raw.decode("utf-8-sig")
    assert line_not_utf8(raised.value)[0] == 2
