"""Kernels fused by XLA (GELU, LayerNorm, softmax cross-entropy): one pass over memory forward, one backward.

Outside XLA, TensorFlow runs every multiply and add of a formula as its own kernel over the whole
tensor: BERT's GELU is about ten passes forward and fifteen backward over [B, T, intermediate],
which cost BERT-mini two thirds of its feed-forward time on a CPU (the matmuls themselves are
fast). Here the forward pass and the derivative are each one small XLA-compiled function behind a
`tf.custom_gradient`, while the matmuls around them stay on TensorFlow's own (oneDNN) kernels.
They compute in float32 (float64 stays float64) and return the input's dtype, so bfloat16 runs
get float32 accuracy inside the function.

Inside a `tf.function` (training steps, evaluation) the fused kernels run. The same
formulas run as plain ops when called eagerly (XLA compiles once per shape, and an eager caller's
one-off shapes would pay a compilation each) and inside `plain_formulas()`, for a caller that
XLA-compiles the whole function: XLA then fuses by itself and the kernels would only split it.
An export traces them within `plain_formulas(serving=True)`: plain ops, no XLA at serving time.
`xla_matmul_dtype` is the one dtype rule for such a pass: bfloat16 matmuls in float32 on a CPU.
"""

import contextlib
import threading

import tensorflow as tf

# A count, not a thread-local: MirroredStrategy traces each replica's function in its own thread
# (hence the lock around the count). The serving flag is the exporting thread's own: an export
# traces on the calling thread, and nothing traced elsewhere meanwhile may take its formulas.
_plain_depth = 0
_plain_lock = threading.Lock()
_serving = threading.local()


@contextlib.contextmanager
def plain_formulas(serving=False):
    """Within: the plain-op formulas, for code traced into one XLA computation (`--jit_compile`).
    With `serving`, for an exported inference graph: GELU in the input's own dtype, so that
    TensorFlow's graph optimizer (grappler's remapper) fuses it into the MatMul before it (one
    oneDNN `_FusedMatMul` with BiasAdd on a CPU). Forward only."""
    global _plain_depth
    with _plain_lock:
        _plain_depth += 1
    _serving.depth = getattr(_serving, "depth", 0) + bool(serving)
    try:
        yield
    finally:
        _serving.depth -= bool(serving)
        with _plain_lock:
            _plain_depth -= 1


def _fused_here():
    return not tf.executing_eagerly() and not _plain_depth


def _serving_here():
    return not tf.executing_eagerly() and bool(getattr(_serving, "depth", 0))


def _compute_dtype(dtype):
    return tf.float64 if dtype == tf.float64 else tf.float32


def _on_cpu():
    return not (tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("TPU"))


def xla_matmul_dtype(dtype):
    """The dtype to run a large matmul of `dtype` inputs in: float32 for bfloat16 traced within
    `plain_formulas()` (an XLA-compiled training pass) on a CPU, `dtype` everywhere else. XLA's CPU
    backend has no fast bfloat16 dot (oneDNN's AMX kernels serve TensorFlow's own MatMul, not
    XLA's), so there a bfloat16 matmul costs more than a float32 one: BERT-tiny's masked-LM logits
    in float32 took its `--jit_compile` bfloat16 step from 0.857 to 0.779 s
    (docs/benchmarks/pretraining_throughput.md)."""
    if dtype == tf.bfloat16 and _plain_depth and not tf.executing_eagerly() and not _serving_here() and _on_cpu():
        return tf.float32
    return dtype


def _kernel(function):
    return tf.function(function, jit_compile=True, autograph=False, reduce_retracing=True)


def fused_elementwise(function, derivative, name, serving=None):
    """`function(x)` with gradient `dy * derivative(x)`, each one XLA kernel; both take and
    return float32 (or float64) tensors of the same shape. `serving(x)`, the same function, is
    traced instead within `plain_formulas(serving=True)`, in x's own dtype."""

    def forward(x):
        return tf.cast(function(tf.cast(x, _compute_dtype(x.dtype))), x.dtype)

    def backward(x, dy):
        compute = _compute_dtype(x.dtype)
        return tf.cast(tf.cast(dy, compute) * derivative(tf.cast(x, compute)), dy.dtype)

    forward_kernel, backward_kernel = _kernel(forward), _kernel(backward)

    @tf.custom_gradient
    def fused(x):
        return forward_kernel(x), lambda dy: backward_kernel(x, dy)

    def call(x):
        x = tf.convert_to_tensor(x)
        if serving and _serving_here() and x.dtype in (tf.float32, tf.bfloat16):
            # No casts around it: they would keep grappler from fusing it into the MatMul before
            # (oneDNN's fused kernel evaluates it in float32 for a bfloat16 input). float16 keeps
            # the float32 formula: oneDNN fuses no float16 on most CPUs.
            return serving(x)
        if not _fused_here():
            return forward(x)
        with tf.name_scope(name):
            return fused(x)

    call.__name__ = name
    return call


