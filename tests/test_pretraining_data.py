"""create_pretraining_data: Google's schema and semantics, determinism, bad input, the CLI."""

import collections
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import REPO_ROOT
from tfrecord_tools import example_wire, feature_specs, tfrecord_files
from tfrecord_tools.pretraining_data import PretrainingDataOptions, create_pretraining_data
from tfrecord_tools.pretraining_instances import PretrainingInstanceMaker

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
NUM_DOCS, SENTENCES, MAX_SEQ, MAX_PRED = 6, 10, 32, 5


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Documents whose every word is unique, so a token id tells its document and position."""
    rng = np.random.default_rng(0)
    root = tmp_path_factory.mktemp("corpus")
    words, lines = [], []
    for doc in range(NUM_DOCS):
        for sentence in range(SENTENCES):
            count = int(rng.integers(3, 9))
            sentence_words = [f"d{doc}w{len(words) + k}" for k in range(count)]
            words.extend(sentence_words)
            lines.append(" ".join(sentence_words))
        lines.append("")
    (root / "corpus.txt").write_text("\n".join(lines) + "\n")
    (root / "vocab.txt").write_text("\n".join(SPECIALS + words) + "\n")
    position = {
        index + len(SPECIALS): (int(word[1 : word.index("w")]), int(word[word.index("w") + 1 :]))
        for index, word in enumerate(words)
    }
    return root, position


def _options(root, **overrides):
    values = dict(
        vocab_file=str(root / "vocab.txt"),
        max_seq_length=MAX_SEQ,
        max_predictions_per_seq=MAX_PRED,
        dupe_factor=5,
        random_seed=7,
    )
    values.update(overrides)
    return PretrainingDataOptions(**values)


def _read(paths):
    spec = feature_specs.pretraining_spec(MAX_SEQ, MAX_PRED)
    parse = feature_specs.parse_fn(spec)
    rows = collections.defaultdict(list)
    for batch in tf.data.TFRecordDataset(paths).batch(256).map(parse):
        for name, value in batch.items():
            rows[name].append(value.numpy())
    return {name: np.concatenate(values) for name, values in rows.items()}


def test_schema_and_instance_invariants(corpus, tmp_path):
    root, position = corpus
    output = str(tmp_path / "train.tfrecord")
    summary = create_pretraining_data([str(root / "corpus.txt")], [output], _options(root, dupe_factor=20))
    record = next(iter(tf.data.TFRecordDataset(output))).numpy()
    features = tf.train.Example.FromString(record).features.feature
    assert set(features) == {
        "input_ids",
        "input_mask",
        "segment_ids",
        "masked_lm_positions",
        "masked_lm_ids",
        "masked_lm_weights",
        "next_sentence_labels",
    }
    assert features["masked_lm_weights"].WhichOneof("kind") == "float_list"
    data = _read(output)
    assert len(data["input_ids"]) == summary.instances > 100
    cls, sep, mask = 2, 3, 4
    replaced = kept = random = 0
    for row in range(summary.instances):
        length = int(data["input_mask"][row].sum())
        ids = data["input_ids"][row]
        assert ids[0] == cls and ids[length - 1] == sep and not ids[length:].any()
        assert list(data["input_mask"][row]) == [1] * length + [0] * (MAX_SEQ - length)
        first_sep = int(np.flatnonzero(ids == sep)[0])
        assert list(data["segment_ids"][row][:length]) == [0] * (first_sep + 1) + [1] * (length - first_sep - 1)
        weights = data["masked_lm_weights"][row]
        count = int(weights.sum())
        assert count == min(MAX_PRED, max(1, round(length * 0.15)))
        positions = data["masked_lm_positions"][row][:count]
        assert list(positions) == sorted(set(positions.tolist()))
        assert all(0 < p < length and p != first_sep for p in positions)
        labels = data["masked_lm_ids"][row][:count]
        original = ids.copy()
        original[positions] = labels
        # The original holds one [CLS], two [SEP] and no [MASK]: masks never hit the specials.
        assert (original[:length] == cls).sum() == 1 and (original[:length] == sep).sum() == 2
        assert not (original[:length] == mask).any()
        for p, label in zip(positions, labels):
            replaced += ids[p] == mask
            kept += ids[p] == label
            random += ids[p] not in (mask, label)
        # Segments: A and B are each a contiguous run of one document.
        tokens_a = original[1:first_sep]
        tokens_b = original[first_sep + 1 : length - 1]
        doc_a = {position[t][0] for t in tokens_a}
        doc_b = {position[t][0] for t in tokens_b}
        assert len(doc_a) == 1 and len(doc_b) == 1
        places_a = [position[t][1] for t in tokens_a]
        places_b = [position[t][1] for t in tokens_b]
        assert places_a == list(range(places_a[0], places_a[0] + len(places_a)))
        assert places_b == list(range(places_b[0], places_b[0] + len(places_b)))
        if data["next_sentence_labels"][row][0] == 0:
            assert doc_a == doc_b and places_b[0] > places_a[-1]
        else:
            assert doc_a != doc_b
    total = replaced + kept + random
    assert abs(replaced / total - 0.8) < 0.04 and abs(kept / total - 0.1) < 0.03 and abs(random / total - 0.1) < 0.03
    assert 0.4 < summary.random_next / summary.instances < 0.7
    assert summary.tokens == int(data["input_mask"].sum())


def test_whole_word_masking_masks_every_piece_of_a_word(tmp_path):
    pieces = ["ab", "##cd", "##ef", "gh", "##ij", "kl"]
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(SPECIALS + pieces) + "\n")
    rng = np.random.default_rng(1)
    words = ["abcdef", "ghij", "kl", "abcd"]
    text = "\n\n".join("\n".join(" ".join(rng.choice(words, 6)) for _ in range(6)) for _ in range(4))
    (tmp_path / "corpus.txt").write_text(text + "\n")
    output = str(tmp_path / "wwm.tfrecord")
    create_pretraining_data(
        [str(tmp_path / "corpus.txt")],
        [output],
        _options(tmp_path, do_whole_word_mask=True, max_predictions_per_seq=MAX_PRED),
    )
    data = _read(output)
    continuation = {SPECIALS.__len__() + i for i, piece in enumerate(pieces) if piece.startswith("##")}
    checked = 0
    for row in range(len(data["input_ids"])):
        count = int(data["masked_lm_weights"][row].sum())
        ordered = data["masked_lm_positions"][row][:count]
        positions = set(ordered.tolist())
        original = data["input_ids"][row].copy()
        original[ordered] = data["masked_lm_ids"][row][:count]
        length = int(data["input_mask"][row].sum())
        assert count <= min(MAX_PRED, max(1, round(length * 0.15)))
        for p in positions:
            # A masked piece's whole word is masked: neighbours within the word too.
            # (A ## piece right after [CLS] or [SEP] lost its word's start to truncation.)
            if original[p] in continuation and original[p - 1] not in (2, 3):
                assert p - 1 in positions
            if p + 1 < length and original[p + 1] in continuation:
                assert p + 1 in positions
                checked += 1
    assert checked > 20


def test_same_seed_same_bytes_for_any_worker_count_and_round_robin(corpus, tmp_path):
    root, _ = corpus
    inputs = [str(root / "corpus.txt")]
    one = [str(tmp_path / "one-a.tfrecord"), str(tmp_path / "one-b.tfrecord")]
    two = [str(tmp_path / "two-a.tfrecord"), str(tmp_path / "two-b.tfrecord")]
    summary = create_pretraining_data(inputs, one, _options(root, unit_bytes=300))
    create_pretraining_data(inputs, two, _options(root, unit_bytes=300, num_workers=2))
    for a, b in zip(one, two):
        assert open(a, "rb").read() == open(b, "rb").read()
    counts = [sum(1 for _ in tf.data.TFRecordDataset(path)) for path in one]
    assert sum(counts) == summary.instances and abs(counts[0] - counts[1]) <= 3
    other = str(tmp_path / "other.tfrecord")
    create_pretraining_data(inputs, [other], _options(root, unit_bytes=300, random_seed=8))
    assert open(other, "rb").read() != open(one[0], "rb").read()
    assert not [name for name in os.listdir(tmp_path) if ".tmp-" in name]


def test_bad_lines_empty_documents_and_no_partial_output(corpus, tmp_path):
    root, _ = corpus
    messy = tmp_path / "messy.txt"
    good = (root / "corpus.txt").read_bytes()
    messy.write_bytes(b"\n\n\n" + good.replace(b"d0w0 ", b"\xff\xfe bad ", 1) + b"[UNK]\n\n\n")
    warnings = []
    output = str(tmp_path / "out.tfrecord")
    summary = create_pretraining_data([str(messy)], [output], _options(root), log=warnings.append)
    assert summary.bad_lines == 1 and any(f"{messy}: the line at byte 3: skipped, not UTF-8" in w for w in warnings)
    assert summary.documents == NUM_DOCS + 1 and summary.instances > 0
    # An input with no text is refused, naming it, before anything is written (issue 14: empty input).
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(ValueError, match="empty.txt: hold no text"):
        create_pretraining_data([str(tmp_path / "empty.txt")], [str(tmp_path / "e.tfrecord")], _options(root))
    assert not (tmp_path / "e.tfrecord").exists()
    # A vocabulary without [MASK] fails before writing anything; nothing is left behind.
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nd0w0\n")
    failing = str(tmp_path / "failing.tfrecord")
    with pytest.raises(ValueError, match="has no \\[MASK\\] token"):
        create_pretraining_data([str(messy)], [failing], _options(tmp_path))
    assert not [name for name in os.listdir(tmp_path) if name.startswith("failing")]


def test_one_document_per_file_pairs_across_files_and_a_file_without_blank_lines_is_warned_about(corpus, tmp_path):
    """Small files share units: with one document per file a 'random next' B comes from another
    document (read back from the records: each token id tells its document), and a corpus that fits
    one unit gives the same records whether it is one file or one file per document. A file without
    the blank lines between documents is one long document: counted and warned about."""
    root, position = corpus
    documents = (root / "corpus.txt").read_text().strip().split("\n\n")
    files = []
    for index, document in enumerate(documents):
        files.append(str(tmp_path / f"doc{index}.txt"))
        with open(files[-1], "w") as writer:
            writer.write(document + "\n")

    def same_document_share(paths, output, **options):
        summary = create_pretraining_data(paths, [output], _options(root, **options), log=lambda message: None)
        rows = _read([output])
        same = []
        for ids, segments, label in zip(rows["input_ids"], rows["segment_ids"], rows["next_sentence_labels"]):
            if label[0] == 1:
                docs = [
                    {position[i][0] for i, s in zip(ids, segments) if s == segment and i in position}
                    for segment in (0, 1)
                ]
                same.append(bool(docs[0] & docs[1]))
        return summary, np.mean(same)

    per_file = tmp_path / "per_file.tfrecord"
    summary, share = same_document_share(files, str(per_file))
    assert summary.units == 1 and summary.documents == NUM_DOCS and share < 0.3
    assert summary.single_document_warning() is None
    one_file = tmp_path / "one_file.tfrecord"
    summary, share = same_document_share([str(root / "corpus.txt")], str(one_file))
    assert summary.single_document_units == 0 and share < 0.3
    assert per_file.read_bytes() == one_file.read_bytes()
    # Every document's lines in one file with no blank line: one document, over several units.
    run_on = tmp_path / "run_on.txt"
    run_on.write_text("\n".join(line for line in (root / "corpus.txt").read_text().splitlines() if line.strip()))
    summary = create_pretraining_data(
        [str(run_on)], [str(tmp_path / "run_on.tfrecord")], _options(root, unit_bytes=300), log=lambda message: None
    )
    assert summary.units > 3 and summary.empty_units == summary.units - 1 and summary.single_document_units == 1
    assert summary.single_document_warning().startswith("1 of 1 units with text hold a single document")
    assert summary.single_document_warning(next_sentence_prediction=False) is None


@pytest.mark.parametrize(
    "length_a, length_b, limit", [(5, 3, 5), (3, 5, 5), (4, 4, 5), (10, 2, 9), (7, 7, 13), (2, 2, 9)]
)
def test_truncation_keeps_google_lengths_and_contiguous_slices(length_a, length_b, limit):
    import random

    want_a, want_b = length_a, length_b
    while want_a + want_b > limit:  # Google's loop, lengths only
        if want_a > want_b:
            want_a -= 1
        else:
            want_b -= 1
    drops = PretrainingInstanceMaker.truncate_seq_pair(length_a, length_b, limit, random.Random(3))
    front_a, back_a, front_b, back_b = drops
    assert min(drops) >= 0
    assert (length_a - front_a - back_a, length_b - front_b - back_b) == (want_a, want_b)


def test_examples_to_bytes_equals_protobuf_serialization():
    spec = {"ids": tf.io.FixedLenFeature([4], tf.int64), "w": tf.io.FixedLenFeature([2], tf.float32)}
    ids = np.array([[0, 127, 128, 16383], [16384, 2**21, 2**28 + 5, 3], [-5, 1, 2, 3], [2**40, 0, 0, 0]])
    weights = np.array([[1.0, 0.0], [0.5, -2.25], [3.0, 1e-8], [0.0, 0.0]], np.float32)
    fast = example_wire.examples_to_bytes({"ids": ids, "w": weights}, spec)
    for row, record in enumerate(fast):
        reference = example_wire.to_example_bytes({"ids": ids[row], "w": weights[row]}, spec)
        assert tf.train.Example.FromString(record) == tf.train.Example.FromString(reference)


def test_reader_accepts_model_garden_feature_names(tmp_path):
    path = str(tmp_path / "mg.tfrecord")
    example = tf.train.Example(
        features=tf.train.Features(
            feature={
                "input_word_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[2, 7, 3])),
                "input_mask": tf.train.Feature(int64_list=tf.train.Int64List(value=[1, 1, 1])),
                "input_type_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[0, 0, 0])),
            }
        )
    )
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(example.SerializeToString())
    spec = {name: tf.io.FixedLenFeature([3], tf.int64) for name in ("input_ids", "input_mask", "segment_ids")}
    parse = feature_specs.parse_fn(spec, feature_specs.detect_feature_names(path))
    (batch,) = list(tf.data.TFRecordDataset(path).batch(1).map(parse))
    assert batch["input_ids"].numpy().tolist() == [[2, 7, 3]] and batch["input_ids"].dtype == tf.int32


def test_command_line_flags_and_errors(corpus, tmp_path):
    root, _ = corpus
    script = os.path.join(REPO_ROOT, "tfrecord_tools", "create_pretraining_data.py")
    out = tmp_path / "cli.tfrecord"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    run = subprocess.run(
        [
            sys.executable,
            script,
            f"--input_file={root}/*.txt",
            f"--output_file={out}",
            f"--vocab_file={root}/vocab.txt",
            "--max_seq_length=32",
            "--max_predictions_per_seq=5",
            "--dupe_factor=2",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "random-next share" in run.stderr and out.exists()
    bad = subprocess.run(
        [
            sys.executable,
            script,
            f"--input_file={root}/missing*.txt",
            f"--output_file={tmp_path}/x.tfrecord",
            f"--vocab_file={root}/vocab.txt",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode != 0 and "missing*.txt: no file matches; check --input_file" in bad.stderr
    assert not (tmp_path / "x.tfrecord").exists()


@pytest.mark.parametrize("whole_word", [False, True])
def test_more_prediction_slots_than_tokens_pad_the_rest(corpus, tmp_path, whole_word):
    """Google's code accepts --max_predictions_per_seq > --max_seq_length; so does ours."""
    root, _ = corpus
    path = str(tmp_path / "wide.tfrecord")
    options = _options(root, max_seq_length=16, max_predictions_per_seq=40, do_whole_word_mask=whole_word)
    create_pretraining_data([str(root / "corpus.txt")], [path], options)
    rows = tfrecord_files.read_tfrecord(path, feature_specs.pretraining_spec(16, 40))
    lengths = rows["input_mask"].sum(1)
    assert np.array_equal(rows["masked_lm_weights"].sum(1), np.minimum(40, np.maximum(1, np.round(lengths * 0.15))))
    real = rows["masked_lm_weights"] > 0
    assert (rows["masked_lm_positions"][real] < 16).all() and not rows["masked_lm_positions"][~real].any()


