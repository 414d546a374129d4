"""The XLA-fused kernels (`layers/fused.py`): values against numpy, gradients against central
finite differences in float64, bfloat16 in and out, and the LayerNormalization layer against
Keras' own; each inside a `tf.function` (the fused kernels) and eagerly (the plain formulas)."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_impl.layers.activations import gelu_exact, gelu_tanh
from keras_bert_impl.layers.fused import layer_normalization, sparse_softmax_cross_entropy
from keras_bert_impl.layers.layer_normalization import LayerNormalization

RNG = np.random.default_rng(0)
MODES = pytest.mark.parametrize("graph", [True, False], ids=["tf.function", "eager"])


def _value_and_gradients(function, inputs, weights, graph):
    """function(*inputs), and the gradients of sum(function(*inputs) * weights) for every input."""

    def run(*tensors):
        with tf.GradientTape() as tape:
            tape.watch(tensors)
            y = function(*tensors)
            loss = tf.reduce_sum(tf.cast(y, tf.float64) * weights)
        return y, tape.gradient(loss, tensors)

    return (tf.function(run) if graph else run)(*inputs)


def _numpy_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _numpy_gelu_exact(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _numpy_layer_norm(x, gamma, beta, epsilon):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + epsilon) * gamma + beta


def _numpy_cross_entropy(labels, logits):
    shifted = logits - logits.max(-1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probabilities, labels[..., None], -1)[..., 0]


def _finite_difference(loss, value, step=1e-6):
    """d loss / d value by central differences, element by element (float64)."""
    grad = np.zeros_like(value)
    for index in np.ndindex(value.shape):
        up, down = value.copy(), value.copy()
        up[index] += step
        down[index] -= step
        grad[index] = (loss(up) - loss(down)) / (2 * step)
    return grad


@MODES
@pytest.mark.parametrize("ours, reference", [(gelu_tanh, _numpy_gelu_tanh), (gelu_exact, _numpy_gelu_exact)])
def test_gelu_values_and_gradients(ours, reference, graph):
    x = RNG.normal(size=(3, 7, 37)) * 3
    weights = RNG.normal(size=x.shape)
    y, (grad,) = _value_and_gradients(ours, [tf.constant(x)], weights, graph)  # float64 inside
    np.testing.assert_allclose(y.numpy(), reference(x), atol=1e-12)
    # Elementwise: a corner of the tensor is enough, with the corner of the weights.
    expected = _finite_difference(lambda v: float(np.sum(reference(v) * weights[:1, :2])), x[:1, :2])
    np.testing.assert_allclose(grad.numpy()[:1, :2], expected, atol=1e-6)
    # float32 and bfloat16 in, the same dtype out (and as gradient), float32 accuracy inside.
    for dtype, tolerance in ((tf.float32, 1e-5), (tf.bfloat16, 2e-2)):
        small = tf.cast(x, dtype)
        y, (grad,) = _value_and_gradients(ours, [small], weights, graph)
        assert y.dtype == grad.dtype == dtype
        rounded = tf.cast(small, tf.float64).numpy()
        np.testing.assert_allclose(tf.cast(y, tf.float64).numpy(), reference(rounded), atol=tolerance, rtol=tolerance)


@MODES
def test_layer_normalization_values_and_gradients(graph):
    x = RNG.normal(size=(2, 3, 11)) * 4 + 2
    gamma, beta = RNG.normal(size=11), RNG.normal(size=11)
    weights = RNG.normal(size=x.shape)
    values = [x, gamma, beta]
    function = lambda *tensors: layer_normalization(*tensors, 1e-12)  # noqa: E731
    y, grads = _value_and_gradients(function, [tf.constant(v) for v in values], weights, graph)
    np.testing.assert_allclose(y.numpy(), _numpy_layer_norm(x, gamma, beta, 1e-12), atol=1e-10)
    for which in range(3):

        def loss_of(value, which=which):
            args = list(values)
            args[which] = value
            return float(np.sum(_numpy_layer_norm(*args, 1e-12) * weights))

        np.testing.assert_allclose(grads[which].numpy(), _finite_difference(loss_of, values[which]), atol=1e-6)


@MODES
def test_layer_normalization_any_rank_and_bfloat16(graph):
    ones, zeros = np.ones(13, np.float32), np.zeros(13, np.float32)
    for shape in ((5, 13), (2, 3, 4, 13)):
        x = RNG.normal(size=shape).astype(np.float32)
        y, _ = _value_and_gradients(lambda v: layer_normalization(v, ones, zeros, 1e-12), [tf.constant(x)], 1.0, graph)
        np.testing.assert_allclose(y.numpy(), _numpy_layer_norm(x, 1, 0, 1e-12), atol=1e-5)
    x = tf.constant(RNG.normal(size=(3, 13)), tf.bfloat16)
    function = lambda v, g: layer_normalization(v, g, zeros, 1e-12)  # noqa: E731
    y, (d_x, d_gamma) = _value_and_gradients(function, [x, tf.ones(13)], RNG.normal(size=(3, 13)), graph)
    assert (y.dtype, d_x.dtype, d_gamma.dtype) == (tf.bfloat16, tf.bfloat16, tf.float32)
    np.testing.assert_allclose(
        tf.cast(y, tf.float64).numpy(), _numpy_layer_norm(tf.cast(x, tf.float64).numpy(), 1, 0, 1e-12), atol=3e-2
    )


@MODES
def test_layer_normalization_layer_is_keras_layer_normalization(graph):
    x = tf.constant(RNG.normal(size=(3, 7, 32)).astype(np.float32) * 3 + 1)
    ours, reference = LayerNormalization(epsilon=1e-12, name="ln"), keras.layers.LayerNormalization(epsilon=1e-12)
    ours.build(x.shape)
    reference.build(x.shape)
    for layer in (ours, reference):
        layer.gamma.assign(RNG.normal(size=32).astype(np.float32))
        layer.beta.assign(RNG.normal(size=32).astype(np.float32))
    reference.set_weights(ours.get_weights())
    assert [w.path for w in ours.weights] == ["ln/gamma", "ln/beta"]
    outputs, grads = [], []
    for layer in (ours, reference):

        def run(layer=layer):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = layer(x)
                loss = tf.reduce_sum(y * tf.range(32, dtype=tf.float32))
            return y, tape.gradient(loss, [x, *layer.trainable_weights])

        y, layer_grads = (tf.function(run) if graph else run)()
        outputs.append(y.numpy())
        grads.append([g.numpy() for g in layer_grads])
    np.testing.assert_allclose(outputs[0], outputs[1], atol=1e-5)
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, atol=1e-4)
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(ours))
    assert type(clone) is LayerNormalization and clone.get_config() == ours.get_config()
    # Another axis: Keras' own computation, unchanged.
    other = LayerNormalization(axis=1, epsilon=1e-3)
    other_reference = keras.layers.LayerNormalization(axis=1, epsilon=1e-3)
    np.testing.assert_array_equal(other(x).numpy(), other_reference(x).numpy())


@MODES
def test_sparse_softmax_cross_entropy_values_and_gradients(graph):
    logits = RNG.normal(size=(3, 4, 9)) * 5
    labels = RNG.integers(0, 9, (3, 4))
    weights = RNG.normal(size=(3, 4))
    function = lambda v: sparse_softmax_cross_entropy(labels, v)  # noqa: E731
    loss, (grad,) = _value_and_gradients(function, [tf.constant(logits)], weights, graph)
    np.testing.assert_allclose(loss.numpy(), _numpy_cross_entropy(labels, logits), atol=1e-12)
    expected = _finite_difference(lambda v: float(np.sum(_numpy_cross_entropy(labels, v) * weights)), logits)
    np.testing.assert_allclose(grad.numpy(), expected, atol=1e-6)
    # bfloat16 logits: float32 loss, bfloat16 gradient.
    small = tf.cast(logits, tf.bfloat16)
    loss, (grad,) = _value_and_gradients(function, [small], weights, graph)
    assert loss.dtype == tf.float32 and grad.dtype == tf.bfloat16
    rounded = tf.cast(small, tf.float64).numpy()
    np.testing.assert_allclose(loss.numpy(), _numpy_cross_entropy(labels, rounded), atol=1e-5)


def _compiled_calls(function, *specs):
    """How many XLA-compiled function calls a traced function's graph holds."""
    graph = tf.function(function, autograph=False).get_concrete_function(*specs).graph
    count = 0
    for op in graph.get_operations():
        try:
            count += bool(op.get_attr("_XlaMustCompile"))
        except ValueError:  # an op without the attribute
            pass
    return count


