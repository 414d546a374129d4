"""`BertFeatureTagger`: the paper's feature-based NER (§5.3, Table 7): frozen encoder layers, a
randomly initialised two-layer BiLSTM and a tag classifier; and `feature_tagger`, the trainable
part alone, which trains on features computed once."""

import keras
from keras import ops

from keras_bert_impl.layers.dropout import Dropout
from keras_bert_impl.layers.layer_mix import LayerMix
from keras_bert_impl.models.task_model import TaskModel, head_initializer


def feature_tagger(num_layers, hidden_size, num_classes, mode, lstm_size, dropout_rate=0.1, initializer=None):
    """The trainable part: {"features" [B, T, K, H], "input_mask" [B, T]} -> {"logits" [B, T, C]}.
    K encoder layers are mixed (`LayerMix`), then two BiLSTM layers of `lstm_size` units each way
    read every WordPiece (padding masked), and a Dense layer tags each piece; the task trains and
    scores only each word's first piece, as the fine-tuned tagger does."""
    features = keras.Input((None, num_layers, hidden_size), name="features")
    input_mask = keras.Input((None,), dtype="int32", name="input_mask")
    mask = ops.not_equal(input_mask, 0)
    hidden = LayerMix(mode, num_layers, name="layer_mix")(features)
    hidden = Dropout(dropout_rate, name="lstm_input_dropout")(hidden)
    for index in range(2):
        lstm = keras.layers.LSTM(lstm_size, return_sequences=True, name=f"lstm_{index}")
        hidden = keras.layers.Bidirectional(lstm, name=f"bilstm_{index}")(hidden, mask=mask)
    hidden = Dropout(dropout_rate, name="lstm_output_dropout")(hidden)
    classifier = keras.layers.Dense(num_classes, kernel_initializer=initializer, name="tag_classifier")
    return keras.Model({"features": features, "input_mask": input_mask}, {"logits": classifier(hidden)}, name="tagger")


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertFeatureTagger(TaskModel):
    """logits [B, T, C] = tagger(layers `layer_indexes` of the frozen encoder, stacked). Index 0 is
    the embedding output, i the output of transformer layer i. `tagger` alone trains on cached
    features; the whole model serves raw text."""

    uses_pooled_output = False

    def __init__(self, encoder, layer_indexes, mode, num_classes, lstm_size, dropout_rate=0.1, **kwargs):
        encoder.trainable = False  # frozen: only the BiLSTM and the classifier learn
        inputs = dict(encoder.input)
        outputs = encoder(inputs, training=False)
        every_layer = [outputs["embedding_output"]] + list(outputs["encoder_outputs"])
        stacked = ops.stack([every_layer[i] for i in layer_indexes], axis=2)  # [B, T, K, H]
        tagger = feature_tagger(
            len(layer_indexes),
            encoder.bert_config.hidden_size,
            num_classes,
            mode,
            lstm_size,
            dropout_rate,
            head_initializer(encoder),
        )
        logits = tagger({"features": ops.cast(stacked, "float32"), "input_mask": inputs["input_mask"]})["logits"]
        kwargs.setdefault("name", "bert_feature_tagger")
        super().__init__(encoder, inputs, {"logits": logits}, **kwargs)
        self.tagger = tagger
        self.layer_indexes = list(layer_indexes)
        self.mode = mode
        self.num_classes = num_classes
        self.lstm_size = lstm_size
        self.dropout_rate = dropout_rate

    def _head_config(self):
        return {
            "layer_indexes": self.layer_indexes,
            "mode": self.mode,
            "num_classes": self.num_classes,
            "lstm_size": self.lstm_size,
            "dropout_rate": self.dropout_rate,
        }
