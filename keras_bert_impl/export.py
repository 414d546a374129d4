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

from tfrecord_tools.bert_text_tokenizer import BertTextTokenizer

MODEL_TYPES = ("encoder", "pretrainer", "classifier", "squad", "ner", "multiple_choice")
PAIR_TYPES = ("pretrainer", "classifier", "squad")


class _Packer:
    """Google's packing in graph ops: truncation as `truncate_pair_from_end`, [CLS]/[SEP].

    Built from flat tensors and index arithmetic on the [B, T] output rather than ragged ops:
    the same ids, a graph of a few hundred nodes instead of ten thousand (at batch 1 the
    per-node cost, not the text, is what a client waits for)."""

    def __init__(self, tokenizer, cls_id, sep_id, max_seq_length, variable_seq_length, max_query_length=None):
        self.tokenizer = tokenizer
        self.cls_id, self.sep_id = cls_id, sep_id
        self.max_seq_length = max_seq_length
        self.variable_seq_length = variable_seq_length
        self.max_query_length = max_query_length

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

    def pack(self, text_a, text_b=None):
        """Returns a dict of [B, T] tensors: the model inputs, tokens and byte offsets."""
        batch = tf.shape(text_a)[0]
        # One tokenizer pass over A and B together: at batch 1 the cost is per op, not per text.
        texts = text_a if text_b is None else tf.concat([text_a, text_b], axis=0)
        ids, rows, begins, ends = self.tokenizer.tokenize_flat_with_offsets(texts)
        count = tf.shape(texts)[0]
        lengths = tf.math.bincount(tf.cast(rows, tf.int32), minlength=count, maxlength=count)
        starts = tf.cumsum(lengths, exclusive=True)  # each text's first token in the flat tensors
        length_a, start_a = lengths[:batch], starts[:batch]
        single_a, _ = self._budgets(length_a, None)
        if text_b is None:
            keep_a, keep_b, start_b, has_b = single_a, tf.zeros_like(length_a), tf.zeros_like(length_a), tf.zeros_like(length_a, tf.bool)
        else:
            length_b, start_b = lengths[batch:], starts[batch:]
            pair_a, pair_b = self._budgets(length_a, length_b)
            has_b = length_b > 0  # as Google's: a B that tokenizes to nothing makes a single sequence
            keep_a, keep_b = tf.where(has_b, pair_a, single_a), tf.where(has_b, pair_b, 0)
        total = keep_a + 2 + tf.where(has_b, keep_b + 1, 0)
        if self.variable_seq_length:
            width = tf.minimum(tf.reduce_max(tf.concat([total, [0]], axis=0)), self.max_seq_length)
        else:
            width = self.max_seq_length
        # Position j of row i: 0 [CLS], 1..ka A, ka+1 [SEP], then (with B) B and a last [SEP].
        j = tf.range(width)[None, :]  # [1, T]
        ka, kb, sa, sb, hb = (x[:, None] for x in (keep_a, keep_b, start_a, start_b, has_b))  # [B, 1]
        in_a = (j >= 1) & (j <= ka)
        in_b = hb & (j >= ka + 2) & (j < ka + 2 + kb)
        last_sep = hb & (j == ka + kb + 2)
        padding = tf.size(ids)  # the index of the pad value appended to each flat tensor
        index = tf.where(in_a, sa + j - 1, tf.where(in_b, sb + j - ka - 2, padding))

        def take(values, pad):
            return tf.gather(tf.concat([values, tf.constant([pad], values.dtype)], axis=0), index)

        input_ids = tf.where(j == 0, self.cls_id, tf.where((j == ka + 1) | last_sep, self.sep_id, tf.cast(take(ids, 0), tf.int32)))
        padded = {
            "input_ids": input_ids,
            "input_mask": tf.cast(j < total[:, None], tf.int32),
            "segment_ids": tf.cast(in_b | last_sep, tf.int32),
            "token_start_offsets": take(begins, -1),  # -1 marks [CLS], [SEP] and padding
            "token_end_offsets": take(ends, -1),
        }
        padded["tokens"] = tf.where(padded["input_mask"] > 0, self.tokenizer.ids_to_tokens(input_ids), "")
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
