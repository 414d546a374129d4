"""Units of pretraining text: byte ranges of the input files and the documents that start in each.

The inputs, in order, are read as one stream of bytes, and unit k is every document whose first
line starts in bytes [k * unit_bytes, (k + 1) * unit_bytes) of it, so the units follow from the
file sizes alone. A unit spans files where they are small (many one-book or one-article files
share a unit, as Google's tool pools all documents), and is a range of one file where it is large.
Any worker, a local process or a Beam worker on another machine, reads just its own ranges
(seeking into the files), and the same files and flags give the same units wherever they run. A
document longer than a unit belongs to the unit it starts in, and the units inside it hold none.
Documents are Google's: one sentence per line, a blank line between documents (and the end of a
file ends one)."""

import dataclasses
import os

from keras_bert_common.errors import UsageError
from keras_bert_common.files import is_remote, open_binary

# A few MB: small enough that a unit's instances fit comfortably in one worker's memory, large
# enough that per-unit overhead does not show.
DEFAULT_UNIT_BYTES = 4 << 20
_READ_BACK = 4096


@dataclasses.dataclass(frozen=True)
class Span:
    """Bytes [start, end) of the file at `path`."""

    path: str
    start: int
    end: int


@dataclasses.dataclass(frozen=True)
class Unit:
    """`index` numbers the units in order: it seeds the unit's randomness and places its records in
    the output files. `spans` are its byte ranges, one per file it covers, in order."""

    index: int
    spans: tuple

    @property
    def text_bytes(self):
        return sum(span.end - span.start for span in self.spans)


def _size(path):
    if is_remote(path):
        import tensorflow as tf  # only remote inputs need it

        return tf.io.gfile.stat(path).length
    return os.path.getsize(path)


def plan_units(paths, unit_bytes=DEFAULT_UNIT_BYTES, size_of=_size):
    """The units of `paths`, in order (empty files are in none)."""
    if unit_bytes < 1:
        raise UsageError(f"--unit_bytes={unit_bytes}: must be at least 1")
    units, spans, filled = [], [], 0
    for path in paths:
        size, start = size_of(path), 0
        while start < size:
            end = min(start + unit_bytes - filled, size)
            spans.append(Span(path, start, end))
            filled += end - start
            start = end
            if filled == unit_bytes:
                units.append(Unit(len(units), tuple(spans)))
                spans, filled = [], 0
    if spans:
        units.append(Unit(len(units), tuple(spans)))
    return units


def _decoded(raw):
    """A line's text, or None when it is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _is_blank(raw):
    text = _decoded(raw)
    return text is not None and not text.strip()


_PRINTABLE_ASCII = frozenset(range(0x21, 0x7F))


def _previous_line_is_blank(reader, position, tail):
    """Whether the line holding byte `position` is blank: `tail` is that line from `position` on;
    the part before is read backwards, and only while all of it could still be white space."""
    if not _PRINTABLE_ASCII.isdisjoint(tail):
        return False
    chunks, cursor = [], position
    while cursor > 0:
        step = min(_READ_BACK, cursor)
        reader.seek(cursor - step)
        chunk = reader.read(step)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            chunk = chunk[newline + 1 :]
        if not _PRINTABLE_ASCII.isdisjoint(chunk):
            return False
        chunks.append(chunk)
        if newline >= 0:
            break
        cursor -= step
    return _is_blank(b"".join(reversed(chunks)) + tail)


def read_unit(unit, warn=None, opener=open_binary):
    """(documents, lines skipped as not UTF-8): the documents of `unit`, each a list of sentences,
    its files' in order. A line that is not UTF-8 is skipped (and named through `warn`)."""
    documents, bad_lines = [], 0
    for span in unit.spans:
        bad_lines += _read_span(span, documents, warn, opener)
    return documents, bad_lines


def _read_span(span, documents, warn, opener):
    """Appends the documents that start in `span` to `documents`; returns the lines skipped."""
    document, bad_lines = None, 0
    with opener(span.path) as reader:
        if span.start == 0:
            position, previous_blank = 0, True
        else:
            # The first line that starts at or after `start`, and whether the line before it is blank.
            reader.seek(span.start - 1)
            tail = reader.readline()
            position = span.start - 1 + len(tail)
            previous_blank = _previous_line_is_blank(reader, span.start - 1, tail)
            reader.seek(position)
        for raw in iter(reader.readline, b""):
            line_start, position = position, position + len(raw)
            text = _decoded(raw)
            if text is not None and not text.strip():
                if document:
                    documents.append(document)
                document, previous_blank = None, True
                if line_start >= span.end:
                    break
                continue
            if previous_blank:
                if line_start >= span.end:
                    break  # the next unit's document
                document = []
            previous_blank = False
            if document is None:  # inside a document that started before this span
                continue
            if text is None:
                bad_lines += 1
                if warn is not None:
                    warn(f"{span.path}: the line at byte {line_start}: skipped, not UTF-8")
                continue
            document.append(text.strip())
    if document:
        documents.append(document)
    return bad_lines
