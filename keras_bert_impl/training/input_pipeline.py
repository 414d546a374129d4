"""`make_tfrecord_dataset`: tf.data over sharded TFRecords, as every runner reads them.

File-level sharding across input pipelines (workers), parallel interleave, shuffle, repeat,
static batch shapes (`drop_remainder`, as TPUs need), parsing by the shared feature specs, with
Google's or tf-models-official's feature names, and prefetch.
"""

import tensorflow as tf

from tfrecord_tools import feature_specs


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
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)
