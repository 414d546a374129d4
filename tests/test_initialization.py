"""A fresh encoder is initialised as Google's BERT is: every weight matrix an independent draw from
a truncated normal of stddev `initializer_range` (no two weights sharing values, as one shared
Keras 3 initializer instance would make query, key and value)."""

import itertools

import keras
import numpy as np

from keras_bert_impl.models.bert_encoder import BertEncoder
from tests.conftest import tiny_bert_config


def test_every_weight_matrix_is_its_own_draw():
    keras.utils.set_random_seed(0)
    encoder = BertEncoder.from_bert_config(tiny_bert_config(99))
    matrices = [(weight.path, weight.numpy().ravel()) for weight in encoder.weights if len(weight.shape) == 2]
    assert len(matrices) >= 4 + 6 * 2  # embeddings (3) and pooler, q/k/v/o/intermediate/output per layer
    for (name_a, a), (name_b, b) in itertools.combinations(matrices, 2):
        size = min(a.size, b.size)
        correlation = np.corrcoef(a[:size], b[:size])[0, 1]
        # Independent draws: |r| about 1/sqrt(size); shared ones: 1.
        assert abs(correlation) < 5 / np.sqrt(size), (name_a, name_b, correlation)
    # tf.truncated_normal cuts at 2 stddevs: its standard deviation is 0.8796 x stddev (scipy's truncnorm).
    everything = np.concatenate([values for _, values in matrices])
    assert abs(everything.std() / (0.02 * 0.8796) - 1) < 0.05
    assert np.abs(everything).max() <= 2 * 0.02 + 1e-7
