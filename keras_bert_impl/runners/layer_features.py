"""Feature-based NER's frozen encoder layers: computed once per (encoder weights, layers, data)
and cached as TFRecords (`feature_specs.layer_features_spec`), then held in memory for training
and prediction, so each epoch costs only the BiLSTM.

The cache file's name carries the sha256 of everything that decides its contents (every encoder
weight, the bert_config, the layers, max_seq_length and the bytes of the split's tagging
records): another checkpoint, layer choice or data gets its own file, never a stale one.
"""

import hashlib
import json
import os

import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert_common.progress import Progress
from keras_bert_impl.runners.extract_features import outputs_in_order
from keras_bert_impl.training.bucketing import fill_beyond, prediction_batches
from tfrecord_tools import feature_specs
from tfrecord_tools.example_wire import to_example_bytes
from tfrecord_tools.tfrecord_files import check_complete, read_tfrecord, write_tfrecord

# Bump when the cached layout changes: older caches then miss instead of being misread.
_CACHE_VERSION = 1
_STORED_DTYPE = np.float16  # half the memory and disk; the BiLSTM reads float32


def cache_key(encoder, layer_indexes, records_path, max_seq_length):
    """sha256 (hex) of what the cached features of `records_path` depend on."""
    digest = hashlib.sha256()
    settings = {
        "version": _CACHE_VERSION,
        "layers": list(layer_indexes),
        "max_seq_length": max_seq_length,
        "bert_config": encoder.bert_config.to_dict(),
        "dtype": np.dtype(_STORED_DTYPE).name,
    }
    digest.update(json.dumps(settings, sort_keys=True).encode())
    for weight in encoder.weights:
        digest.update(weight.path.encode())
        digest.update(np.ascontiguousarray(ops.convert_to_numpy(weight)).tobytes())
    with open(records_path, "rb") as reader:
        for block in iter(lambda: reader.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_layer_features(encoder, layer_indexes, records_path, cache_dir, max_seq_length, batch_size=32, log=print):
    """The path of `records_path`'s (tagging records) cached layers in `cache_dir`, computed
    first when no cache of this key exists."""
    key = cache_key(encoder, layer_indexes, records_path, max_seq_length)
    name = os.path.basename(records_path).removesuffix(".tf_record").removesuffix(".tfrecord")
    path = os.path.join(cache_dir, f"{name}.layers-{key[:16]}.tfrecord")
    if os.path.exists(path):
        check_complete(path)
        log(f"reusing the cached encoder layers {path}")
        return path
    tagging = read_tfrecord(records_path, feature_specs.tagging_spec(max_seq_length))
    inputs = {name: tagging[name] for name in ("input_ids", "input_mask", "segment_ids")}
    lengths = inputs["input_mask"].sum(axis=1)
    spec = feature_specs.layer_features_spec(max_seq_length)

    def compute(batch):
        outputs = encoder(batch, training=False)
        every_layer = [outputs["embedding_output"]] + list(outputs["encoder_outputs"])
        return [ops.stack([every_layer[i] for i in layer_indexes], axis=2)]  # [B, T, K, H]

    def records():
        progress = Progress(len(lengths), "examples", log)
        for index, (layers,), row in outputs_in_order(compute, inputs, batch_size, max_seq_length):
            values = layers[row, : lengths[index]].astype(_STORED_DTYPE)
            yield to_example_bytes(
                {
                    "layer_features": values.tobytes(),
                    "input_mask": tagging["input_mask"][index],
                    "label_ids": tagging["label_ids"][index],
                    "label_weights": tagging["label_weights"][index],
                },
                spec,
            )
            progress.update(index + 1)

    log(f"computing encoder layers {list(layer_indexes)} of {len(lengths)} examples once, into {path}")
    write_tfrecord(records(), path)
    return path


class LayerFeatures:
    """One split's cached layers in memory: every real piece's [K, H] in one array, examples as
    offsets into it, and their labels; batches come padded to their longest example."""

    def __init__(self, path, max_seq_length, num_layers, hidden_size):
        parsed = read_tfrecord(path, feature_specs.layer_features_spec(max_seq_length))
        self.max_seq_length = max_seq_length
        self.input_mask = parsed["input_mask"]
        self.label_ids = parsed["label_ids"]
        self.label_weights = parsed["label_weights"]
        self.lengths = self.input_mask.sum(axis=1).astype(np.int64)
        pieces = [np.frombuffer(value, _STORED_DTYPE) for value in parsed["layer_features"]]
        self.values = (
            np.concatenate(pieces).reshape(-1, num_layers, hidden_size)
            if pieces
            else np.zeros((0, num_layers, hidden_size), _STORED_DTYPE)
        )
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)])
        if self.offsets[-1] != len(self.values):
            raise ValueError(f"{path}: holds {len(self.values)} pieces' layers, its masks say {self.offsets[-1]}")

    def __len__(self):
        return len(self.lengths)

    def batch(self, indices, length=None):
        """Examples `indices` as model features, cut or padded to `length` (default: the longest)."""
        length = int(length or max(1, self.lengths[indices].max()))
        layers = np.zeros((len(indices), length) + self.values.shape[1:], np.float32)
        for row, index in enumerate(indices):
            start, end = self.offsets[index], self.offsets[index + 1]
            layers[row, : end - start] = self.values[start:end]
        return {
            "layer_features": layers,
            "input_mask": self.input_mask[indices, :length].astype(np.int32),
            "label_ids": self.label_ids[indices, :length].astype(np.int32),
            "label_weights": self.label_weights[indices, :length].astype(np.float32),
        }

    def training_dataset(self, batch_size, seed, pipeline_id=0, num_pipelines=1):
        """An endless tf.data of training batches (this pipeline's `batch_size` of each global batch):
        epoch e visits the examples in a permutation seeded by (seed, e). A batch is a pure
        function of its step, so the iterator's checkpoint (the step counter) resumes exactly."""
        count = len(self)
        global_batch = batch_size * num_pipelines
        names = ("layer_features", "input_mask", "label_ids", "label_weights")
        dtypes = (tf.float32, tf.int32, tf.int32, tf.float32)
        permutations = {}

        def make(step):
            start = int(step) * global_batch + pipeline_id * batch_size
            positions = np.arange(start, start + batch_size)
            indices = np.empty(batch_size, np.int64)
            for epoch in np.unique(positions // count):
                if epoch not in permutations:
                    permutations.clear()  # one epoch (two at a boundary) held at a time
                    permutations[epoch] = np.random.default_rng([seed, int(epoch)]).permutation(count)
                chosen = positions // count == epoch
                indices[chosen] = permutations[epoch][positions[chosen] % count]
            batch = self.batch(indices)
            return tuple(batch[name] for name in names)

        def as_features(step):
            values = tf.numpy_function(make, [step], dtypes, stateful=False)
            shapes = ([batch_size, None] + list(self.values.shape[1:]),) + ([batch_size, None],) * 3
            for value, shape in zip(values, shapes):
                value.set_shape(shape)
            return dict(zip(names, values))

        dataset = tf.data.Dataset.counter().map(as_features).prefetch(1)
        options = tf.data.Options()
        # The map is pure (a batch is a function of its step): restoring the counter restores the data.
        options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.IGNORE
        return dataset.with_options(options)


def predict_logits(model, features, batch_size):
    """`model.tagger`'s logits for every example of `features` (a `LayerFeatures`), in order, as
    [N, max_seq_length, C] with `PADDING_LOGIT` beyond each example's length (as
    `FineTuningRun.predict` returns a tagger's)."""
    max_seq_length = features.max_seq_length
    steps, outputs = {}, None
    for indices, length in prediction_batches(features.lengths, batch_size, max_seq_length):
        if length not in steps:
            steps[length] = tf.function(lambda batch: model.tagger(batch, training=False)["logits"])
        batch = features.batch(indices, length)
        logits = steps[length]({"features": batch["layer_features"], "input_mask": batch["input_mask"]}).numpy()
        if outputs is None:
            outputs = np.zeros((len(features), max_seq_length, logits.shape[-1]), np.float32)
        outputs[indices] = fill_beyond(logits, features.lengths[indices], max_seq_length)
    return outputs
