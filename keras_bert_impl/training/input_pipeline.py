"""`make_tfrecord_dataset`: tf.data over sharded TFRecords, as every runner reads them.

File-level sharding across input pipelines (workers), parallel interleave, shuffle, repeat,
static batch shapes (`drop_remainder`, as TPUs need), parsing by the shared feature specs, with
Google's or tf-models-official's feature names, and prefetch. With `example_fn` each record is
parsed alone and transformed with its position in the stream before batching (dynamic masking:
the position seeds the masks, so they are new at every read and the iterator's checkpoint
restores them). With `bucketing` (`training.bucketing.bucket_by_length`) parsed examples go into
length buckets and each batch is cut to its bucket's length.
"""

import contextlib
import re

import tensorflow as tf

from keras_bert_common.errors import UsageError
from tfrecord_tools import feature_specs

# TensorFlow's message for a gather past the end of a table: the index and the table's size.
_OUT_OF_TABLE = re.compile(r"indices\[[^\]]*\] = (-?\d+) is not in \[0, (\d+)\)")


def embedding_tables(bert_config):
    """{rows: what an id past them means} for `reading`: the tables records index into."""
    return {
        bert_config.vocab_size: "token ids from a larger vocab.txt than bert_config.json's vocab_size",
        bert_config.type_vocab_size: "segment ids past bert_config.json's type_vocab_size",
    }


@contextlib.contextmanager
def reading(files, tables=None):
    """Training or predicting from `files`: a truncated or corrupt record, or an id past one of
    the embedding `tables` (`embedding_tables`), becomes a one-line error naming the files
    (TensorFlow's own names neither the file nor the fix)."""
    shown = ", ".join(files[:3]) + (f" (and {len(files) - 3} more)" if len(files) > 3 else "")
    try:
        yield
    except tf.errors.DataLossError as error:
        first = next((line.strip() for line in error.message.splitlines() if "record" in line), "corrupt data")
        raise UsageError(
            f"{shown}: a record is truncated or corrupt ({first.split('}}')[-1].strip()}); recreate the file"
        ) from None
    except tf.errors.InvalidArgumentError as error:
        # Start-up checks read only each file's first records. A gather past a table of another
        # size (the masked positions' flat gather) is no data error of this kind: passed on.
        found = _OUT_OF_TABLE.search(error.message)
        if not found or int(found.group(2)) not in (tables or {}):
            raise
        raise UsageError(
            f"{shown}: a record holds id {found.group(1)}, outside an embedding table of {found.group(2)} rows "
            f"({tables[int(found.group(2))]}); recreate the records with the model's vocab.txt, or pass the "
            "bert_config.json of their vocabulary"
        ) from None


def make_tfrecord_dataset(
    files,
    spec,
    batch_size,
    is_training,
    input_pipeline_id=0,
    num_input_pipelines=1,
    shuffle_buffer=10000,
    seed=None,
    drop_remainder=True,
    example_fn=None,
    bucketing=None,
):
    """Batches of parsed features (int32 ids). Training data repeats and is shuffled; each
    input pipeline reads its own share of the files (of the records, if there are fewer files).
    Prediction passes `drop_remainder=False` to keep every record, in order."""
    parse = feature_specs.parse_fn(spec, feature_specs.detect_feature_names(files[0]))
    dataset = tf.data.Dataset.from_tensor_slices(files)
    shard_records = num_input_pipelines > 1 and len(files) < num_input_pipelines
    if num_input_pipelines > 1 and not shard_records:
        dataset = dataset.shard(num_input_pipelines, input_pipeline_id)
    if is_training:
        dataset = dataset.shuffle(len(files), seed=seed).repeat()
    dataset = dataset.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(8, len(files)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if shard_records:
        dataset = dataset.shard(num_input_pipelines, input_pipeline_id)
    if is_training:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed)
    if example_fn is not None:

        def one(index, record):
            return example_fn(index, {name: value[0] for name, value in parse(record[None]).items()})

        dataset = dataset.enumerate().map(one, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    elif bucketing is not None:
        # Parsed many at a time (one parse op per record costs more), then bucketed one by one.
        dataset = dataset.batch(256).map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).unbatch()
    if example_fn is not None or bucketing is not None:
        if bucketing is not None:
            dataset = bucketing(dataset, batch_size, drop_remainder)
        else:
            dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    else:
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
        dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)
