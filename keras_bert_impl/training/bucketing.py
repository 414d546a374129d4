"""Length buckets: each batch cut to its longest sequence, rounded up to one of a few fixed lengths.

Fine-tuning inputs are short (SST-2 averages 13 tokens, MRPC 53, in a 128-token window), so a
batch padded to `max_seq_length` computes mostly padding. Bucketed, a batch holds examples of
one length bucket and is cut to that bucket's length: a handful of shapes, so XLA (and a TPU)
compiles once per bucket, not once per batch. The task says what its lengths are and how its
features are cut (`Task.sequence_lengths`, `Task.cut_to_length`); outputs equal the padded
ones up to float rounding, because BERT masks padded keys.

- training: examples are shuffled, then grouped by bucket (`tf.data.Dataset.group_by_window`);
  a batch leaves as soon as its bucket has `batch_size` examples, so batches come shuffled
  across buckets and every example is seen once per epoch (at most `buckets x (batch_size - 1)`
  carry over into the next epoch's batches);
- prediction: examples sorted by length, batched, cut, and the outputs put back in input order.
"""

import numpy as np
import tensorflow as tf

# The bucket lengths below max_seq_length; max_seq_length itself is always the last bucket.
CANDIDATE_LENGTHS = (8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512)

# What sequence outputs hold beyond an input's real length (softmax and top-k ignore it).
PADDING_LOGIT = -10000.0


def bucket_lengths(max_seq_length):
    """The fixed lengths batches are cut to: the candidates below `max_seq_length`, then it."""
    return tuple(length for length in CANDIDATE_LENGTHS if length < max_seq_length) + (max_seq_length,)


def round_up(length, lengths):
    """The smallest of `lengths` (sorted) holding `length`."""
    return lengths[min(int(np.searchsorted(lengths, length, side="left")), len(lengths) - 1)]


def bucket_by_length(dataset, task, batch_size, max_seq_length, drop_remainder=True):
    """Parsed examples -> batches of one bucket each, cut to the bucket's length."""
    buckets = bucket_lengths(max_seq_length)
    lengths = tf.constant(buckets, tf.int32)

    def bucket_of(example):
        return tf.cast(tf.searchsorted(lengths, task.sequence_lengths(example)[None], side="left")[0], tf.int64)

    def cut(batch):
        longest = tf.reduce_max(task.sequence_lengths(batch))
        index = tf.minimum(tf.searchsorted(lengths, longest[None], side="left")[0], len(buckets) - 1)
        return task.cut_to_length(batch, tf.gather(lengths, index))

    batches = dataset.group_by_window(
        key_func=bucket_of,
        reduce_func=lambda _, window: window.batch(batch_size, drop_remainder=drop_remainder),
        window_size=batch_size,
    )
    return batches.map(cut, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def training_bucketing(task, max_seq_length, strategy, pad_to_max_seq_length=False):
    """What `make_tfrecord_dataset(bucketing=...)` takes for a run's training batches: None
    (Google's fixed shapes) with --pad_to_max_seq_length or on a TPU, which compiles its whole
    loop for one shape."""
    if pad_to_max_seq_length or isinstance(strategy, tf.distribute.TPUStrategy):
        return None

    def bucketing(dataset, batch_size, drop_remainder):
        return bucket_by_length(dataset, task, batch_size, max_seq_length, drop_remainder)

    return bucketing


def prediction_batches(lengths, batch_size, max_seq_length, bucketed=True):
    """[(indices, length)]: which examples form each batch and the length it is cut to.
    Bucketed, the examples go by length (stable) and each batch is cut to its bucket; padded,
    they go in input order at `max_seq_length`."""
    lengths = np.asarray(lengths)
    if not bucketed:
        return [
            (np.arange(start, min(start + batch_size, len(lengths))), max_seq_length)
            for start in range(0, len(lengths), batch_size)
        ]
    buckets = bucket_lengths(max_seq_length)
    order = np.argsort(lengths, kind="stable")
    return [
        (indices, round_up(int(lengths[indices].max()), buckets))
        for indices in (order[start : start + batch_size] for start in range(0, len(order), batch_size))
    ]


def fill_beyond(values, lengths, max_seq_length):
    """[B, T, ...] outputs -> [B, max_seq_length, ...], `PADDING_LOGIT` at and beyond each length."""
    filled = np.full((len(values), max_seq_length) + values.shape[2:], PADDING_LOGIT, values.dtype)
    for row, length in enumerate(lengths):
        filled[row, :length] = values[row, :length]
    return filled