def test_plain_formulas_trace_no_xla_kernels():
    """A traced function calls the kernels (forward only: no gradient is taken); within
    `plain_formulas()`, as the Trainer traces a `--jit_compile` pass, it calls none."""
    from keras_bert_impl.layers.fused import plain_formulas

    def model(x, labels):
        hidden = layer_normalization(gelu_tanh(x), tf.ones(5), tf.zeros(5), 1e-12)
        return sparse_softmax_cross_entropy(labels, hidden)

    specs = (tf.TensorSpec([None, 5]), tf.TensorSpec([None], tf.int32))
    assert _compiled_calls(model, *specs) == 3
    with plain_formulas():
        assert _compiled_calls(model, *specs) == 0
    assert _compiled_calls(model, *specs) == 3


def _logits_matmul_dtypes(head, inputs):
    """The dtypes of the [*, vocab] matmuls in `head` traced on `inputs`, and its output dtype."""
    graph = tf.function(lambda *x: head(*x)).get_concrete_function(*inputs).graph
    vocab = head.vocab_size
    dtypes = [
        op.get_attr("T").name
        for op in graph.get_operations()
        if op.type in ("MatMul", "BatchMatMulV2") and op.outputs[0].shape[-1] == vocab
    ]
    return dtypes, graph.outputs[0].dtype.name


