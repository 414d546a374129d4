"""Every TFRecord feature spec, in one place, shared by the writers and the tf.data readers.

Names are Google's (`input_ids`, `input_mask`, `segment_ids`, `masked_lm_positions`, ...);
readers also accept tf-models-official's `input_word_ids` / `input_type_ids`.
"""

import os
import struct

import numpy as np
import tensorflow as tf

from keras_bert_common import stop
from keras_bert_common.errors import UsageError
from keras_bert_common.files import atomic_outputs, is_remote

# tf-models-official name -> Google name.
MODEL_GARDEN_ALIASES = {"input_word_ids": "input_ids", "input_type_ids": "segment_ids"}


def _ints(length):
    return tf.io.FixedLenFeature([length], tf.int64)


def _floats(length):
    return tf.io.FixedLenFeature([length], tf.float32)


def input_spec(max_seq_length):
    """The model inputs alone (what every task's records hold)."""
    return {
        "input_ids": _ints(max_seq_length),
        "input_mask": _ints(max_seq_length),
        "segment_ids": _ints(max_seq_length),
    }


# The next-sentence label of a pretraining instance: absent from masked-LM-only records.
NEXT_SENTENCE_LABELS = "next_sentence_labels"


def pretraining_spec(max_seq_length, max_predictions_per_seq, next_sentence_prediction=True):
    """Google's run_pretraining.py / create_pretraining_data.py schema; without
    `next_sentence_labels` for masked-LM-only records (create_pretraining_data.py
    --next_sentence_prediction=false: RoBERTa's inputs, one segment)."""
    spec = {
        "input_ids": _ints(max_seq_length),
        "input_mask": _ints(max_seq_length),
        "segment_ids": _ints(max_seq_length),
        "masked_lm_positions": _ints(max_predictions_per_seq),
        "masked_lm_ids": _ints(max_predictions_per_seq),
        "masked_lm_weights": _floats(max_predictions_per_seq),
    }
    if next_sentence_prediction:
        spec[NEXT_SENTENCE_LABELS] = _ints(1)
    return spec


def dynamic_pretraining_spec(max_seq_length, next_sentence_prediction=True):
    """create_pretraining_data.py --dynamic_masking: each instance once and unmasked. The training
    input pipeline masks it anew each time it is read (`dynamic_masking`) and hands the model
    `pretraining_spec`'s features. `mlm_candidates` is 0 where no mask may go ([CLS], [SEP],
    padding), 1 on the first piece of a word and 2 on its later pieces (whole-word masking);
    `mask_token_id` is the vocabulary's [MASK] id, which run_pretraining has no other way to know."""
    spec = {
        "input_ids": _ints(max_seq_length),
        "input_mask": _ints(max_seq_length),
        "segment_ids": _ints(max_seq_length),
        "mlm_candidates": _ints(max_seq_length),
        "mask_token_id": _ints(1),
    }
    if next_sentence_prediction:
        spec[NEXT_SENTENCE_LABELS] = _ints(1)
    return spec


def is_dynamic_pretraining(feature_names):
    """Whether records with these feature names are unmasked (dynamic masking) ones."""
    return "mlm_candidates" in feature_names


def has_next_sentence_labels(feature_names):
    """Whether pretraining records with these feature names carry next-sentence labels."""
    return NEXT_SENTENCE_LABELS in feature_names


def classification_spec(max_seq_length, is_regression=False):
    """Google's run_classifier.py schema (`label_ids`, `is_real_example`); float labels for STS-B."""
    return {
        "input_ids": _ints(max_seq_length),
        "input_mask": _ints(max_seq_length),
        "segment_ids": _ints(max_seq_length),
        "label_ids": _floats(1) if is_regression else _ints(1),
        "is_real_example": _ints(1),
    }


def squad_spec(max_seq_length, is_training):
    """Google's run_squad.py schema: positions and `is_impossible` only in training files."""
    spec = {
        "unique_ids": _ints(1),
        "input_ids": _ints(max_seq_length),
        "input_mask": _ints(max_seq_length),
        "segment_ids": _ints(max_seq_length),
    }
    if is_training:
        spec.update(start_positions=_ints(1), end_positions=_ints(1), is_impossible=_ints(1))
    return spec


def tagging_spec(max_seq_length):
    """Token classification (NER): a label per token, `label_weights` 1 on each word's first piece."""
    return {
        "input_ids": _ints(max_seq_length),
        "input_mask": _ints(max_seq_length),
        "segment_ids": _ints(max_seq_length),
        "label_ids": _ints(max_seq_length),
        "label_weights": _floats(max_seq_length),
    }


def multiple_choice_spec(max_seq_length, num_choices):
    """SWAG: the choices' sequences one after another ([num_choices * max_seq_length])."""
    return {
        "input_ids": _ints(num_choices * max_seq_length),
        "input_mask": _ints(num_choices * max_seq_length),
        "segment_ids": _ints(num_choices * max_seq_length),
        "label_ids": _ints(1),
    }


def to_example_bytes(features, spec):
    """Serializes {name: values} as a tf.train.Example, checking names and lengths against `spec`."""
    if set(features) != set(spec):
        raise UsageError(f"features {sorted(features)} do not match the spec {sorted(spec)}")
    proto = {}
    for name, feature_spec in spec.items():
        values = np.asarray(features[name]).reshape(-1)
        if values.shape[0] != feature_spec.shape[0]:
            raise UsageError(f"feature {name} has {values.shape[0]} values, the spec wants {feature_spec.shape[0]}")
        if feature_spec.dtype == tf.float32:
            proto[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values.astype(np.float32).tolist()))
        else:
            proto[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values.astype(np.int64).tolist()))
    return tf.train.Example(features=tf.train.Features(feature=proto)).SerializeToString()


