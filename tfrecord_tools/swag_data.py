"""`SwagReader`: SWAG multiple choice (rowanz/swagaf CSV) -> four `[CLS] context [SEP] ending [SEP]`.

As in the paper: the context is `sent1`, each ending is `sent2` followed by `ending0..3`; the
four sequences are truncated like any pair (from the end of the longer) and stored one after
another ([4 * max_seq_length] per feature).
"""

import csv
import dataclasses

import numpy as np

from keras_bert_common.errors import UsageError
from keras_bert_common.progress import LimitedWarnings
from tfrecord_tools import example_wire, feature_specs, tfrecord_files
from tfrecord_tools.classification_data import pack_pairs

NUM_CHOICES = 4
_COLUMNS = ("sent1", "sent2", "ending0", "ending1", "ending2", "ending3")


@dataclasses.dataclass(frozen=True)
class SwagExample:
    swag_id: str
    context: str
    endings: list
    label: int = None


class SwagReader:
    """Reads train.csv / val.csv / test.csv (test has no label column)."""

    def __init__(self, warn=print):
        self.warn = warn
        self.skipped = 0
        self._warnings = LimitedWarnings(warn)

    def read(self, path):
        examples = []
        try:
            reader = open(path, encoding="utf-8", newline="")
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: no such file; check --data_dir") from None
        with reader:
            rows = csv.DictReader(reader)
            missing = [column for column in _COLUMNS if column not in (rows.fieldnames or [])]
            if missing:
                raise UsageError(f"{path}: missing column(s) {', '.join(missing)}; expected the swagaf CSV header")
            for line_number, row in enumerate(rows, start=2):
                if any(row.get(column) is None for column in _COLUMNS):
                    self._skip(path, line_number, "too few columns")
                    continue
                label = row.get("label")
                if label not in (None, ""):
                    if label not in ("0", "1", "2", "3"):
                        self._skip(path, line_number, f"label {label!r} is not 0-3")
                        continue
                    label = int(label)
                else:
                    label = None
                endings = [f"{row['sent2']} {row[f'ending{i}']}" for i in range(NUM_CHOICES)]
                examples.append(SwagExample(row.get("fold-ind", str(line_number)), row["sent1"], endings, label))
        self._warnings.finish(path)
        return examples

    def _skip(self, path, line_number, reason):
        self.skipped += 1
        self._warnings(f"{path}:{line_number}: skipped, {reason}")


def examples_to_features(examples, max_seq_length, tokenizer):
    contexts = tokenizer.tokenize_to_ids([example.context for example in examples])
    endings = tokenizer.tokenize_to_ids([ending for example in examples for ending in example.endings])
    packed = pack_pairs(
        [contexts[i // NUM_CHOICES] for i in range(len(endings))],
        endings,
        max_seq_length,
        tokenizer.vocab["[CLS]"],
        tokenizer.vocab["[SEP]"],
    )
    features = {name: value.reshape(len(examples), NUM_CHOICES * max_seq_length) for name, value in packed.items()}
    features["label_ids"] = np.array([[example.label or 0] for example in examples], np.int64).reshape(-1, 1)
    return features


def write_swag_tfrecord(examples, max_seq_length, tokenizer, output_file):
    features = examples_to_features(examples, max_seq_length, tokenizer)
    records = example_wire.examples_to_bytes(features, feature_specs.multiple_choice_spec(max_seq_length, NUM_CHOICES))
    return tfrecord_files.write_tfrecord(records, output_file)
