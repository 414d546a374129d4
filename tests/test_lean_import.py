"""Data workers import TensorFlow and tensorflow-text without Keras, and still make the same token ids;
the tools import Keras without the optional packages it loads for features they do not use."""

import subprocess
import sys
import textwrap

# What the subprocess imports, imported here too so that Bazel's runfiles hold it.
from keras_bert_cli import app  # noqa: F401
from keras_bert_common import lean_import  # noqa: F401
from tests.conftest import REPO_ROOT
from tfrecord_tools import pretraining_data  # noqa: F401

CHECK = textwrap.dedent(
    """
    import sys
    from tfrecord_tools.pretraining_data import PretrainingDataOptions, _init_worker, _WORKER

    open("vocab.txt", "w").write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "##s"]) + "\\n")
    _init_worker(PretrainingDataOptions(vocab_file="vocab.txt"), in_pool=True)
    ids, splits = _WORKER["maker"].tokenizer.tokenize_to_flat_ids(["Hellos hello", "x"])
    print("ids", ids.tolist(), splits.tolist())
    print("keras loaded", sorted(m for m in ("keras", "sklearn", "matplotlib") if m in sys.modules))
    print("distribute loaded", "tensorflow.python.distribute.mirrored_strategy" in sys.modules)
    print("resolvers loaded", "tensorflow.python.distribute.cluster_resolver" in sys.modules)
    import tensorflow as tf

    threading = tf.config.threading
    print("threads", threading.get_intra_op_parallelism_threads(), threading.get_inter_op_parallelism_threads())
    lazy = [name for name, module in sys.modules.items() if type(module).__name__ == "_LazyModule"]
    prefix = "tensorflow._api.v2."
    print("gfile lazy", prefix + "io.gfile" in lazy, "distribute lazy", prefix + "distribute" in lazy)
    import tensorflow as tf

    api = tf.distribute.MirroredStrategy, tf.compat.v1.Session, tf.data.Dataset.range(3).cardinality().numpy()
    print("api on use", api[0].__name__, api[1].__name__, api[2])
    import keras
    from tensorflow.keras import layers

    print("keras later", keras.layers.Dense(2)(tf.ones([1, 3])).shape, layers.Dense is keras.layers.Dense)
    print("path", tf.__path__)
    """
)


def _python(code, cwd):
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": REPO_ROOT, "TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr
    return run


def test_pool_worker_imports_no_keras_and_keras_still_imports_later(tmp_path):
    run = _python(CHECK, tmp_path)
    # Google's tokenizer: lower-cased "hellos" is "hello" + "##s"; "x" is not in the vocabulary.
    assert "ids [5, 6, 5, 1] [0, 3, 4]" in run.stdout
    assert "keras loaded []" in run.stdout
    # TensorFlow's API modules load on first use: distribution strategies are not imported by a
    # worker that only tokenizes, and are there when asked for.
    assert "distribute loaded False" in run.stdout
    # Nor tf.config's cluster resolvers (googleapiclient): the worker sets its threads without it.
    assert "resolvers loaded False" in run.stdout
    assert "threads 1 1" in run.stdout
    # ... except tf.io.gfile, which clean-ups use: loaded at once, so a Ctrl-C cannot cut its load.
    assert "gfile lazy False distribute lazy True" in run.stdout
    assert "api on use MirroredStrategy Session 3" in run.stdout
    assert "keras later (1, 2) True" in run.stdout
    # tensorflow.keras resolves through the same search path as after a plain import.
    plain = _python("import tensorflow as tf; print('path', tf.__path__)", tmp_path)
    assert [line for line in run.stdout.splitlines() if line.startswith("path")] == plain.stdout.splitlines()


EXTRAS_CHECK = textwrap.dedent(
    """
    import sys
    from keras_bert_cli import app

    def main(_):
        import keras
        import tensorflow as tf

        print("loaded", sorted(m for m in ("sklearn", "pandas", "matplotlib") if m in sys.modules))
        print("dense", keras.layers.Dense(2)(tf.ones([1, 3])).shape)
        print("loader", type(keras.__spec__.loader).__name__, type(keras.__loader__).__name__)
        import sklearn.base, pandas, matplotlib
        print("later", all(m in sys.modules for m in ("sklearn", "pandas", "matplotlib")))

    app.run(main, "demo_tool")
    """
)


def test_a_tool_imports_keras_without_its_extras_and_they_import_later(tmp_path):
    import importlib.util

    installed = [name for name in ("sklearn", "pandas", "matplotlib") if importlib.util.find_spec(name)]
    if len(installed) < 3:
        import pytest

        pytest.skip(f"needs scikit-learn, pandas and matplotlib installed (found {installed})")
    run = _python(EXTRAS_CHECK, tmp_path)
    assert "loaded []" in run.stdout
    assert "dense (1, 2)" in run.stdout
    assert "loader SourceFileLoader SourceFileLoader" in run.stdout
    assert "later True" in run.stdout
    # A library user's `import keras` (no tool around it) is Keras's own, extras and all.
    plain = _python("import sys, keras; print(all(m in sys.modules for m in ('sklearn', 'pandas')))", tmp_path)
    assert plain.stdout.strip() == "True"
    # A tool run inside an IPython/Jupyter session (%run) leaves that session's Keras whole.
    interactive = _python("import builtins\nbuiltins.__IPYTHON__ = True\n" + EXTRAS_CHECK, tmp_path)
    assert "loaded ['matplotlib', 'pandas', 'sklearn']" in interactive.stdout
