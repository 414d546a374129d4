"""Units of text by bytes: every document exactly once, in order, whatever the unit size and however
the text is cut into files, read by seeking into the files; a document longer than a unit is a unit
of its own; small files share a unit."""

import io
import os
import random

from tfrecord_tools.pretraining_units import Span, Unit, plan_units, read_unit


def _reference(data):
    """Google's reader on the whole file: a stripped-empty line ends a document; lines that are
    not UTF-8 are skipped (as our tools skip them)."""
    documents, document = [], []
    for raw in io.BytesIO(data):  # lines end at \n only, as a file's
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            continue
        if text:
            document.append(text)
        elif document:
            documents.append(document)
            document = []
    if document:
        documents.append(document)
    return documents


def test_every_document_once_in_order_for_any_unit_size(tmp_path):
    rng = random.Random(0)
    pieces = ["abc def", "x", "  ", "\u00a0", "\u3000 word", "é ü", "\t", "\r", "long " * 40]
    path = tmp_path / "corpus.txt"
    for trial in range(150):
        lines = []
        for _ in range(rng.randint(0, 12)):
            lines += [rng.choice(pieces) for _ in range(rng.randint(0, 5))]
            lines.append(rng.choice(["", " ", "\t", "\u3000", "\u00a0"]))
        data = "\n".join(lines).encode() + (b"\n" if rng.random() < 0.5 else b"")
        if rng.random() < 0.3:
            data = data.replace(b"x", b"\xff\xfe", 1)  # a line that is not UTF-8
        path.write_bytes(data)
        want = _reference(data)
        for unit_bytes in (1, 2, 3, 7, 16, 61, 1 << 20):
            units = plan_units([str(path)], unit_bytes)
            assert [unit.index for unit in units] == list(range(len(units)))
            got = [document for unit in units for document in read_unit(unit)[0]]
            assert got == want, (trial, unit_bytes, data[:120])


def test_a_document_longer_than_a_unit_is_a_unit_of_its_own(tmp_path):
    long_document = "\n".join(f"sentence {i} of the long one" for i in range(40))
    path = tmp_path / "corpus.txt"
    path.write_text(f"short one\n\n{long_document}\n\nshort two\n")
    units = plan_units([str(path)], 64)
    documents = [read_unit(unit)[0] for unit in units]
    assert documents[0] == [["short one"], long_document.split("\n")]  # both start in the first 64 bytes
    assert all(d == [] for d in documents[1:-1])  # the ranges inside the long document hold none
    assert documents[-1] == [["short two"]]
    # Units come from the sizes alone, the files read as one stream of bytes, numbered in order.
    size = path.stat().st_size
    second = tmp_path / "second.txt"
    second.write_text("a\n\nb\n")
    both = plan_units([str(path), str(second)], 64)
    assert size % 64 + 5 <= 64  # the first file's last range and the second file fit in one unit
    assert both[-1] == Unit(len(units) - 1, (Span(str(path), size - size % 64, size), Span(str(second), 0, 5)))
    assert [document for unit in both for document in read_unit(unit)[0]] == [
        *[document for unit_documents in documents for document in unit_documents],
        ["a"],
        ["b"],
    ]


def test_small_files_share_units_and_every_document_is_read_once(tmp_path):
    """Files of one document each (books, articles) pack into units as one stream would: the unit
    boundaries fall inside files or between them, every document is read once, in file order."""
    rng = random.Random(1)
    paths, want = [], []
    for index in range(23):
        document = [f"file {index} sentence {k}" for k in range(rng.randint(1, 4))]
        path = tmp_path / f"doc{index}.txt"
        # No trailing blank line in some, no final newline in others: the end of a file ends its
        # document, and its last line is not joined to the next file's first.
        path.write_text("\n".join(document) + ("\n\n" if index % 3 else "\n" if index % 2 else ""))
        paths.append(str(path))
        want.append(document)
    (tmp_path / "empty.txt").write_text("")
    paths.insert(5, str(tmp_path / "empty.txt"))
    total = sum(os.path.getsize(path) for path in paths)
    for unit_bytes in (1, 5, 17, 64, 100, 1 << 20):
        units = plan_units(paths, unit_bytes)
        assert [unit.index for unit in units] == list(range(len(units)))
        assert sum(unit.text_bytes for unit in units) == total
        assert all(unit.text_bytes == unit_bytes for unit in units[:-1])
        assert [document for unit in units for document in read_unit(unit)[0]] == want, unit_bytes
    assert len(plan_units(paths, 1 << 20)) == 1  # the whole corpus: one unit, every file in it
    assert plan_units([str(tmp_path / "empty.txt")], 64) == []


def test_non_utf8_lines_are_counted_and_named(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"good line\n\xff bad\nmore\n\nnext\n")
    warnings = []
    documents, bad = read_unit(plan_units([str(path)], 1 << 20)[0], warn=warnings.append)
    assert documents == [["good line", "more"], ["next"]] and bad == 1
    assert warnings == [f"{path}: the line at byte 10: skipped, not UTF-8"]
