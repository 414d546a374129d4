"""`EncoderTask`: the encoder alone, for feature extraction and encoder SavedModels (no objective)."""

from keras_bert_impl.tasks.base import SingleTextMixin, Task
from tfrecord_tools import feature_specs


class EncoderTask(SingleTextMixin, Task):
    """Serves `sequence_output`, `pooled_output` and `embedding_output` for one text."""

    name = "encoder"
    hf_architecture = "BertModel"
    keras_hub_class = "BertBackbone"

    def feature_spec(self, is_training=True):
        return feature_specs.input_spec(self.max_seq_length)

    def build_model(self, encoder=None):
        return self.new_encoder(encoder)

    def numerators(self, model, features, training):
        raise NotImplementedError("the encoder alone has no training objective; train a task built on it")
