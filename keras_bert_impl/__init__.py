"""BERT in Keras 3 on TensorFlow: the library behind the command-line tools.

The packages, in the order data flows through them (each may import only those before it, plus
`errors` and `tfrecord_tools`, the data path):
- `layers`: embeddings, attention, transformer block, pooler, MLM head;
- `models`: `BertConfig`, `BertEncoder` and the task models built on a given encoder;
- `checkpoints`: Google's TF1 checkpoints (the one name table), Hugging Face weights, initialising
  a model from either or from ours;
- `evaluation`: official metrics (GLUE, SQuAD, conlleval) and SQuAD post-processing, in numpy;
- `tasks`: the `Task` contract and one class per kind of problem;
- `training`: the `Trainer`, optimizers and schedules, tf.distribute, input pipelines and the one
  run set-up shared by pretraining and fine-tuning;
- `serving`: SavedModel export (raw text, ids, tf.train.Examples);
- `runners`: one library function per command-line tool (`run_classifier`, `run_pretraining`...).
Nothing here reads absl flags: the command-line shells live in `keras_bert_cli`.

The names below load on first use, so importing one module does not import them all (and the
Bazel targets can list exactly the modules each one needs).
"""

import importlib

_EXPORTS = {
    "BertConfig": "keras_bert_impl.models.bert_config",
    "BertEncoder": "keras_bert_impl.models.bert_encoder",
    "BertConfigError": "keras_bert_impl.errors",
    "CheckpointMismatchError": "keras_bert_impl.errors",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'keras_bert_impl' has no attribute {name!r}")
