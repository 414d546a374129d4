"""`BertEncoder`: the BERT transformer encoder as a Keras 3 functional model."""

import keras

from keras_bert_impl.layers.bert_embeddings import BertEmbeddings
from keras_bert_impl.layers.bert_pooler import BertPooler
from keras_bert_impl.layers.transformer_block import TransformerBlock
from keras_bert_impl.models.bert_config import BertConfig


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertEncoder(keras.Model):
    """Inputs `input_ids`, `input_mask`, `segment_ids` ([B, T] int32); outputs a dict of
    `sequence_output` [B, T, H], `pooled_output` [B, H], `encoder_outputs` (one [B, T, H] per
    layer) and `embedding_output` [B, T, H].

    Functional, so every variable is created at construction with a stable path
    (`transformer_layer_3/self_attention/query/kernel`) that checkpoint conversion maps by name.
    """

    def __init__(
        self,
        vocab_size,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=16,
        initializer_range=0.02,
        **kwargs,
    ):
        # Validates every value with the same messages as a bert_config.json.
        config = BertConfig(
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            num_hidden_layers=num_hidden_layers,
            num_attention_heads=num_attention_heads,
            intermediate_size=intermediate_size,
            hidden_act=hidden_act,
            hidden_dropout_prob=hidden_dropout_prob,
            attention_probs_dropout_prob=attention_probs_dropout_prob,
            max_position_embeddings=max_position_embeddings,
            type_vocab_size=type_vocab_size,
            initializer_range=initializer_range,
        )
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in ("input_ids", "input_mask", "segment_ids")
        }
        embeddings = BertEmbeddings(
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            max_position_embeddings=max_position_embeddings,
            type_vocab_size=type_vocab_size,
            dropout_rate=hidden_dropout_prob,
            initializer_range=initializer_range,
            name="embeddings",
        )
        embedding_output = embeddings(inputs["input_ids"], inputs["segment_ids"])
        hidden = embedding_output
        encoder_outputs = []
        for index in range(num_hidden_layers):
            hidden = TransformerBlock(
                hidden_size=hidden_size,
                num_heads=num_attention_heads,
                intermediate_size=intermediate_size,
                hidden_act=hidden_act,
                hidden_dropout_prob=hidden_dropout_prob,
                attention_probs_dropout_prob=attention_probs_dropout_prob,
                initializer_range=initializer_range,
                name=f"transformer_layer_{index}",
            )(hidden, inputs["input_mask"])
            encoder_outputs.append(hidden)
        pooled_output = BertPooler(hidden_size, initializer_range=initializer_range, name="pooler")(hidden)
        outputs = {
            "sequence_output": hidden,
            "pooled_output": pooled_output,
            "encoder_outputs": encoder_outputs,
            "embedding_output": embedding_output,
        }
        kwargs.setdefault("name", "bert_encoder")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.bert_config = config
        self.embeddings = embeddings

    @classmethod
    def from_bert_config(cls, config, **kwargs):
        """Builds the encoder a `BertConfig` (or `bert_config.json` path) describes."""
        if isinstance(config, str):
            config = BertConfig.from_json_file(config)
        return cls(**config.to_dict(), **kwargs)

    def get_embedding_table(self):
        """The [V, H] word-embedding variable, shared with the masked-LM output layer."""
        return self.embeddings.embedding_table

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, **self.bert_config.to_dict()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
