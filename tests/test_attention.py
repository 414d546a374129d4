"""Self-attention and the full encoder against numpy references, with padding."""

import numpy as np

from keras_bert_impl.layers.activations import gelu_exact, gelu_tanh
from keras_bert_impl.layers.bert_self_attention import BertSelfAttention
from keras_bert_impl.models.bert_encoder import BertEncoder
from tests.conftest import TINY_CONFIG, make_inputs, randomize_weights


def numpy_attention(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, heads):
    """Scaled dot-product attention written out per batch row and head, in float64."""
    batch, length, hidden = x.shape
    size = hidden // heads
    out = np.zeros((batch, length, hidden))
    for b in range(batch):
        q, k, v = x[b] @ wq + bq, x[b] @ wk + bk, x[b] @ wv + bv
        context = np.zeros((length, hidden))
        for n in range(heads):
            cols = slice(n * size, (n + 1) * size)
            scores = q[:, cols] @ k[:, cols].T / np.sqrt(size)
            scores = scores + (1.0 - mask[b][None, :]) * -10000.0
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            context[:, cols] = probs @ v[:, cols]
        out[b] = context @ wo + bo
    return out


def test_attention_matches_numpy_with_padding_mask():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 7, 32)).astype(np.float32)
    mask = make_inputs()["input_mask"]
    layer = BertSelfAttention(num_heads=4, head_size=8, dropout_rate=0.0)
    layer.build((None, None, 32))
    randomize_weights(layer, scale=0.3)
    got = np.asarray(layer(x, mask))
    w = {v.path.split("/", 1)[1]: v.numpy().astype(np.float64) for v in layer.weights}
    want = numpy_attention(
        x.astype(np.float64),
        mask,
        w["query/kernel"],
        w["query/bias"],
        w["key/kernel"],
        w["key/bias"],
        w["value/kernel"],
        w["value/bias"],
        w["attention_output/kernel"],
        w["attention_output/bias"],
        4,
    )
    assert np.abs(got - want).max() < 1e-5


def test_padding_does_not_change_real_tokens():
    encoder = randomize_weights(BertEncoder(**TINY_CONFIG), scale=0.1)
    inputs = make_inputs(lengths=[4, 4, 4])
    base = encoder(inputs, training=False)
    # Change only what sits at padded positions: ids, segment ids and the sequence length.
    changed = {key: value.copy() for key, value in inputs.items()}
    changed["input_ids"][:, 4:] = [5, 17, 98]
    changed["segment_ids"][:, 4:] = 1
    longer = make_inputs(seq=11, lengths=[4, 4, 4])
    longer["input_ids"][:, :4] = inputs["input_ids"][:, :4]
    longer["segment_ids"][:, :4] = inputs["segment_ids"][:, :4]
    for other in (changed, longer):
        result = encoder(other, training=False)
        sequence, base_sequence = np.asarray(result["sequence_output"]), np.asarray(base["sequence_output"])
        assert np.abs(sequence[:, :4] - base_sequence[:, :4]).max() < 1e-5
        assert np.abs(np.asarray(result["pooled_output"]) - np.asarray(base["pooled_output"])).max() < 1e-5


def test_gelu_variants_match_their_formulas():
    from math import erf

    x = np.linspace(-4, 4, 41).astype(np.float32)
    exact = np.array([0.5 * v * (1 + erf(v / np.sqrt(2))) for v in x.astype(np.float64)])
    tanh = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    assert np.abs(np.asarray(gelu_exact(x)) - exact).max() < 1e-6
    assert np.abs(np.asarray(gelu_tanh(x)) - tanh).max() < 1e-6
    # The two differ by enough that a test using the wrong one fails.
    assert np.abs(exact - tanh).max() > 1e-4


def test_dropout_drops_at_its_rate_and_keeps_the_expectation():
    """16-bit keep-or-drop draws: every output is 0 or x / (1 - rate'), with rate' the 16-bit
    rate; the dropped share is within 5 binomial sigmas of it; two calls differ; eval is identity."""
    import tensorflow as tf

    from keras_bert_impl.layers.dropout import Dropout

    rate, shape = 0.1, (3, 4, 7, 7001)  # odd element count: the last 32-bit draw is half used
    layer = Dropout(rate, seed=7, name="dropout")
    x = np.random.default_rng(0).uniform(1.0, 2.0, shape).astype(np.float32)
    quantised = round(rate * 65536) / 65536
    first = layer(x, training=True).numpy()
    ratio = first / x
    kept = ratio > 0
    np.testing.assert_allclose(ratio[kept], 1.0 / (1.0 - quantised), rtol=1e-6)
    np.testing.assert_array_equal(ratio[~kept], 0.0)
    n = x.size
    assert abs((~kept).sum() - quantised * n) < 5 * np.sqrt(n * quantised * (1 - quantised))
    # Neighbouring elements (the two halves of one draw) are independent: P(both dropped) = rate^2.
    flat = ~kept.reshape(-1)[: n - n % 2].reshape(-1, 2)
    both = np.mean(flat[:, 0] & flat[:, 1])
    assert abs(both - quantised**2) < 5 * np.sqrt(quantised**2 / (n // 2))
    assert not np.array_equal(layer(x, training=True).numpy(), first)  # the seed state advanced
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    # The gradient is the same mask and scale.
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt, training=True)
    gradient = tape.gradient(y, xt).numpy()
    np.testing.assert_allclose(gradient, y.numpy() / x, rtol=1e-6)
    assert Dropout.from_config(layer.get_config()).rate == rate
