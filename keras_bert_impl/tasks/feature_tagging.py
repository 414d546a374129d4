"""`FeatureTaggingTask`: the paper's feature-based NER (§5.3, Table 7). The encoder is frozen; its
layers are computed once (`runners.layer_features`) and a two-layer BiLSTM with a tag classifier
trains on them. Served, the whole model tags raw text as the fine-tuned tagger does."""

from keras import ops

from keras_bert_common.errors import UsageError
from keras_bert_impl.models.bert_feature_tagger import BertFeatureTagger
from keras_bert_impl.tasks.base import correct_sum, sparse_cross_entropy_sum
from keras_bert_impl.tasks.tagging import TaggingTask
from tfrecord_tools import feature_specs


def _last_four(num_layers):
    return list(range(max(1, num_layers - 3), num_layers + 1))


# --feature_based: (the encoder outputs it reads, 0 being the embeddings and i transformer layer
# i of L, how it combines them). The paper's rows; its "all 12 layers" are the transformer layers.
FEATURE_LAYERS = {
    "embeddings": (lambda num_layers: [0], "single"),
    "second_to_last": (lambda num_layers: [max(num_layers - 1, 0)], "single"),
    "last": (lambda num_layers: [num_layers], "single"),
    "sum_last_four": (_last_four, "scalar_mix"),
    "concat_last_four": (_last_four, "concat"),
    "weighted_sum_all": (lambda num_layers: list(range(1, num_layers + 1)), "scalar_mix"),
}


class FeatureTaggingTask(TaggingTask):
    """Tags from frozen encoder layers (`feature_based`, a key of FEATURE_LAYERS) through a
    BiLSTM of `lstm_size` units each way (default: the encoder's hidden size, the paper's 768 for
    BERT-base). Trains on batches of cached layers (`layer_features` [B, T, K, H]); its weights
    have no Google or Hugging Face names, so it is exported as a SavedModel only."""

    name = "ner_feature_based"
    google_head_prefixes = ()
    hf_architecture = None
    label_bias = None

    def __init__(
        self, bert_config, max_seq_length=128, label_names=None, feature_based="concat_last_four", lstm_size=None
    ):
        self.check_options(feature_based, lstm_size)
        super().__init__(bert_config, max_seq_length, label_names)
        self.feature_based = feature_based
        self.lstm_size = lstm_size or bert_config.hidden_size
        select, self.mode = FEATURE_LAYERS[feature_based]
        self.layer_indexes = select(bert_config.num_hidden_layers)

    @staticmethod
    def check_options(feature_based, lstm_size=None):
        """--feature_based and --lstm_size, checked before any data is read or model built."""
        if feature_based not in FEATURE_LAYERS:
            raise UsageError(f"--feature_based={feature_based}: use one of {', '.join(FEATURE_LAYERS)}")
        if lstm_size is not None and lstm_size < 1:
            raise UsageError(f"--lstm_size={lstm_size}: must be at least 1")

    def feature_spec(self, is_training=True):
        return feature_specs.layer_features_spec(self.max_seq_length)

    def serving_example_spec(self):
        # Served from token ids (the whole model), not from cached layers.
        return feature_specs.input_spec(self.max_seq_length)

    def build_model(self, encoder=None):
        return BertFeatureTagger(
            self.new_encoder(encoder),
            self.layer_indexes,
            self.mode,
            len(self.label_names),
            self.lstm_size,
            self.bert_config.hidden_dropout_prob,
        )

    def numerators(self, model, features, training):
        # Only the tagger runs: the encoder's part is in the cached `layer_features`.
        inputs = {"features": features["layer_features"], "input_mask": features["input_mask"]}
        logits = ops.cast(model.tagger(inputs, training=training)["logits"], "float32")
        weights = ops.cast(features["label_weights"], "float32")
        return {
            "loss_sum": sparse_cross_entropy_sum(features["label_ids"], logits, weights),
            "accuracy": correct_sum(features["label_ids"], logits, weights),
        }
