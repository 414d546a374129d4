"""`BertClassifier`: sequence classification (or regression) on the pooled output."""

import keras

from keras_bert_impl.layers.dropout import Dropout
from keras_bert_impl.models.task_model import TaskModel, head_initializer


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertClassifier(TaskModel):
    """logits = Dense(Dropout(pooled_output)), as Google's run_classifier.py; `num_classes=1` is
    the regression head (STS-B)."""

    def __init__(self, encoder, num_classes, dropout_rate=0.1, **kwargs):
        inputs = dict(encoder.input)
        pooled = encoder(inputs)["pooled_output"]
        dropout = Dropout(dropout_rate, name="classifier_dropout")
        classifier = keras.layers.Dense(num_classes, kernel_initializer=head_initializer(encoder), name="classifier")
        outputs = {"logits": classifier(dropout(pooled))}
        kwargs.setdefault("name", "bert_classifier")
        super().__init__(encoder, inputs, outputs, **kwargs)
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate

    def _head_config(self):
        return {"num_classes": self.num_classes, "dropout_rate": self.dropout_rate}
