"""tf-models-official's BertEncoder loaded from Google-named weights: the independent reference.

The map below follows Model Garden's own variable layout (documented in
shared/notes/tf-keras-facts.md), not our table, so a mistake in our table cannot cancel out.
"""

import re

import numpy as np


def model_garden_network(config, dropout=0.0, attention_dropout=None, **kwargs):
    """A tf_keras `official.nlp.modeling.networks.BertEncoder` of `config` (its own initial weights),
    with the config's activation spelled Model Garden's way."""
    from official.nlp.modeling import networks  # heavy; only the tests need it

    if config.hidden_act == "gelu_exact":
        kwargs["inner_activation"] = "gelu"  # the string means exact erf GELU in Model Garden
    elif config.hidden_act != "gelu":
        raise ValueError(f"no Model Garden reference for {config.hidden_act}")
    return networks.BertEncoder(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        num_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        inner_dim=config.intermediate_size,
        max_sequence_length=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        output_dropout=dropout,
        attention_dropout=dropout if attention_dropout is None else attention_dropout,
        **kwargs,
    )


def model_garden_encoder(config, google_weights, dropout=0.0):
    """`model_garden_network` with the given weights (dropout 0: deterministic outputs for
    comparisons; the config's rates when it is fine-tuned)."""
    encoder = model_garden_network(config, dropout, dict_outputs=True)
    heads, head_size = config.num_attention_heads, config.hidden_size // config.num_attention_heads
    values = []
    for weight in encoder.weights:
        name = weight.name.split(":")[0]
        values.append(_google_value(name, google_weights, heads, head_size, config.hidden_size))
    encoder.set_weights(values)
    return encoder


def _google_value(name, weights, heads, head_size, hidden):
    fixed = {
        "word_embeddings/embeddings": "bert/embeddings/word_embeddings",
        "position_embedding/embeddings": "bert/embeddings/position_embeddings",
        "type_embeddings/embeddings": "bert/embeddings/token_type_embeddings",
        "embeddings/layer_norm/gamma": "bert/embeddings/LayerNorm/gamma",
        "embeddings/layer_norm/beta": "bert/embeddings/LayerNorm/beta",
        "pooler_transform/kernel": "bert/pooler/dense/kernel",
        "pooler_transform/bias": "bert/pooler/dense/bias",
    }
    if name in fixed:
        return weights[fixed[name]]
    match = re.fullmatch(r"transformer/layer_(\d+)/(.+)", name)
    layer, rest = match.groups()
    prefix = f"bert/encoder/layer_{layer}/"
    qkv = re.fullmatch(r"self_attention/(query|key|value)/(kernel|bias)", rest)
    if qkv:
        value = weights[f"{prefix}attention/self/{qkv.group(1)}/{qkv.group(2)}"]
        return value.reshape((hidden, heads, head_size) if qkv.group(2) == "kernel" else (heads, head_size))
    if rest == "self_attention/attention_output/kernel":
        return weights[prefix + "attention/output/dense/kernel"].reshape(heads, head_size, hidden)
    other = {
        "self_attention/attention_output/bias": "attention/output/dense/bias",
        "self_attention_layer_norm/gamma": "attention/output/LayerNorm/gamma",
        "self_attention_layer_norm/beta": "attention/output/LayerNorm/beta",
        "intermediate/kernel": "intermediate/dense/kernel",
        "intermediate/bias": "intermediate/dense/bias",
        "output/kernel": "output/dense/kernel",
        "output/bias": "output/dense/bias",
        "output_layer_norm/gamma": "output/LayerNorm/gamma",
        "output_layer_norm/beta": "output/LayerNorm/beta",
    }
    return weights[prefix + other[rest]]


def model_garden_outputs(encoder, inputs):
    """Runs the reference with our input names; returns numpy sequence and pooled outputs."""
    outputs = encoder(
        {
            "input_word_ids": np.asarray(inputs["input_ids"], np.int32),
            "input_mask": np.asarray(inputs["input_mask"], np.int32),
            "input_type_ids": np.asarray(inputs["segment_ids"], np.int32),
        },
        training=False,
    )
    return np.asarray(outputs["sequence_output"]), np.asarray(outputs["pooled_output"])


