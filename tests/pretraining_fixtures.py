"""A tiny pretraining set-up shared by the run_pretraining tests: config, vocab, TFRecords; and
the kill -9 then resume harness."""

import os
import signal
import subprocess
import sys
import time

import numpy as np

from tests.conftest import tiny_bert_config
from tfrecord_tools.pretraining_data import PretrainingDataOptions, create_pretraining_data

MAX_SEQ, MAX_PRED = 24, 4


def make_pretraining_setup(root, dropout=0.1, seed=0):
    """Writes ROOT/{vocab.txt, corpus.txt, bert_config.json, train.tfrecord}; returns their paths."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(60)]
    # Documents with structure to learn: each sentence counts up through the words.
    lines = []
    for doc in range(12):
        for _ in range(8):
            start = int(rng.integers(0, 50))
            lines.append(" ".join(words[start : start + int(rng.integers(4, 9))]))
        lines.append("")
    os.makedirs(root, exist_ok=True)
    paths = {
        name: os.path.join(root, name) for name in ("vocab.txt", "corpus.txt", "bert_config.json", "train.tfrecord")
    }
    with open(paths["vocab.txt"], "w") as writer:
        writer.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
    with open(paths["corpus.txt"], "w") as writer:
        writer.write("\n".join(lines) + "\n")
    tiny_bert_config(
        65, max_position_embeddings=32, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout
    ).to_json_file(paths["bert_config.json"])
    add_records(paths, "train.tfrecord", dupe_factor=10, random_seed=seed)
    return paths


def add_records(paths, name, **options):
    """PATHS[name]: one more TFRecord file of the set-up's corpus and vocabulary, made with
    `options` (PretrainingDataOptions fields: other masking, no next-sentence labels, ...)."""
    paths[name] = os.path.join(os.path.dirname(paths["corpus.txt"]), name)
    values = {
        "vocab_file": paths["vocab.txt"],
        "max_seq_length": MAX_SEQ,
        "max_predictions_per_seq": MAX_PRED,
        "random_seed": 0,
        **options,
    }
    create_pretraining_data(
        [paths["corpus.txt"]], [paths[name]], PretrainingDataOptions(**values), log=lambda message: None
    )
    return paths[name]


def pretraining_flags(paths, output_dir, **overrides):
    flags = {
        "bert_config_file": paths["bert_config.json"],
        "input_file": paths["train.tfrecord"],
        "output_dir": output_dir,
        "max_seq_length": MAX_SEQ,
        "max_predictions_per_seq": MAX_PRED,
        "do_train": True,
        "train_batch_size": 8,
        "eval_batch_size": 8,
        "learning_rate": 1e-3,
        "num_train_steps": 20,
        "num_warmup_steps": 2,
        "save_checkpoints_steps": 5,
        "iterations_per_loop": 5,
        "max_eval_steps": 5,
    }
    flags.update(overrides)
    return flags


def as_argv(flags):
    return [f"--{name}={value}" for name, value in flags.items()]


def run_straight(runner, flags, output_dir, env):
    """Runs `runner` with `flags` into `output_dir` uninterrupted; asserts it succeeded, returns the run."""
    command = [sys.executable, runner, *as_argv({**flags, "output_dir": output_dir})]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def kill_9_and_resume(runner, flags, output_dir, env, when="ckpt-15.index"):
    """Runs `runner` with `flags` into `output_dir`, SIGKILLs it once `when` is written there and
    runs the same command again. Returns the newest checkpoint the kill left and the resumed run."""
    import tensorflow as tf

    command = [sys.executable, runner, *as_argv({**flags, "output_dir": output_dir})]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while time.time() < deadline and not os.path.exists(os.path.join(output_dir, when)):
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    last = tf.train.latest_checkpoint(str(output_dir))
    return last, subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def assert_same_checkpoints(expected, actual):
    """Every variable of checkpoint `expected` equals `actual`'s, bit for bit."""
    import tensorflow as tf

    want, got = tf.train.load_checkpoint(str(expected)), tf.train.load_checkpoint(str(actual))
    for name in want.get_variable_to_shape_map():
        assert np.array_equal(want.get_tensor(name), got.get_tensor(name)), name
