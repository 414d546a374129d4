"""BERT in Keras 3: encoder, task heads, Google checkpoint compatibility.

The names below load on first use, so importing one module does not import them all (and the
Bazel targets can list exactly the modules each one needs).
"""

import importlib

_EXPORTS = {
    "BertConfig": "keras_bert_impl.bert_config",
    "BertEncoder": "keras_bert_impl.bert_encoder",
    "BertConfigError": "keras_bert_impl.errors",
    "CheckpointMismatchError": "keras_bert_impl.errors",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'keras_bert_impl' has no attribute {name!r}")
