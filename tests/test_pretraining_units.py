"""Units of text by bytes: every document exactly once, in order, whatever the unit size, read by
seeking into the file; a document longer than a unit is a unit of its own."""

import io
import random

from tfrecord_tools.pretraining_units import Unit, plan_units, read_unit


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
    # Units come from the sizes alone, across files, numbered in order.
    second = tmp_path / "second.txt"
    second.write_text("a\n\nb\n")
    both = plan_units([str(path), str(second)], 64)
    assert both[-1] == Unit(len(units), str(second), 0, 5)


def test_non_utf8_lines_are_counted_and_named(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"good line\n\xff bad\nmore\n\nnext\n")
    warnings = []
    documents, bad = read_unit(plan_units([str(path)], 1 << 20)[0], warn=warnings.append)
    assert documents == [["good line", "more"], ["next"]] and bad == 1
    assert warnings == [f"{path}: the line at byte 10: skipped, not UTF-8"]
