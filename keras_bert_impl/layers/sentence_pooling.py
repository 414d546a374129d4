"""`SentencePooling`: one vector per sequence from the token vectors, as sentence-transformers pools."""

import keras
from keras import ops

POOLING_MODES = ("mean", "cls", "max")


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class SentencePooling(keras.layers.Layer):
    """mean: the average over real tokens ([CLS] and [SEP] included, as sentence-transformers);
    cls: the first token; max: the per-dimension maximum over real tokens. `normalize`: then
    divide by the L2 norm. Padding never changes the result."""

    def __init__(self, pooling="mean", normalize=False, **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLING_MODES:
            raise ValueError(f"pooling={pooling!r}: use one of {', '.join(POOLING_MODES)}")
        self.pooling = pooling
        self.normalize = normalize

    def call(self, sequence_output, input_mask):
        # sequence_output [B, T, H], input_mask [B, T]; pooled in float32 whatever the compute dtype.
        sequence = ops.cast(sequence_output, "float32")
        # expand_dims, not [:, :, None]: TFLite has no builtin for a strided slice that adds an axis.
        mask = ops.expand_dims(ops.cast(input_mask, "float32"), -1)  # [B, T, 1]
        if self.pooling == "cls":
            pooled = sequence[:, 0, :]
        elif self.pooling == "max":
            pooled = ops.max(sequence + (mask - 1.0) * 1e9, axis=1)
        else:
            # sentence-transformers clamps the count at 1e-9 (an all-padding row gives zeros).
            pooled = ops.sum(sequence * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1e-9)
        if self.normalize:  # torch.nn.functional.normalize: x / max(||x||, 1e-12)
            pooled = pooled / ops.maximum(ops.sqrt(ops.sum(ops.square(pooled), axis=-1, keepdims=True)), 1e-12)
        return pooled

    def compute_output_shape(self, sequence_output_shape, input_mask_shape):
        return (sequence_output_shape[0], sequence_output_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(pooling=self.pooling, normalize=self.normalize)
        return config
