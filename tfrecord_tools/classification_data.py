"""`ClassificationProcessor`: GLUE-style TSV/CSV files -> examples -> TFRecords (run_classifier.py).

Each task is a row of `TASKS` (files, columns, labels), with Google's task names. A generic
processor reads any TSV/CSV given its columns. Pairs are packed `[CLS] A [SEP] B [SEP]` with
Google's truncation (drop from the end of the longer text).
"""

import csv
import dataclasses
import os

import numpy as np

from keras_bert_common.errors import UsageError
from keras_bert_common.progress import LimitedWarnings
from tfrecord_tools import example_wire, feature_specs, tfrecord_files


@dataclasses.dataclass(frozen=True)
class InputExample:
    guid: str
    text_a: str
    text_b: str = None
    label: object = None  # a label string, a float for regression, None for unlabelled test rows


@dataclasses.dataclass(frozen=True)
class ColumnFormat:
    """Where the fields of one split's rows are (column indexes; None when absent)."""

    text_a: int
    text_b: int = None
    label: int = None
    skip_header: bool = True


@dataclasses.dataclass(frozen=True)
class TaskFormat:
    labels: tuple  # empty for regression
    files: dict  # split -> file name in --data_dir
    formats: dict  # split -> ColumnFormat
    is_regression: bool = False
    label_aliases: dict = dataclasses.field(default_factory=dict)
    language_column: int = None  # XNLI dev/test: keep rows of --xnli_language only


_PAIR = lambda a, b, label: ColumnFormat(text_a=a, text_b=b, label=label)  # noqa: E731
_TRIPLE_LABELS = ("contradiction", "entailment", "neutral")

