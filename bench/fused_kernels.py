"""The XLA-fused kernels (`keras_bert_impl/layers/fused.py`) against the TensorFlow/Keras ops they
replace, forward and backward, at BERT-mini's training shapes, in one run:

    .venv/bin/python -m bench.fused_kernels [--threads=1] [--precision=float32,bfloat16]

- GELU (tanh form) between the feed-forward matmuls: [32, 128, 256] -> 1024 -> 256, the same
  matmuls either way, so the difference is the activation's passes over [32, 128, 1024];
- LayerNorm over [32, 128, 256]: `keras.layers.LayerNormalization` vs ours;
- the masked-LM cross-entropy over [32 x 20, 30522] logits: `tf.nn.sparse_softmax_cross_entropy_with_logits`
  vs ours.
Each is a whole `tf.function` (forward, gradient); interleaved rounds, best of each.
"""

import argparse
import contextlib
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import tensorflow as tf

from keras_bert_impl.layers.activations import gelu_tanh
from keras_bert_impl.layers.fused import plain_formulas, sparse_softmax_cross_entropy
from keras_bert_impl.layers.layer_normalization import LayerNormalization

BATCH, SEQ, HIDDEN, INTERMEDIATE, PREDICTIONS, VOCAB = 32, 128, 256, 1024, 20, 30522


def feed_forward(activation, dtype):
    x = tf.cast(tf.random.normal([BATCH, SEQ, HIDDEN]), dtype)
    w1 = tf.Variable(tf.random.normal([HIDDEN, INTERMEDIATE]) * 0.5)
    w2 = tf.Variable(tf.random.normal([INTERMEDIATE, HIDDEN]) * 0.02)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            hidden = activation(tf.einsum("btd,di->bti", x, tf.cast(w1, dtype)))
            loss = tf.reduce_sum(tf.cast(tf.einsum("bti,id->btd", hidden, tf.cast(w2, dtype)), tf.float32) ** 2)
        return tape.gradient(loss, [w1, w2])

    return step


def layer_norm(layer_class, dtype):
    policy = "mixed_bfloat16" if dtype == tf.bfloat16 else "float32"
    layer = layer_class(epsilon=1e-12, dtype=keras.DTypePolicy(policy))
    x = tf.cast(tf.random.normal([BATCH, SEQ, HIDDEN]), dtype)
    layer.build(x.shape)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.cast(layer(x), tf.float32) * 1.5)
        return tape.gradient(loss, [x, *layer.trainable_weights])

    return step


def cross_entropy(function, dtype):
    logits = tf.cast(tf.random.normal([BATCH * PREDICTIONS, VOCAB]) * 3, dtype)
    labels = tf.random.uniform([BATCH * PREDICTIONS], 0, VOCAB, tf.int32)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = tf.reduce_sum(function(labels, logits))
        return tape.gradient(loss, logits)

    return step


def trace(step, plain):
    """Traces (and compiles) `step`: with the plain formulas (GELU as separate TensorFlow ops, TF's
    cross-entropy op on float32 logits, what these were before fusing) or with the fused kernels."""
    with plain_formulas() if plain else contextlib.nullcontext():
        step()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="TensorFlow's intra- and inter-op threads")
    parser.add_argument("--precision", default="float32,bfloat16")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=10, help="steps per timing")
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    print(f"{'kernel':22s} {'dtype':9s} {'TF/Keras ms':>11s} {'fused ms':>9s} {'speed-up':>8s}")
    for precision in args.precision.split(","):
        dtype = tf.as_dtype(precision)
        pairs = {
            "feed-forward + GELU": (feed_forward(gelu_tanh, dtype), feed_forward(gelu_tanh, dtype)),
            "LayerNorm": (layer_norm(keras.layers.LayerNormalization, dtype), layer_norm(LayerNormalization, dtype)),
            "MLM cross-entropy": (
                cross_entropy(sparse_softmax_cross_entropy, dtype),
                cross_entropy(sparse_softmax_cross_entropy, dtype),
            ),
        }
        for name, steps in pairs.items():
            for plain, step in zip((True, False), steps):
                trace(step, plain)
            best = [float("inf"), float("inf")]
            for _ in range(args.rounds):
                for which, step in enumerate(steps):
                    start = time.perf_counter()
                    for _ in range(args.repeats):
                        step()
                    best[which] = min(best[which], (time.perf_counter() - start) / args.repeats)
            print(f"{name:22s} {precision:9s} {best[0] * 1e3:11.2f} {best[1] * 1e3:9.2f} {best[0] / best[1]:7.2f}x")


if __name__ == "__main__":
    main()