def _layer_norm_forward(x, gamma, beta, epsilon):
    compute = _compute_dtype(x.dtype)
    x = tf.cast(x, compute)
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    variance = tf.reduce_mean(tf.math.squared_difference(x, mean), axis=-1, keepdims=True)
    inv = tf.math.rsqrt(variance + epsilon)
    return (x - mean) * inv * tf.cast(gamma, compute) + tf.cast(beta, compute), mean, inv


def _layer_norm_backward(x, gamma, mean, inv, dy):
    """d_x, and dy * normalised x for d_gamma: the column sums are left to TensorFlow's reduction,
    which is twice as fast as XLA's on a CPU."""
    compute = mean.dtype
    normalized = (tf.cast(x, compute) - mean) * inv
    dy = tf.cast(dy, compute)
    g = dy * tf.cast(gamma, compute)
    d_x = inv * (
        g
        - tf.reduce_mean(g, axis=-1, keepdims=True)
        - normalized * tf.reduce_mean(g * normalized, axis=-1, keepdims=True)
    )
    return d_x, dy * normalized


_layer_norm_forward_kernel = _kernel(_layer_norm_forward)
_layer_norm_backward_kernel = _kernel(_layer_norm_backward)


def layer_normalization(x, gamma, beta, epsilon):
    """LayerNorm over the last axis, `(x - mean) / sqrt(variance + epsilon) * gamma + beta`, one
    XLA kernel forward and one backward (the mean and inverse deviation are kept for it); returns
    x's dtype, gradients for x, gamma and beta in their own dtypes."""

    @tf.custom_gradient
    def normalize(x, gamma, beta):
        y, mean, inv = _layer_norm_forward_kernel(x, gamma, beta, epsilon)

        def grad(dy):
            d_x, scaled = _layer_norm_backward_kernel(x, gamma, mean, inv, dy)
            rows = tf.range(tf.rank(dy) - 1)  # every axis but the last
            d_gamma = tf.reduce_sum(scaled, axis=rows)
            d_beta = tf.reduce_sum(tf.cast(dy, d_gamma.dtype), axis=rows)
            return tf.cast(d_x, x.dtype), tf.cast(d_gamma, gamma.dtype), tf.cast(d_beta, beta.dtype)

        return tf.cast(y, x.dtype), grad

    x, gamma, beta = (tf.convert_to_tensor(v) for v in (x, gamma, beta))
    if not _fused_here():
        return tf.cast(_layer_norm_forward(x, gamma, beta, epsilon)[0], x.dtype)
    return normalize(x, gamma, beta)


def _is_label(labels, logits):
    """[..., vocab] booleans: True where the vocabulary index is the row's label."""
    return tf.range(tf.shape(logits)[-1]) == labels[..., None]


def _cross_entropy_forward(labels, logits):
    compute = _compute_dtype(logits.dtype)
    logits = tf.cast(logits, compute)
    top = tf.reduce_max(logits, axis=-1, keepdims=True)
    log_sum_exp = top + tf.math.log(tf.reduce_sum(tf.exp(logits - top), axis=-1, keepdims=True))
    gold = tf.reduce_sum(tf.where(_is_label(labels, logits), logits, 0.0), axis=-1)
    return log_sum_exp[..., 0] - gold, log_sum_exp


def _cross_entropy_backward(labels, logits, log_sum_exp, d_loss):
    compute = log_sum_exp.dtype
    probabilities = tf.exp(tf.cast(logits, compute) - log_sum_exp)
    one_hot = tf.cast(_is_label(labels, logits), compute)
    return tf.cast((probabilities - one_hot) * tf.cast(d_loss, compute)[..., None], logits.dtype)


_cross_entropy_forward_kernel = _kernel(_cross_entropy_forward)
_cross_entropy_backward_kernel = _kernel(_cross_entropy_backward)


def sparse_softmax_cross_entropy(labels, logits):
    """`tf.nn.sparse_softmax_cross_entropy_with_logits` (labels over the last axis of logits), one
    XLA kernel forward and one backward: TensorFlow's own op is a slow single kernel on a CPU
    (a seventh of BERT-mini's step at vocab 30522). No gradient for the integer labels."""

    @tf.custom_gradient
    def cross_entropy(logits):
        loss, log_sum_exp = _cross_entropy_forward_kernel(labels, logits)
        return loss, lambda d_loss: _cross_entropy_backward_kernel(labels, logits, log_sum_exp, d_loss)

    labels = tf.cast(tf.convert_to_tensor(labels), tf.int32)
    logits = tf.convert_to_tensor(logits)
    if not _fused_here():  # TensorFlow's op: XLA has its own lowering of it
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels, tf.cast(logits, _compute_dtype(logits.dtype)))
    return cross_entropy(logits)