def detect_feature_names(file_path):
    """The feature names of a TFRecord file's first record (Google's or Model Garden's)."""
    try:
        for record in tf.data.TFRecordDataset(file_path).take(1):
            return set(tf.train.Example.FromString(record.numpy()).features.feature)
    except tf.errors.OpError as error:
        raise UsageError(
            f"{file_path}: not a TFRecord file ({error.message.split('}}')[-1].strip()}); recreate it"
        ) from None
    except Exception as error:  # noqa: BLE001 -- a record that is no tf.train.Example
        raise UsageError(f"{file_path}: its records are not tf.train.Examples ({error}); recreate it") from None
    return set()


def parse_fn(spec, available_names=None):
    """A function parsing serialized Examples by `spec`, reading Model Garden's names where the
    files use them, returning int32 for int64 features (what TPUs and our models take)."""
    renamed = {}
    for google_name, feature_spec in spec.items():
        file_name = google_name
        if available_names is not None and google_name not in available_names:
            file_name = next(
                (
                    alias
                    for alias, name in MODEL_GARDEN_ALIASES.items()
                    if name == google_name and alias in available_names
                ),
                google_name,
            )
        renamed[file_name] = (google_name, feature_spec)

    def parse(serialized):
        parsed = tf.io.parse_example(serialized, {file_name: s for file_name, (_, s) in renamed.items()})
        out = {}
        for file_name, (google_name, _) in renamed.items():
            value = parsed[file_name]
            out[google_name] = tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
        return out

    return parse


def _varint_bytes(values):
    """Unsigned LEB128 of non-negative ints below 2**35, all at once: the encoded bytes of every
    value, concatenated in order, and the number of bytes of each value."""
    largest = int(values.max()) if values.size else 0
    values = values.astype(np.int32 if largest < 2**31 else np.int64)
    width = 1
    count = np.ones(values.shape, np.int8)
    while largest >= 1 << (7 * width):
        count += values >= (1 << (7 * width))
        width += 1
    groups = np.empty(values.shape + (width,), np.uint8)
    for k in range(width):
        groups[..., k] = (values >> (7 * k)) & 0x7F
        if k < width - 1:
            groups[..., k] |= (count > k + 1).astype(np.uint8) << 7
    used = np.arange(width, dtype=np.int8) < count[..., None]
    return groups[used].tobytes(), count


def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SMALL_VARINTS = [_varint(value) for value in range(1 << 14)]


def _framed(field_tag, payload):
    """A length-delimited protobuf field: tag byte, varint length, payload."""
    size = len(payload)
    return field_tag + (_SMALL_VARINTS[size] if size < 16384 else _varint(size)) + payload


def examples_to_bytes(features, spec):
    """Serializes a batch {name: [N, length] array} as N tf.train.Example records.

    Writes the protobuf wire format directly: the varints of a whole batch are computed at once in
    numpy and each feature's framing depends only on its payload length, so it is cached. Several
    times faster than building tf.train.Example objects. Rows holding negative or huge ints fall
    back to protobuf.
    """
    names = sorted(spec)
    if not names or not len(features[names[0]]):
        return []
    rows = {name: np.asarray(features[name]).reshape(len(features[name]), -1) for name in names}
    count = len(rows[names[0]]) if names else 0
    columns = []  # per feature: N entries of the Features map, each key + framed Feature
    fallback = np.zeros(count, bool)
    for name in names:
        feature_spec = spec[name]
        values = rows[name]
        if values.shape != (count, feature_spec.shape[0]):
            raise UsageError(
                f"feature {name} has shape {values.shape}, the spec wants ({count}, {feature_spec.shape[0]})"
            )
        if feature_spec.dtype == tf.float32:
            data = values.astype("<f4").tobytes()
            width = 4 * values.shape[1]
            payloads = [data[i * width : (i + 1) * width] for i in range(count)]
            kind = b"\x12"  # Feature.float_list
        else:
            values = values.astype(np.int64)
            fallback |= np.any((values < 0) | (values >= 2**35), axis=1)
            data, sizes = _varint_bytes(np.clip(values, 0, 2**35 - 1))
            ends = np.cumsum(sizes.sum(axis=1, dtype=np.int64)).tolist()
            payloads = [data[begin:end] for begin, end in zip([0] + ends[:-1], ends)]
            kind = b"\x1a"  # Feature.int64_list
        key = _framed(b"\x0a", name.encode())
        headers = {}  # payload length -> everything of the map entry before the payload
        entries = []
        for payload in payloads:
            header = headers.get(len(payload))
            if header is None:
                entry = _framed(b"\x0a", key + _framed(b"\x12", _framed(kind, _framed(b"\x0a", payload))))
                header = headers[len(payload)] = entry[: len(entry) - len(payload)]
            entries.append(header + payload)
        columns.append(entries)
    records = []
    for index, parts in enumerate(zip(*columns)):
        if fallback[index]:
            records.append(to_example_bytes({name: rows[name][index] for name in names}, spec))
        else:
            records.append(_framed(b"\x0a", b"".join(parts)))  # Example.features
    return records


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
