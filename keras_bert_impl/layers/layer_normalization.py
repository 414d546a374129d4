"""`LayerNormalization`: Keras' layer, its usual case (last axis, scale and centre) XLA-fused."""

import keras

from keras_bert_impl.layers.fused import layer_normalization


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class LayerNormalization(keras.layers.LayerNormalization):
    """Drop-in for `keras.layers.LayerNormalization`: same variables, names and config; over the
    last axis with gamma and beta, one fused kernel forward and one backward (`layers/fused.py`:
    Keras' version is a dozen passes over [B, T, D] each way outside XLA)."""

    def call(self, inputs):
        axes = self.axis if isinstance(self.axis, (list, tuple)) else [self.axis]
        last = len(inputs.shape) - 1
        if self.rms_scaling or not (self.center and self.scale) or [a % len(inputs.shape) for a in axes] != [last]:
            return super().call(inputs)
        return keras.ops.cast(layer_normalization(inputs, self.gamma, self.beta, self.epsilon), self.compute_dtype)