def _unmasked(data, row):
    """A masked instance's original ids and length."""
    count = int(data["masked_lm_weights"][row].sum())
    original = data["input_ids"][row].copy()
    original[data["masked_lm_positions"][row][:count]] = data["masked_lm_ids"][row][:count]
    return original, int(data["input_mask"][row].sum())


@pytest.mark.parametrize("doc_sentences", [False, True])
def test_masked_lm_only_records_pack_whole_sentences_in_one_segment(corpus, tmp_path, doc_sentences):
    """--nonext_sentence_prediction: RoBERTa's FULL-SENTENCES (DOC-SENTENCES) inputs. Checked on
    the corpus whose every token tells its document and place: every word of the corpus is in
    exactly one input (dupe_factor 1); an input is [CLS], contiguous runs of one document each, an
    extra [SEP] between two runs (only where the first run ends its document and the next starts
    its own), [SEP]; one segment; no next_sentence_labels."""
    root, position = corpus
    sentence_starts, document_ends, document_lengths = set(), set(), collections.Counter()
    for token, (doc, place) in position.items():
        document_lengths[doc] += 1
    words = (root / "corpus.txt").read_text().split("\n")
    place = 0
    for line in words:
        if line:
            sentence_starts.add(place)
            place += len(line.split())
    for doc in document_lengths:
        document_ends.add(max(p for d, p in position.values() if d == doc))
    document_starts = {min(p for d, p in position.values() if d == doc) for doc in document_lengths}
    output = str(tmp_path / "mlm.tfrecord")
    options = _options(
        root, dupe_factor=1, short_seq_prob=0.0, next_sentence_prediction=False, doc_sentences=doc_sentences
    )
    summary = create_pretraining_data([str(root / "corpus.txt")], [output], options)
    record = next(iter(tf.data.TFRecordDataset(output))).numpy()
    assert "next_sentence_labels" not in tf.train.Example.FromString(record).features.feature
    rows = tfrecord_files.read_tfrecord(output, feature_specs.pretraining_spec(MAX_SEQ, MAX_PRED, False))
    assert len(rows["input_ids"]) == summary.instances and summary.random_next == 0
    assert not rows["segment_ids"].any()
    seen = collections.Counter()
    cls, sep = 2, 3
    for row in range(summary.instances):
        original, length = _unmasked(rows, row)
        assert original[0] == cls and original[length - 1] == sep and length <= MAX_SEQ
        runs, run = [], []
        for token in original[1 : length - 1]:
            if token == sep:
                runs.append(run)
                run = []
            else:
                run.append(position[int(token)])
        runs.append(run)
        assert all(runs), "never an empty run: no [SEP] [SEP], none after [CLS] or before the last [SEP]"
        if doc_sentences:
            assert len(runs) == 1
        assert position[int(original[1])][1] in sentence_starts, "an input begins at a sentence's start"
        for number, run in enumerate(runs):
            docs = {doc for doc, _ in run}
            places = [place for _, place in run]
            assert len(docs) == 1 and places == list(range(places[0], places[0] + len(places)))
            if number < len(runs) - 1:
                assert places[-1] in document_ends and runs[number + 1][0][1] in document_starts
            seen.update(places)
    # Every word exactly once: no gaps, no repeats (one pass, one unit).
    assert seen == collections.Counter(range(len(position)))
    lengths = rows["input_mask"].sum(1)
    if not doc_sentences:  # inputs are full: only the unit's last may be short
        assert (lengths >= MAX_SEQ - 8).sum() >= summary.instances - 1