class ModelGardenPretraining:
    """tf-models-official's pretraining as its trainers run it: `BertPretrainerV2` (MLM tied to the
    word embeddings, NSP as a classification head on [CLS]), its `AdamWeightDecay` with warmup and
    linear decay from `official.nlp.optimization` (gradients clipped to global norm 1.0 inside),
    and the whole step (forward, backward, apply_gradients) in one tf.function, `steps_per_loop`
    steps per call as orbit's loops. The peer of our Trainer in the benchmarks."""

    def __init__(
        self,
        config,
        learning_rate=1e-4,
        num_train_steps=10000,
        num_warmup_steps=100,
        jit_compile=False,
        policy="float32",
    ):
        import tensorflow as tf
        import tf_keras
        from official.nlp import optimization
        from official.nlp.modeling import layers, models

        tf_keras.mixed_precision.set_global_policy(policy)
        encoder = model_garden_network(
            config,
            config.hidden_dropout_prob,
            config.attention_probs_dropout_prob,
            initializer=tf_keras.initializers.TruncatedNormal(stddev=config.initializer_range),
        )
        head = layers.ClassificationHead(inner_dim=config.hidden_size, num_classes=2, name="next_sentence")
        self.model = models.BertPretrainerV2(encoder_network=encoder, classification_heads=[head])
        self.optimizer = optimization.create_optimizer(
            learning_rate, num_train_steps, num_warmup_steps, optimizer_type="adamw"
        )
        self._tf, self._keras = tf, tf_keras
        self._step = tf.function(self._step_fn, jit_compile=jit_compile)
        self._loop = tf.function(self._loop_fn)
        self._evaluate = tf.function(self._evaluate_fn)

    @staticmethod
    def inputs(features):
        return {
            "input_word_ids": features["input_ids"],
            "input_mask": features["input_mask"],
            "input_type_ids": features["segment_ids"],
            "masked_lm_positions": features["masked_lm_positions"],
        }

    def _sums(self, features, training):
        tf, keras = self._tf, self._keras
        outputs = self.model(self.inputs(features), training=training)
        mlm_logits = tf.cast(outputs["mlm_logits"], tf.float32)
        nsp_logits = tf.cast(outputs["next_sentence"], tf.float32)
        weights = tf.cast(features["masked_lm_weights"], tf.float32)
        nsp_labels = tf.reshape(features["next_sentence_labels"], [-1])
        mlm = keras.losses.sparse_categorical_crossentropy(features["masked_lm_ids"], mlm_logits, from_logits=True)
        nsp = keras.losses.sparse_categorical_crossentropy(nsp_labels, nsp_logits, from_logits=True)
        mlm_right = tf.cast(
            tf.equal(tf.argmax(mlm_logits, -1, output_type=tf.int32), features["masked_lm_ids"]), tf.float32
        )
        nsp_right = tf.cast(tf.equal(tf.argmax(nsp_logits, -1, output_type=tf.int32), nsp_labels), tf.float32)
        return {
            "masked_lm_loss": tf.reduce_sum(mlm * weights),
            "masked_lm_accuracy": tf.reduce_sum(mlm_right * weights),
            "masked_lm_weight": tf.reduce_sum(weights),
            "next_sentence_loss": tf.reduce_sum(nsp),
            "next_sentence_accuracy": tf.reduce_sum(nsp_right),
            "examples": tf.cast(tf.size(nsp_labels), tf.float32),
        }

    def _step_fn(self, features):
        tf = self._tf
        with tf.GradientTape() as tape:
            sums = self._sums(features, training=True)
            loss = sums["masked_lm_loss"] / sums["masked_lm_weight"] + sums["next_sentence_loss"] / sums["examples"]
        variables = self.model.trainable_variables
        self.optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    def _loop_fn(self, iterator, steps):
        loss = self._tf.constant(0.0)
        for _ in self._tf.range(steps):
            loss = self._step(next(iterator))
        return loss

    def train(self, iterator, steps):
        """`steps` steps in one tf.function call; returns the last step's loss."""
        return float(self._loop(iterator, self._tf.constant(steps)))

    def _evaluate_fn(self, features):
        return self._sums(features, training=False)

    def evaluate(self, dataset):
        """Held-out MLM and NSP loss and accuracy, averaged as our Trainer averages them."""
        totals = {}
        for features in dataset:
            for name, value in self._evaluate(features).items():
                totals[name] = totals.get(name, 0.0) + float(value)
        return {
            "masked_lm_loss": totals["masked_lm_loss"] / totals["masked_lm_weight"],
            "masked_lm_accuracy": totals["masked_lm_accuracy"] / totals["masked_lm_weight"],
            "next_sentence_loss": totals["next_sentence_loss"] / totals["examples"],
            "next_sentence_accuracy": totals["next_sentence_accuracy"] / totals["examples"],
        }
