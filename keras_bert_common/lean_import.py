"""Leaner imports for the command-line tools' processes, where start-up is paid on every run.

- `import_tensorflow_text_without_keras`: for processes that only tokenize and write records.
  TensorFlow 2.20 imports Keras eagerly (to register its optimizers), and tensorflow-text imports
  its Keras layers; with scikit-learn and matplotlib, which Keras loads when they are installed,
  that is 1.4 s of the 3.6 s import on a 2-core Xeon, paid by every data worker at start-up.
  TensorFlow's public API modules then load on first use (0.8 s of the 2.2 s left), which is
  safe only where one Python thread uses TensorFlow: Python 3.11's lazy modules have no lock.
- `keras_without_extras`: for the tools that build models. Keras imports scikit-learn (its
  sklearn wrappers), pandas (DataFrame inputs) and matplotlib (image galleries) whenever they are
  installed, 1.1-1.3 s of a 4 s start, for features no tool uses.
"""

import importlib.abc
import importlib.util
import os
import sys
import types

_TEXT_KERAS = "tensorflow_text.python.keras"
# What Keras imports at start-up if installed and only uses for features the tools do not have.
KERAS_EXTRAS = ("sklearn", "pandas", "matplotlib")


def import_tensorflow_text_without_keras():
    """Imports tensorflow and tensorflow_text with Keras kept out; a no-op if TensorFlow is already
    imported. Only for a process that never builds a model and uses TensorFlow from one thread (a
    data worker): `tensorflow_text.keras` is then missing, while `import keras`, `tf.keras` and
    every `tf.` module still work later, loaded on first use."""
    if "tensorflow" in sys.modules:
        return
    # A None entry makes `import keras` raise ImportError, which TensorFlow's eager import catches;
    # the empty module stands in for tensorflow-text's layers, which would need tf.keras.
    stand_in = types.ModuleType(_TEXT_KERAS)
    sys.modules["keras"] = None
    sys.modules[_TEXT_KERAS] = stand_in
    lazy_api = _LazyTensorFlowApi()
    sys.meta_path.insert(0, lazy_api)
    try:
        import tensorflow
        import tensorflow_text
    finally:
        sys.meta_path.remove(lazy_api)
        if sys.modules.get("keras", 0) is None:
            del sys.modules["keras"]
        sys.modules.pop(_TEXT_KERAS, None)
    _restore_keras_search_path(sys.modules["tensorflow"])
    # Loaded now, not first in a clean-up: a lazy load cut short by Ctrl-C is never retried.
    tensorflow.io.gfile.exists  # noqa: B018
    # The stand-in must not pass for the real layers if anything asks for them later.
    for module in (tensorflow_text, sys.modules.get("tensorflow_text.python")):
        if getattr(module, "keras", None) is stand_in:
            delattr(module, "keras")


class _WrappingFinder(importlib.abc.MetaPathFinder):
    """Finds the modules it `wants` as the other finders do, and wraps their loaders."""

    def __init__(self):
        self._finding = False

    def wants(self, name):
        raise NotImplementedError

    def wrap(self, loader, name):
        raise NotImplementedError

    def find_spec(self, name, path=None, target=None):
        if self._finding or not self.wants(name):
            return None
        self._finding = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._finding = False
        if spec is not None and spec.loader is not None:
            spec.loader = self.wrap(spec.loader, name)
        return spec


class _LazyTensorFlowApi(_WrappingFinder):
    """Loads TensorFlow's public API modules (`tf.distribute`, `tf.data`, `tf.compat.v1`, ...)
    on first use instead of at import. They only re-export `tensorflow.python`, and importing
    them all runs half of TensorFlow's Python (distribution strategies, autograph, feature
    columns) that a tokenizing process never calls: 0.8 s of a 2.2 s import."""

    _PREFIX = "tensorflow._api.v2."

    def wants(self, name):
        return name.startswith(self._PREFIX)

    def wrap(self, loader, name):
        if not hasattr(loader, "exec_module"):
            return loader
        return importlib.util.LazyLoader(_KeepModule(loader) if ".compat.v1" in name else loader)


class _KeepModule(importlib.abc.Loader):
    """Runs a tf.compat.v1 module and keeps it in sys.modules: it replaces itself there with a
    TFModuleWrapper (deprecation=False, public_apis=None: a plain pass-through), which a lazy load
    refuses."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        sys.modules[module.__name__] = module


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


def keras_without_extras():
    """From now on in this process, Keras imports with KERAS_EXTRAS kept out (its own `try: import`
    leaves those features off); the packages themselves stay importable. A no-op once Keras is
    imported. For a tool's process, not a library user's, whose code may want those features; and
    while Keras imports, another thread's import of those packages fails (no tool has one then)."""
    if "keras" not in sys.modules and not any(isinstance(finder, _KerasWithoutExtras) for finder in sys.meta_path):
        sys.meta_path.insert(0, _KerasWithoutExtras())


class _KerasWithoutExtras(_WrappingFinder):
    """Finds `keras` as the other finders do, with a loader that blocks KERAS_EXTRAS while Keras's
    package runs (and so while every module it imports at start-up runs)."""

    def wants(self, name):
        return name == "keras"

    def wrap(self, loader, name):
        return _BlockingLoader(loader, self)


class _BlockingLoader(importlib.abc.Loader):
    def __init__(self, loader, finder):
        self._loader, self._finder = loader, finder

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        module.__loader__ = module.__spec__.loader = self._loader
        # A None entry makes `import NAME` raise ImportError, which Keras catches.
        blocked = [name for name in KERAS_EXTRAS if name not in sys.modules]
        sys.modules.update(dict.fromkeys(blocked))
        try:
            self._loader.exec_module(module)
        finally:
            for name in blocked:
                if name in sys.modules and sys.modules[name] is None:
                    del sys.modules[name]