def test_one_segment_spans_follow_the_packing_rule():
    """The span builder on hand-made elements (start, stop, kind: 0 sentence, 1 a document's last,
    2 separator), against spans worked out by hand: target 8 tokens ([CLS] and [SEP] aside)."""
    import random

    maker = PretrainingInstanceMaker(50, 2, 3, 4, [], max_seq_length=10, short_seq_prob=0.0)
    maker.next_sentence_prediction = False
    # doc A: sentences of 3, 4, 2 tokens (0-9); separator 9; doc B: 12 tokens (10-22); sep 22; doc C: 5, 2 (23-30)
    elements = [(0, 3, 0), (3, 7, 0), (7, 9, 1), (9, 10, 2), (10, 22, 1), (22, 23, 2), (23, 28, 0), (28, 30, 1)]
    spans = maker.one_segment_spans(elements, random.Random(0))
    # [0,7) fits 8 with 7 tokens; adding 2 more makes 9 > 8. Then [7,9) + sep + B's 12 does not fit:
    # [7,9) alone; B longer than an input: [10,18), then [18,22) + sep + C's 5 = 10 > 8; [18,22) then [23,30).
    assert spans == [(0, 7), (7, 9), (10, 18), (18, 22), (23, 30)]
    maker.doc_sentences = True
    spans = maker.one_segment_spans([e for e in elements if e[2] != 2], random.Random(0))
    assert spans == [(0, 7), (7, 9), (10, 18), (18, 22), (23, 30)]
    # Short sentences cross documents with the separator inside.
    short = [(0, 2, 1), (2, 3, 2), (3, 6, 1), (6, 7, 2), (7, 9, 1)]
    maker.doc_sentences = False
    assert maker.one_segment_spans(short, random.Random(0)) == [(0, 6), (7, 9)]


@pytest.mark.parametrize("dynamic, whole_word", [(False, True), (True, False)])
def test_masked_lm_only_records_same_bytes_for_any_worker_count(corpus, tmp_path, dynamic, whole_word):
    root, _ = corpus
    inputs = [str(root / "corpus.txt")]
    common = dict(
        unit_bytes=300, next_sentence_prediction=False, dynamic_masking=dynamic, do_whole_word_mask=whole_word
    )
    one, two = str(tmp_path / "one.tfrecord"), str(tmp_path / "two.tfrecord")
    create_pretraining_data(inputs, [one], _options(root, **common))
    create_pretraining_data(inputs, [two], _options(root, num_workers=2, **common))
    assert open(one, "rb").read() == open(two, "rb").read()
    names = feature_specs.detect_feature_names(one)
    assert not feature_specs.has_next_sentence_labels(names)
    assert feature_specs.is_dynamic_pretraining(names) == dynamic
