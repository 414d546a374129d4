"""`LayerMix`: how the feature-based approach combines several encoder layers into one vector per
token: one layer as it is, the layers concatenated, or ELMo's scalar mix (Peters et al. 2018,
eq. 1: softmax-normalised weights per layer and one scale `gamma`, all learned)."""

import keras
from keras import ops

MIX_MODES = ("single", "concat", "scalar_mix")


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class LayerMix(keras.layers.Layer):
    """[B, T, K, H] (K layers) -> [B, T, H] (single, scalar_mix) or [B, T, K*H] (concat)."""

    def __init__(self, mode, num_layers, **kwargs):
        super().__init__(**kwargs)
        if mode not in MIX_MODES:
            raise ValueError(f"mode={mode!r}: use one of {', '.join(MIX_MODES)}")
        if mode == "single" and num_layers != 1:
            raise ValueError(f"mode='single' mixes one layer, not {num_layers}")
        self.mode = mode
        self.num_layers = num_layers

    def build(self, input_shape):
        if self.mode == "scalar_mix":
            # Zeros: the softmax starts as the plain average, as ELMo's does.
            self.layer_weights = self.add_weight(
                shape=(self.num_layers,), initializer="zeros", name="layer_weights", dtype="float32"
            )
            self.gamma = self.add_weight(shape=(), initializer="ones", name="gamma", dtype="float32")

    def call(self, layers):
        # layers [B, T, K, H]
        if self.mode == "single":
            return layers[:, :, 0, :]
        if self.mode == "concat":
            shape = ops.shape(layers)
            return ops.reshape(layers, (shape[0], shape[1], self.num_layers * layers.shape[-1]))
        mix = ops.cast(ops.softmax(self.layer_weights), layers.dtype)  # [K]
        return ops.cast(self.gamma, layers.dtype) * ops.einsum("btkh,k->bth", layers, mix)

    def compute_output_shape(self, input_shape):
        batch, length, _, hidden = input_shape
        return (batch, length, hidden * self.num_layers if self.mode == "concat" else hidden)

    def get_config(self):
        config = super().get_config()
        config.update(mode=self.mode, num_layers=self.num_layers)
        return config