# Google's task names (lower case) -> how GLUE's files are laid out.
TASKS = {
    "cola": TaskFormat(
        ("0", "1"),
        {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
        {
            "train": ColumnFormat(3, None, 1, skip_header=False),
            "dev": ColumnFormat(3, None, 1, skip_header=False),
            "test": ColumnFormat(1),
        },
    ),
    "sst-2": TaskFormat(
        ("0", "1"),
        {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
        {"train": ColumnFormat(0, None, 1), "dev": ColumnFormat(0, None, 1), "test": ColumnFormat(1)},
    ),
    "mrpc": TaskFormat(
        ("0", "1"),
        {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
        {"train": _PAIR(3, 4, 0), "dev": _PAIR(3, 4, 0), "test": _PAIR(3, 4, None)},
    ),
    "qqp": TaskFormat(
        ("0", "1"),
        {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
        {"train": _PAIR(3, 4, 5), "dev": _PAIR(3, 4, 5), "test": _PAIR(1, 2, None)},
    ),
    "sts-b": TaskFormat(
        (),
        {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
        {"train": _PAIR(7, 8, 9), "dev": _PAIR(7, 8, 9), "test": _PAIR(7, 8, None)},
        is_regression=True,
    ),
    "mnli": TaskFormat(
        _TRIPLE_LABELS,
        {"train": "train.tsv", "dev": "dev_matched.tsv", "test": "test_matched.tsv"},
        {"train": _PAIR(8, 9, -1), "dev": _PAIR(8, 9, -1), "test": _PAIR(8, 9, None)},
    ),
    "mnli-mm": TaskFormat(
        _TRIPLE_LABELS,
        {"train": "train.tsv", "dev": "dev_mismatched.tsv", "test": "test_mismatched.tsv"},
        {"train": _PAIR(8, 9, -1), "dev": _PAIR(8, 9, -1), "test": _PAIR(8, 9, None)},
    ),
    "qnli": TaskFormat(
        ("entailment", "not_entailment"),
        {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
        {"train": _PAIR(1, 2, 3), "dev": _PAIR(1, 2, 3), "test": _PAIR(1, 2, None)},
    ),
    "rte": TaskFormat(
        ("entailment", "not_entailment"),
        {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
        {"train": _PAIR(1, 2, 3), "dev": _PAIR(1, 2, 3), "test": _PAIR(1, 2, None)},
    ),
    "wnli": TaskFormat(
        ("0", "1"),
        {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
        {"train": _PAIR(1, 2, 3), "dev": _PAIR(1, 2, 3), "test": _PAIR(1, 2, None)},
    ),
    # XNLI as Google's XnliProcessor: MultiNLI machine-translated training, xnli.dev.tsv / xnli.test.tsv.
    "xnli": TaskFormat(
        _TRIPLE_LABELS,
        {"train": "multinli/multinli.train.{language}.tsv", "dev": "xnli.dev.tsv", "test": "xnli.test.tsv"},
        {"train": _PAIR(0, 1, 2), "dev": _PAIR(6, 7, 1), "test": _PAIR(6, 7, 1)},
        label_aliases={"contradictory": "contradiction"},
        language_column=0,
    ),
}


class ClassificationProcessor:
    """Reads one task's splits into `InputExample`s, naming file and line on any bad row."""

    def __init__(self, task_format, data_dir, language="zh", delimiter="\t", warn=print):
        self.task = task_format
        self.data_dir = data_dir
        self.language = language
        self.delimiter = delimiter
        self.warn = warn
        self.skipped = 0
        self._warnings = LimitedWarnings(warn)

    @classmethod
    def for_task(cls, task_name, data_dir, **kwargs):
        """Google's --task_name (any case) -> its processor."""
        key = task_name.lower()
        if key not in TASKS:
            raise UsageError(f"--task_name={task_name}: unknown task; use one of {', '.join(sorted(TASKS))} or tsv")
        return cls(TASKS[key], data_dir, **kwargs)

    @classmethod
    def generic(
        cls,
        data_dir,
        text_a_column,
        text_b_column=None,
        label_column=None,
        labels=(),
        is_regression=False,
        skip_header=True,
        delimiter="\t",
        file_names=None,
        **kwargs,
    ):
        """Any TSV/CSV: columns by index, `labels` in id order (empty: accept any, to collect them)."""
        files = file_names or {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
        labelled = ColumnFormat(text_a_column, text_b_column, label_column, skip_header)
        formats = {
            "train": labelled,
            "dev": labelled,
            "test": ColumnFormat(text_a_column, text_b_column, None, skip_header),
        }
        return cls(TaskFormat(tuple(labels), files, formats, is_regression), data_dir, delimiter=delimiter, **kwargs)

    @property
    def labels(self):
        return list(self.task.labels)

    @property
    def is_regression(self):
        return self.task.is_regression

    def path(self, split):
        return os.path.join(self.data_dir, self.task.files[split].format(language=self.language))

    def get_examples(self, split):
        """`split` is train, dev or test. Rows with too few columns or an unknown label are
        skipped with a warning naming the file and line (counted in `self.skipped`)."""
        path = self.path(split)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no such file; check --data_dir (and --task_name)")
        column_format = self.task.formats[split]
        needed = max(
            c if c >= 0 else -c - 1
            for c in (column_format.text_a, column_format.text_b, column_format.label)
            if c is not None
        )
        examples = []
        with open(path, encoding="utf-8-sig", newline="") as reader:
            rows = csv.reader(reader, delimiter=self.delimiter, quotechar=None if self.delimiter == "\t" else '"')
            for line_number, row in enumerate(rows, start=1):
                if line_number == 1 and column_format.skip_header:
                    continue
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if (
                    self.task.language_column is not None
                    and split != "train"
                    and row[self.task.language_column] != self.language
                ):
                    continue
                if len(row) <= needed:
                    if split == "test":
                        # test_results.tsv has a line per test row and no ids: a skipped row would
                        # shift every later prediction onto the wrong example.
                        raise UsageError(
                            f"{path}:{line_number}: {len(row)} columns, expected at least {needed + 1}; every test row "
                            "needs its prediction line (test_results.tsv has no ids): fix the row"
                        )
                    self._skip(path, line_number, f"{len(row)} columns, expected at least {needed + 1}")
                    continue
                label = None
                if column_format.label is not None:
                    label = row[column_format.label].strip()
                    label = self.task.label_aliases.get(label, label)
                    if self.task.is_regression:
                        try:
                            label = float(label)
                        except ValueError:
                            self._skip(path, line_number, f"label {label!r} is not a number")
                            continue
                    elif self.task.labels and label not in self.task.labels:  # no labels given: any
                        self._skip(path, line_number, f"label {label!r} is not one of {', '.join(self.task.labels)}")
                        continue
                text_b = row[column_format.text_b] if column_format.text_b is not None else None
                examples.append(InputExample(f"{split}-{line_number}", row[column_format.text_a], text_b, label))
        self._warnings.finish(path)
        return examples

    def _skip(self, path, line_number, reason):
        self.skipped += 1
        self._warnings(f"{path}:{line_number}: skipped, {reason}")


def truncate_pair_from_end(tokens_a, tokens_b, max_length):
    """Google's run_classifier truncation: drop the last token of the longer list until it fits."""
    while len(tokens_a) + len(tokens_b) > max_length:
        (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()


def pack_pairs(ids_a, ids_b, max_seq_length, cls_id, sep_id):
    """Lists of id lists (B may be None) -> `input_ids`, `input_mask`, `segment_ids` [N, L]."""
    count = len(ids_a)
    input_ids = np.zeros((count, max_seq_length), np.int64)
    segment_ids = np.zeros((count, max_seq_length), np.int64)
    input_mask = np.zeros((count, max_seq_length), np.int64)
    for row in range(count):
        tokens_a = list(ids_a[row])
        # As Google's: a B text that is empty (or tokenizes to nothing) makes a single sequence.
        tokens_b = list(ids_b[row]) if ids_b is not None and ids_b[row] else None
        if tokens_b:
            truncate_pair_from_end(tokens_a, tokens_b, max_seq_length - 3)
            sequence = [cls_id, *tokens_a, sep_id, *tokens_b, sep_id]
            segment_ids[row, len(tokens_a) + 2 : len(sequence)] = 1
        else:
            sequence = [cls_id, *tokens_a[: max_seq_length - 2], sep_id]
        input_ids[row, : len(sequence)] = sequence
        input_mask[row, : len(sequence)] = 1
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}


def examples_to_features(examples, labels, max_seq_length, tokenizer, is_regression=False):
    """InputExamples -> Google's run_classifier features as arrays (labels of test rows are 0)."""
    ids_a = tokenizer.tokenize_to_ids([example.text_a for example in examples])
    has_b = any(example.text_b is not None for example in examples)
    ids_b = tokenizer.tokenize_to_ids([example.text_b or "" for example in examples]) if has_b else None
    if ids_b is not None:
        ids_b = [ids if example.text_b is not None else None for ids, example in zip(ids_b, examples)]
    features = pack_pairs(ids_a, ids_b, max_seq_length, tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"])
    label_map = {label: index for index, label in enumerate(labels)}
    if is_regression:
        label_ids = [[example.label if example.label is not None else 0.0] for example in examples]
        features["label_ids"] = np.array(label_ids, np.float32).reshape(len(examples), 1)
    else:
        label_ids = [label_map[example.label] if example.label is not None else 0 for example in examples]
        features["label_ids"] = np.array(label_ids, np.int64).reshape(len(examples), 1)
    features["is_real_example"] = np.ones((len(examples), 1), np.int64)
    return features


def write_classification_tfrecord(examples, labels, max_seq_length, tokenizer, output_file, is_regression=False):
    """Writes run_classifier.py's TFRecord (temporary name, then rename); returns the count."""
    features = examples_to_features(examples, labels, max_seq_length, tokenizer, is_regression)
    spec = feature_specs.classification_spec(max_seq_length, is_regression)
    return tfrecord_files.write_tfrecord(example_wire.examples_to_bytes(features, spec), output_file)
