"""TFRecord files: written under a temporary name and renamed when complete, read back parsed by a
feature spec, and checked before training (complete, of the lengths the flags say, token ids within
the vocabulary)."""

import os
import struct

import numpy as np
import tensorflow as tf

from keras_bert_common import stop
from keras_bert_common.errors import UsageError
from keras_bert_common.files import atomic_outputs, is_remote
from tfrecord_tools.feature_specs import MODEL_GARDEN_ALIASES, detect_feature_names, parse_fn


def write_tfrecord(records, output_file):
    """Writes serialized records under a temporary name, renamed when complete; returns the count."""
    count = 0
    with atomic_outputs([output_file]) as (temporary,):
        with tf.io.TFRecordWriter(temporary) as writer:
            for record in records:
                writer.write(record)
                count += 1
                stop.raise_if_requested()
    return count


def read_tfrecord(paths, spec, batch_size=1024):
    """Every record of `paths` (in order) parsed by `spec`, as {name: [N, length] numpy array}."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    parse = parse_fn(spec, detect_feature_names(paths[0]))
    parts = [
        {name: value.numpy() for name, value in parse(batch).items()}
        for batch in tf.data.TFRecordDataset(paths).batch(batch_size)
    ]
    if not parts:
        return {name: np.zeros((0, feature.shape[0]), feature.dtype.as_numpy_dtype) for name, feature in spec.items()}
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


# Which flag sets each feature's length, for the error when records and flags disagree.
LENGTH_FLAGS = {
    "input_ids": "--max_seq_length",
    "input_mask": "--max_seq_length",
    "segment_ids": "--max_seq_length",
    "label_ids": "--max_seq_length",
    "label_weights": "--max_seq_length",
    "masked_lm_positions": "--max_predictions_per_seq",
    "masked_lm_ids": "--max_predictions_per_seq",
    "masked_lm_weights": "--max_predictions_per_seq",
}


# Features holding WordPiece ids, which must lie inside the model's vocabulary.
TOKEN_ID_FEATURES = ("input_ids", "masked_lm_ids")
_RECORDS_CHECKED_FOR_IDS = 100


def check_complete(path):
    """Before training: a local TFRecord file ends where its last record does. A file cut short
    (an interrupted copy, a full disk) fails here at once rather than when the reader reaches the
    cut, maybe hours in. Walks the 12-byte record headers only (no CRCs); remote files (gs://)
    are left to the reader, where a walk would be one request per record."""
    if is_remote(path):
        return
    size, offset, count = os.path.getsize(path), 0, 0
    with open(path, "rb") as reader:
        while offset < size:
            reader.seek(offset)
            header = reader.read(12)
            end = offset + 16 + (struct.unpack("<Q", header[:8])[0] if len(header) == 12 else 0)
            if len(header) < 12 or end > size:
                raise UsageError(
                    f"{path}: truncated or corrupt: record {count + 1} runs to byte {end:,} but the "
                    f"file ends at {size:,} (a copy cut short?); recreate the file or copy it again"
                )
            offset, count = end, count + 1


def check_records_match(path, spec, what="records", lengths_are_flags=True, vocab_size=None):
    """Before training: the first record of `path` has every feature of `spec`, at its length,
    and (with `vocab_size`) the first records' token ids fit the model's vocabulary. Raises
    UsageError naming the file, the feature, both values and the flag to change (its value, where
    `lengths_are_flags`: each feature as long as its flag, as in pretraining). The whole file
    is checked to be complete (`check_complete`)."""
    check_complete(path)
    try:
        # One read: the first record for the features, the first hundred for the token ids.
        records = [record.numpy() for record in tf.data.TFRecordDataset(path).take(_RECORDS_CHECKED_FOR_IDS)]
    except tf.errors.OpError as error:
        raise UsageError(f"{path}: not a TFRecord file ({error.message.splitlines()[0]}); recreate it") from None
    if not records:
        raise UsageError(f"{path}: holds no records; recreate it from non-empty input")
    try:
        features = tf.train.Example.FromString(records[0]).features.feature
    except Exception as error:  # noqa: BLE001 -- any parse failure means the same thing
        raise UsageError(f"{path}: its records are not tf.train.Examples ({error}); recreate it") from None
    names = set(features)
    missing = [
        name
        for name in spec
        if name not in names
        and not any(alias in names for alias, google in MODEL_GARDEN_ALIASES.items() if google == name)
    ]
    if missing:
        raise UsageError(
            f"{path}: {what} lack feature(s) {', '.join(missing)} (they hold {', '.join(sorted(names))}); "
            "is this the right kind of TFRecord?"
        )
    for name, feature_spec in spec.items():
        stored = (
            features[name]
            if name in names
            else next(
                features[alias] for alias, google in MODEL_GARDEN_ALIASES.items() if google == name and alias in names
            )
        )
        kind = stored.WhichOneof("kind")
        count = len(getattr(stored, kind).value) if kind else 0
        wanted = feature_spec.shape[0]
        if count != wanted:
            flag = LENGTH_FLAGS.get(name)
            fix = (
                f"pass {flag}={count}, what the data was made with"
                if flag and lengths_are_flags
                else "make the length flags match the data"
            )
            raise UsageError(
                f"{path}: {name} holds {count} values per record but the flags ask for {wanted}; "
                f"{fix} (or recreate the data)"
            )
    if vocab_size is not None:
        _check_token_ids(
            path, records, [name for name in TOKEN_ID_FEATURES if name in spec and name in names], vocab_size
        )


def _check_token_ids(path, records, names, vocab_size):
    # Records made with a larger vocabulary would otherwise fail inside the first training step.
    for record in records:
        features = tf.train.Example.FromString(record).features.feature
        for name in names:
            largest = max(features[name].int64_list.value, default=0)
            if largest >= vocab_size:
                raise UsageError(
                    f"{path}: {name} holds token id {largest}, outside the model's vocabulary (vocab_size="
                    f"{vocab_size}); the records were made with a larger vocab.txt: pass the bert_config.json "
                    "of that vocabulary, or recreate the records with this model's vocab.txt"
                )
