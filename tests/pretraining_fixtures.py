"""A tiny pretraining set-up shared by the run_pretraining tests: config, vocab, TFRecords."""

import os

import numpy as np

from keras_bert_impl.models.bert_config import BertConfig
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
    BertConfig(
        vocab_size=65,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        max_position_embeddings=32,
        type_vocab_size=2,
    ).to_json_file(paths["bert_config.json"])
    options = PretrainingDataOptions(
        vocab_file=paths["vocab.txt"],
        max_seq_length=MAX_SEQ,
        max_predictions_per_seq=MAX_PRED,
        dupe_factor=10,
        random_seed=seed,
    )
    create_pretraining_data([paths["corpus.txt"]], [paths["train.tfrecord"]], options, log=lambda message: None)
    return paths


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
