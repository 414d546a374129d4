"""`export_saved_model`: a SavedModel that serves raw text, token ids and tf.train.Examples.

Signatures:
- `serving_default`: UTF-8 strings in (`text_a`; `text_b` for pair tasks, the endings [B, C] for
  multiple choice); tokenization (tensorflow-text ops, the same ids as `FullTokenizer`) and
  `[CLS] A [SEP] B [SEP]` packing happen in the graph; out come the model's outputs plus the packed
  `input_ids` / `input_mask` / `segment_ids`, the `tokens` and each token's byte span in its
  text (`token_start_offsets`, `token_end_offsets`; -1 for [CLS], [SEP] and padding).
- `serve_ids`: `input_ids`, `input_mask`, `segment_ids` (int32 [B, T]) in.
- `serve_examples`: serialized tf.train.Example in, with the TFRecord feature names.

Loading needs `import tensorflow_text` (its ops are in the graph) and nothing of ours.
"""

import os
import shutil

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from tfrecord_tools.bert_text_tokenizer import BertTextTokenizer

MODEL_TYPES = ("encoder", "pretrainer", "classifier", "squad", "ner", "multiple_choice")
PAIR_TYPES = ("pretrainer", "classifier", "squad")


class _Packer:
    """Google's packing in graph ops: truncation as `truncate_pair_from_end`, [CLS]/[SEP]."""

    def __init__(self, tokenizer, cls_id, sep_id, max_seq_length, variable_seq_length, max_query_length=None):
        self.tokenizer = tokenizer
        self.cls_id, self.sep_id = cls_id, sep_id
        self.max_seq_length = max_seq_length
        self.variable_seq_length = variable_seq_length
        self.max_query_length = max_query_length

    @staticmethod
    def _keep_first(ragged, lengths):
        return tf.ragged.boolean_mask(ragged, tf.ragged.range(ragged.row_lengths()) < lengths[:, None])

    def _budgets(self, length_a, length_b):
        if length_b is None:
            keep_a = tf.minimum(length_a, self.max_seq_length - 2)
            if self.max_query_length is not None:
                keep_a = tf.minimum(keep_a, self.max_query_length)
            return keep_a, None
        budget = tf.cast(self.max_seq_length - 3, length_a.dtype)
        if self.max_query_length is not None:  # SQuAD: the question first, the context fills the rest
            keep_a = tf.minimum(length_a, self.max_query_length)
            return keep_a, tf.minimum(length_b, budget - keep_a)
        # Popping one token at a time from the longer list (B on a tie) ends here.
        keep_a = tf.minimum(length_a, tf.maximum(budget - length_b, (budget + 1) // 2))
        keep_b = tf.minimum(length_b, tf.maximum(budget - length_a, budget // 2))
        fits = length_a + length_b <= budget
        return tf.where(fits, length_a, keep_a), tf.where(fits, length_b, keep_b)

    def _combine(self, segments, keep, width):
        """Keeps the first `keep` tokens of each segment, adds [CLS]/[SEP], pads to `width`."""
        segments = [tuple(self._keep_first(part, length) for part in segment) for segment, length in zip(segments, keep)]
        ids, segment_ids = tf_text.combine_segments([s[0] for s in segments], self.cls_id, self.sep_id)
        starts, _ = tf_text.combine_segments([s[1] for s in segments], -1, -1)  # -1 marks [CLS] / [SEP]
        ends, _ = tf_text.combine_segments([s[2] for s in segments], -1, -1)
        padded = {}
        for name, ragged, pad in (("input_ids", ids, 0), ("segment_ids", segment_ids, 0), ("input_mask", tf.ones_like(ids), 0),
                                  ("token_start_offsets", starts, -1), ("token_end_offsets", ends, -1)):
            padded[name] = ragged.to_tensor(default_value=tf.cast(pad, ragged.dtype), shape=[None, width])
        return padded

    def pack(self, text_a, text_b=None):
        """Returns a dict of [B, T] tensors: the model inputs, tokens and byte offsets."""
        if text_b is None:
            segments = [self.tokenizer.tokenize_with_offsets(text_a)]
        else:
            # One tokenizer pass over A and B together: at batch 1 the cost is per op, not per text.
            both = self.tokenizer.tokenize_with_offsets(tf.concat([text_a, text_b], axis=0))
            size = tf.shape(text_a)[0]
            segments = [tuple(part[:size] for part in both), tuple(part[size:] for part in both)]
        length_a = segments[0][0].row_lengths()
        if self.variable_seq_length:
            width = tf.cast(tf.reduce_max(tf.reduce_sum([s[0].row_lengths() for s in segments], axis=0)) + 3, tf.int32)
            width = tf.minimum(width, self.max_seq_length)
        else:
            width = self.max_seq_length
        if text_b is None:
            padded = self._combine(segments, self._budgets(length_a, None)[:1], width)
        else:
            length_b = segments[1][0].row_lengths()
            pair = self._combine(segments, self._budgets(length_a, length_b), width)
            empty_b = length_b == 0

            def with_singles():  # as Google's: a B that tokenizes to nothing makes a single sequence
                single = self._combine(segments[:1], self._budgets(length_a, None)[:1], width)
                return {name: tf.where(empty_b[:, None], single[name], pair[name]) for name in pair}

            padded = tf.cond(tf.reduce_any(empty_b), with_singles, lambda: pair)
        for name in ("input_ids", "input_mask", "segment_ids"):
            padded[name] = tf.cast(padded[name], tf.int32)
        padded["tokens"] = tf.where(padded["input_mask"] > 0,
                                    self.tokenizer.ids_to_tokens(tf.cast(padded["input_ids"], tf.int64)), "")
        return padded


def _heads(model_type, model, inputs, label_names, max_seq_length):
    """Model outputs, with probabilities and label names where they apply."""
    if model_type == "pretrainer":
        batch, length = tf.shape(inputs["input_ids"])[0], tf.shape(inputs["input_ids"])[1]
        positions = tf.tile(tf.range(length)[None, :], [batch, 1])
        outputs = model({**inputs, "masked_lm_positions": positions}, training=False)
        return {
            "next_sentence_probabilities": tf.nn.softmax(tf.cast(outputs["next_sentence_logits"], tf.float32)),
            "masked_lm_predictions": tf.argmax(outputs["masked_lm_logits"], axis=-1, output_type=tf.int32),
        }
    outputs = {name: tf.cast(value, tf.float32) for name, value in model(inputs, training=False).items()
               if name != "encoder_outputs"}
    if model_type in ("classifier", "ner", "multiple_choice"):
        logits = outputs["logits"]
        if model_type == "classifier" and logits.shape[-1] == 1:
            return {"predictions": logits[:, 0]}
        outputs["probabilities"] = tf.nn.softmax(logits)
        key = "tag_ids" if model_type == "ner" else "label_ids"
        outputs[key] = tf.argmax(logits, axis=-1, output_type=tf.int32)
        if label_names and model_type != "multiple_choice":
            outputs["tags" if model_type == "ner" else "labels"] = tf.gather(tf.constant(label_names), outputs[key])
    return outputs


def export_saved_model(model, model_type, vocab_file, do_lower_case, max_seq_length, export_dir, label_names=None,
                       variable_seq_length=False, max_query_length=64, num_choices=4, force=False):
    """Writes the SavedModel to `export_dir` (a temporary directory first, renamed when done)."""
    if model_type not in MODEL_TYPES:
        raise ValueError(f"--model_type={model_type}: use one of {', '.join(MODEL_TYPES)}")
    if os.path.exists(export_dir) and not force:
        raise FileExistsError(f"{export_dir}: already exists; pass --force to replace it")
    tokenizer = BertTextTokenizer(vocab_file, do_lower_case=do_lower_case)
    vocab = tokenizer.ids_to_tokens(tf.range(tokenizer.vocab_size)).numpy().tolist()
    cls_id, sep_id = vocab.index(b"[CLS]"), vocab.index(b"[SEP]")
    packer = _Packer(tokenizer, cls_id, sep_id, max_seq_length, variable_seq_length,
                     max_query_length if model_type == "squad" else None)
    label_names = list(label_names) if label_names else None
    ids_spec = tf.TensorSpec([None, None], tf.int32)
    choice_ids_spec = tf.TensorSpec([None, num_choices, None], tf.int32)
    archive = keras.export.ExportArchive()
    archive.track(model)

    if model_type == "multiple_choice":
        def serve_text(text_a, text_b):
            contexts = tf.repeat(text_a, num_choices)
            packed = packer.pack(contexts, tf.reshape(text_b, [-1]))
            inputs = {name: tf.reshape(packed[name], [-1, num_choices, tf.shape(packed[name])[-1]])
                      for name in ("input_ids", "input_mask", "segment_ids")}
            return {**_heads(model_type, model, inputs, label_names, max_seq_length), **inputs}

        text_signature = [tf.TensorSpec([None], tf.string, name="text_a"), tf.TensorSpec([None, num_choices], tf.string, name="text_b")]
    elif model_type in PAIR_TYPES:
        def serve_text(text_a, text_b):
            packed = packer.pack(text_a, text_b)
            inputs = {name: packed[name] for name in ("input_ids", "input_mask", "segment_ids")}
            return {**_heads(model_type, model, inputs, label_names, max_seq_length), **packed}

        text_signature = [tf.TensorSpec([None], tf.string, name="text_a"), tf.TensorSpec([None], tf.string, name="text_b")]
    else:
        def serve_text(text_a):
            packed = packer.pack(text_a)
            inputs = {name: packed[name] for name in ("input_ids", "input_mask", "segment_ids")}
            return {**_heads(model_type, model, inputs, label_names, max_seq_length), **packed}

        text_signature = [tf.TensorSpec([None], tf.string, name="text_a")]

    def serve_ids(input_ids, input_mask, segment_ids):
        inputs = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
        return _heads(model_type, model, inputs, label_names, max_seq_length)

    width = max_seq_length * (num_choices if model_type == "multiple_choice" else 1)

    def serve_examples(examples):
        spec = {name: tf.io.FixedLenFeature([width], tf.int64) for name in ("input_ids", "input_mask", "segment_ids")}
        parsed = tf.io.parse_example(examples, spec)
        shape = [-1, num_choices, max_seq_length] if model_type == "multiple_choice" else [-1, max_seq_length]
        inputs = {name: tf.reshape(tf.cast(value, tf.int32), shape) for name, value in parsed.items()}
        return _heads(model_type, model, inputs, label_names, max_seq_length)

    id_spec = choice_ids_spec if model_type == "multiple_choice" else ids_spec
    archive.add_endpoint("serving_default", serve_text, input_signature=text_signature)
    archive.add_endpoint("serve_ids", serve_ids, input_signature=[
        tf.TensorSpec(id_spec.shape, tf.int32, name=name) for name in ("input_ids", "input_mask", "segment_ids")])
    archive.add_endpoint("serve_examples", serve_examples, input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    temporary = f"{export_dir.rstrip('/')}.tmp-{os.getpid()}"
    shutil.rmtree(temporary, ignore_errors=True)
    try:
        archive.write_out(temporary, verbose=False)
        for extra in (vocab_file,):  # the vocabulary travels with the model (assets)
            shutil.copyfile(extra, os.path.join(temporary, "assets", os.path.basename(extra)))
        if os.path.exists(export_dir):
            shutil.rmtree(export_dir)
        os.replace(temporary, export_dir)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return export_dir


def build_model(model_type, config, num_labels=None, num_choices=4):
    """The model an export of `model_type` serves, built from a `BertConfig`."""
    from keras_bert_impl.bert_encoder import BertEncoder
    from keras_bert_impl.models.bert_classifier import BertClassifier
    from keras_bert_impl.models.bert_multiple_choice import BertMultipleChoice
    from keras_bert_impl.models.bert_pretrainer import BertPretrainer
    from keras_bert_impl.models.bert_span_labeler import BertSpanLabeler
    from keras_bert_impl.models.bert_token_classifier import BertTokenClassifier

    encoder = BertEncoder.from_bert_config(config)
    if model_type in ("classifier", "ner") and not num_labels:
        raise ValueError(f"--model_type={model_type} needs --num_labels or --label_names")
    return {
        "encoder": lambda: encoder,
        "pretrainer": lambda: BertPretrainer(encoder),
        "classifier": lambda: BertClassifier(encoder, num_classes=num_labels),
        "squad": lambda: BertSpanLabeler(encoder),
        "ner": lambda: BertTokenClassifier(encoder, num_classes=num_labels),
        "multiple_choice": lambda: BertMultipleChoice(encoder, num_choices=num_choices),
    }[model_type]()


def build_and_export(bert_config_file, vocab_file, do_lower_case, init_checkpoint, model_type, export_dir,
                     num_labels=None, label_names=None, num_choices=4, max_seq_length=128, max_query_length=64,
                     variable_seq_length=False, force=False, log=print):
    """export_saved_model.py: model from config + checkpoint, then `export_saved_model`."""
    from keras_bert_impl.bert_config import BertConfig
    from keras_bert_impl.init_checkpoint import initialize_from_checkpoint

    config = BertConfig.from_json_file(bert_config_file)
    config.check_max_seq_length(max_seq_length, bert_config_file)
    num_labels = num_labels or (len(label_names) if label_names else None)
    model = build_model(model_type, config, num_labels, num_choices)
    if init_checkpoint:
        log(f"init_checkpoint {init_checkpoint}: " + initialize_from_checkpoint(model, init_checkpoint).summary())
    else:
        log("warning: no --init_checkpoint: exporting randomly initialised weights")
    export_saved_model(model, model_type, vocab_file, do_lower_case, max_seq_length, export_dir, label_names,
                       variable_seq_length, max_query_length, num_choices, force)
    log(f"wrote {export_dir}")
    return export_dir
