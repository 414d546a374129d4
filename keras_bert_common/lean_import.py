"""TensorFlow and tensorflow-text without Keras, for processes that only tokenize and write records.

TensorFlow 2.20 imports Keras eagerly (to register its optimizers), and tensorflow-text imports
its Keras layers; with scikit-learn and matplotlib, which Keras loads when they are installed, that
is 1.4 s of the 3.6 s import on a 2-core Xeon, paid by every data worker at start-up.
"""

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
    sys.modules["keras"] = None
    sys.modules[_TEXT_KERAS] = types.ModuleType(_TEXT_KERAS)
    try:
        import tensorflow  # noqa: F401
        import tensorflow_text
    finally:
        if sys.modules.get("keras", 0) is None:
            del sys.modules["keras"]
        sys.modules.pop(_TEXT_KERAS, None)
    # The stand-in must not pass for the real layers if anything asks for them later.
    for module in (tensorflow_text, sys.modules.get("tensorflow_text.python")):
        if module is not None and isinstance(getattr(module, "keras", None), types.ModuleType):
            if not getattr(module.keras, "__file__", None):
                delattr(module, "keras")