def test_masked_lm_logits_run_in_float32_under_xla_on_cpu_only():
    """Under mixed_bfloat16 the head's [*, V] matmul is bfloat16 in a plain `tf.function` (oneDNN's
    fast kernel) and in an export, but float32 in a `--jit_compile` pass on a CPU (XLA's CPU
    bfloat16 dot is the slower one); the logits are bfloat16 either way, and both agree with numpy."""
    from keras_bert_impl.layers.fused import plain_formulas
    from keras_bert_impl.layers.masked_lm_head import MaskedLMHead

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        head = MaskedLMHead(99, 32, hidden_act="relu", name="head")
        sequence = tf.constant(RNG.normal(size=(3, 7, 32)), tf.float32)
        positions = tf.constant([[0, 6], [3, 3], [1, 5]], tf.int32)
        table = tf.constant(RNG.normal(scale=0.5, size=(99, 32)), tf.float32)
        inputs = (tf.cast(sequence, tf.bfloat16), positions, table)
        head(*inputs)
        head.output_bias.assign(RNG.normal(size=99))
        assert _logits_matmul_dtypes(head, inputs) == (["bfloat16"], "bfloat16")
        with plain_formulas():
            assert _logits_matmul_dtypes(head, inputs) == (["float32"], "bfloat16")
            xla_logits = tf.function(head, jit_compile=True)(*inputs)
        with plain_formulas(serving=True):
            assert _logits_matmul_dtypes(head, inputs) == (["bfloat16"], "bfloat16")
        plain_logits = tf.function(head)(*inputs)
    finally:
        keras.mixed_precision.set_global_policy("float32")

    # numpy, float64, from the bfloat16-rounded input: LN(relu(x W + b)) E^T + bias.
    x = tf.cast(inputs[0], tf.float64).numpy()
    rows = np.stack([x[b, p] for b in range(3) for p in positions.numpy()[b]])
    kernel, bias = (w.numpy().astype(np.float64) for w in head.transform.weights)
    h = np.maximum(rows @ kernel + bias, 0)
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-12)
    expected = (h @ table.numpy().T + head.output_bias.numpy()).reshape(3, 2, 99)
    # bfloat16 keeps 8 bits of mantissa: inputs, hidden states and logits each round by <= 2^-8.
    scale = np.abs(expected).max()
    for logits in (xla_logits, plain_logits):
        np.testing.assert_allclose(tf.cast(logits, tf.float64).numpy(), expected, atol=0.05 * scale)
