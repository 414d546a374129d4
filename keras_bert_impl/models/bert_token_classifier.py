"""`BertTokenClassifier`: a label per token (NER), on the sequence output."""

import keras

from keras_bert_impl.layers.dropout import Dropout
from keras_bert_impl.models.task_model import TaskModel, head_initializer


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertTokenClassifier(TaskModel):
    """logits [B, T, C] = Dense(Dropout(sequence_output)); the paper labels each word's first
    sub-token and ignores the rest."""

    uses_pooled_output = False

    def __init__(self, encoder, num_classes, dropout_rate=0.1, **kwargs):
        inputs = dict(encoder.input)
        sequence = encoder(inputs)["sequence_output"]
        dropout = Dropout(dropout_rate, name="token_classifier_dropout")
        classifier = keras.layers.Dense(
            num_classes, kernel_initializer=head_initializer(encoder), name="token_classifier"
        )
        outputs = {"logits": classifier(dropout(sequence))}
        kwargs.setdefault("name", "bert_token_classifier")
        super().__init__(encoder, inputs, outputs, **kwargs)
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate

    def _head_config(self):
        return {"num_classes": self.num_classes, "dropout_rate": self.dropout_rate}
