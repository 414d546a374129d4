"""`Dropout`: Keras' Dropout drawing one 16-bit random number per element instead of one 32-bit.

Dropout's random numbers cost BERT-mini about a tenth of its training step on a CPU (Philox
generates 32 random bits per element, then a float, a compare and a select). Keep-or-drop needs
far fewer bits: this layer splits every 32-bit draw into two 16-bit ones and compares them with
an integer threshold, so the rate is `round(rate * 65536) / 65536` (0.1 -> 0.100006; FlashAttention
quantises to 8 bits) and the kept values are scaled by the exact inverse of the kept share, so the
expectation is unchanged. Same seed state (Keras' `SeedGenerator`, checkpointed), same layer
name and config; with a `noise_shape` it is Keras' own.
"""

import keras
import tensorflow as tf

_LEVELS = 1 << 16


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class Dropout(keras.layers.Dropout):
    """Drop-in for `keras.layers.Dropout(rate)` with 16-bit keep-or-drop draws (see module)."""

    def call(self, inputs, training=False):
        if not training or self.rate <= 0 or self.noise_shape is not None or self.rate >= 1:
            return super().call(inputs, training=training)
        threshold = round(self.rate * _LEVELS)
        # Keras keeps the seed state as int64; TF's stateless ops take int32 seeds.
        seed = tf.cast(tf.math.floormod(self.seed_generator.next(), tf.int32.max - 1), tf.int32)
        size = tf.size(inputs)
        bits = tf.random.stateless_uniform([(size + 1) // 2], seed, minval=None, maxval=None, dtype=tf.uint32)
        halves = tf.reshape(tf.bitcast(bits, tf.uint16), [-1])[:size]  # two draws per 32 bits
        keep = tf.reshape(halves >= tf.constant(threshold, tf.uint16), tf.shape(inputs))
        # One multiplier tensor: the backward pass is then one multiplication, not two.
        multiplier = tf.cast(keep, inputs.dtype) * tf.constant(_LEVELS / (_LEVELS - threshold), inputs.dtype)
        return inputs * multiplier
