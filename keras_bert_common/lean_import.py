"""TensorFlow and tensorflow-text without Keras, for processes that only tokenize and write records.

TensorFlow 2.20 imports Keras eagerly (to register its optimizers), and tensorflow-text imports
its Keras layers; with scikit-learn and matplotlib, which Keras loads when they are installed, that
is 1.4 s of the 3.6 s import on a 2-core Xeon, paid by every data worker at start-up.
"""

import importlib.util
import os
import sys
import types

_TEXT_KERAS = "tensorflow_text.python.keras"


def import_tensorflow_text_without_keras():
    """Imports tensorflow and tensorflow_text with Keras kept out; a no-op if TensorFlow is already
    imported. Only for a process that never builds a model (a data worker): `tensorflow_text.keras`
    is then missing, while `import keras` and `tf.keras` still work later (lazily, as usual)."""
    if "tensorflow" in sys.modules:
        return
    # A None entry makes `import keras` raise ImportError, which TensorFlow's eager import catches;
    # the empty module stands in for tensorflow-text's layers, which would need tf.keras.
    stand_in = types.ModuleType(_TEXT_KERAS)
    sys.modules["keras"] = None
    sys.modules[_TEXT_KERAS] = stand_in
    try:
        import tensorflow  # noqa: F401
        import tensorflow_text
    finally:
        if sys.modules.get("keras", 0) is None:
            del sys.modules["keras"]
        sys.modules.pop(_TEXT_KERAS, None)
    _restore_keras_search_path(sys.modules["tensorflow"])
    # The stand-in must not pass for the real layers if anything asks for them later.
    for module in (tensorflow_text, sys.modules.get("tensorflow_text.python")):
        if getattr(module, "keras", None) is stand_in:
            delattr(module, "keras")


def _restore_keras_search_path(tensorflow):
    """TensorFlow puts Keras's API directories first on its `__path__` (so `tensorflow.keras`
    imports); blocked, they were None. The same directories, found without importing Keras."""

    def directory(package, *parts):
        spec = importlib.util.find_spec(package)
        return os.path.join(os.path.dirname(spec.origin), *parts) if spec and spec.origin else None

    legacy = os.environ.get("TF_USE_LEGACY_KERAS") in ("true", "True", "1")
    # In TensorFlow's order: the API package it prepended last comes first.
    found = iter([directory("tf_keras" if legacy else "keras", "api", "_v2"), directory("keras", "_tf_keras")])
    path = [entry if entry is not None else next(found, None) for entry in tensorflow.__path__]
    tensorflow.__path__ = [entry for entry in path if entry is not None]
