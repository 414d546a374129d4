"""Every command-line tool on every class of bad input: a non-zero exit, no Python traceback, a last
line naming the file (or flag) at fault, and nothing new left in the output location.

The cases run three at a time in one module fixture, each a fork of one process that imported
TensorFlow once (tests/tool_forker.py: a fresh interpreter per case cost five seconds of imports each).
Classes: missing file, unreadable (a directory where a file belongs), non-writable output (a
read-only tmpfs where the test can mount one, else a path under a file), malformed JSON / TSV /
CoNLL / CSV / corpus / vocab / config, empty input, mismatched vocab / config / checkpoint / data,
records whose length differs from the flags, an existing output, and disk full (a 256 KB tmpfs).
"""

import json
import os
import subprocess
import sys
import types

import pytest

from keras_bert_impl.checkpoints.google_checkpoint import save_google_checkpoint
from keras_bert_impl.models.bert_config import BertConfig
from keras_bert_impl.models.bert_encoder import BertEncoder
from tests.conftest import REPO_ROOT, tiny_bert_config, tool_commands
from tests.finetuning_fixtures import VOCAB
from tests.pretraining_fixtures import MAX_PRED, MAX_SEQ, make_pretraining_setup

TOOLS = tool_commands()


def _mount_tmpfs(path, options):
    os.makedirs(path, exist_ok=True)
    run = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    return run.returncode == 0


class World:
    """The files the cases use: good ones, and one bad one of each kind."""

    def __init__(self, root):
        self.root = root
        good = root / "good"
        good.mkdir()
        (good / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
        config = tiny_bert_config(len(VOCAB))
        config.to_json_file(str(good / "bert_config.json"))
        save_google_checkpoint(BertEncoder.from_bert_config(config), str(good / "bert_model.ckpt"))
        self.good = good
        # A config and checkpoint of another size (hidden 16, 3 layers).
        other = root / "other"
        other.mkdir()
        small = BertConfig(
            vocab_size=len(VOCAB),
            hidden_size=16,
            num_hidden_layers=3,
            num_attention_heads=4,
            intermediate_size=20,
            max_position_embeddings=64,
            type_vocab_size=2,
        )
        small.to_json_file(str(other / "bert_config.json"))
        save_google_checkpoint(BertEncoder.from_bert_config(small), str(other / "bert_model.ckpt"))
        self.other = other
        bad = root / "bad"
        bad.mkdir()
        (bad / "not_json.json").write_text("{ this is not json")
        (bad / "unknown_key_config.json").write_text(json.dumps({"vocab_size": 34, "hiden_size": 32}))
        (bad / "short_vocab.txt").write_text("\n".join(VOCAB[:-4]) + "\n")
        (bad / "vocab_without_mask.txt").write_text("\n".join(v for v in VOCAB if v != "[MASK]") + "\n")
        (bad / "empty.txt").write_text("")
        (bad / "a_directory").mkdir()
        (bad / "not_a_tfrecord.tfrecord").write_text("plain text, not records\n")
        (bad / "squad_not_squad.json").write_text(json.dumps({"version": "v2.0", "articles": []}))
        # TSV with no usable row (every label unknown), CoNLL with only bad tags, SWAG without its header.
        tsv = bad / "tsv"
        tsv.mkdir()
        rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"] + [f"7\t{i}\t{i}\tthe cat\tthe dog" for i in range(20)]
        for split in ("train", "dev", "test"):
            (tsv / f"{split}.tsv").write_text("\n".join(rows) + "\n")
        conll = bad / "conll"
        conll.mkdir()
        for name in ("eng.train", "eng.testa", "eng.testb"):
            (conll / name).write_text("eu NN O B-WRONG\nsat NN O O\n\n")
        swag = bad / "swag"
        swag.mkdir()
        for name in ("train.csv", "val.csv"):
            (swag / name).write_text("a,b,c\n1,2,3\n")
        self.bad = bad
        # A token twice (the list keeps its length, so the size checks pass).
        (bad / "vocab_duplicate.txt").write_text("\n".join(VOCAB[:-1] + [VOCAB[-2]]) + "\n")
        # The model's tokens with two swapped (the same size: only the row check can tell).
        swapped = VOCAB[:5] + [VOCAB[6], VOCAB[5]] + VOCAB[7:]
        (bad / "vocab_swapped.txt").write_text("\n".join(swapped) + "\n")
        # Pretraining records at seq 24 and an MRPC-format set.
        self.pretraining = make_pretraining_setup(str(root / "pretraining"))
        # A config whose vocabulary is smaller than the token ids in those records.
        small_vocab = json.loads(open(self.pretraining["bert_config.json"]).read())
        (bad / "config_vocab_10.json").write_text(json.dumps({**small_vocab, "vocab_size": 10}))
        mrpc = root / "mrpc"
        mrpc.mkdir()
        rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"] + [
            f"{i % 2}\t{i}\t{i}\tthe movie was good\tthe film is bad" for i in range(8)
        ]
        for split in ("train", "dev", "test"):
            (mrpc / f"{split}.tsv").write_text("\n".join(rows) + "\n")
        self.mrpc = mrpc
        (root / "text.txt").write_text("the cat sat on the mat\n\nthe dog ran far away\n")
        self.squad = root / "squad.json"
        qas = [
            {"id": "q1", "question": "where ?", "answers": [{"text": "mat", "answer_start": 19}]},
            {"id": "q2", "question": "who ?", "answers": [], "is_impossible": True},
        ]
        self.squad.write_text(
            json.dumps({"data": [{"paragraphs": [{"context": "the cat sat on the mat", "qas": qas}]}]})
        )
        (root / "predictions.json").write_text(json.dumps({"q1": "mat", "q2": ""}))
        (root / "other_predictions.json").write_text(json.dumps({"x9": "mat"}))
        # An existing SavedModel-like directory, which must not be replaced without --force.
        (root / "existing_export").mkdir()
        (root / "existing_export" / "saved_model.pb").write_text("keep me")
        self.read_only = root / "read_only"
        if _mount_tmpfs(self.read_only, "ro,size=64k"):
            self.unwritable = self.read_only / "out"
        else:  # no mount here: a path below a file cannot be created either
            self.unwritable = root / "text.txt" / "out"
        # A fine-tuned classifier's checkpoint (ours, object-based), a run directory of task MRPC,
        # truncated records, and Hugging Face directories good and bad.
        import numpy as np
        import tensorflow as tf
        from safetensors.numpy import save_file

        from keras_bert_impl.models.bert_classifier import BertClassifier

        classifier = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)
        self.classifier_run = tf.train.Checkpoint(model=classifier).save(str(root / "classifier_run" / "ckpt"))
        self.mrpc_run = root / "mrpc_run"
        self.mrpc_run.mkdir()
        (self.mrpc_run / "meta.json").write_text(json.dumps({"task_name": "MRPC", "model_type": "classifier"}))
        records = open(self.pretraining["train.tfrecord"], "rb").read()
        self.truncated = root / "truncated.tfrecord"
        self.truncated.write_bytes(records[: len(records) * 2 // 3])
        # What `kill -9` of a sharded writer leaves: a finished shard and another's temporary.
        self.leftovers = root / "leftovers"
        self.leftovers.mkdir()
        (self.leftovers / "train-00000-of-00002").write_bytes(records)
        (self.leftovers / "train-00001-of-00002.tmp-99999999").write_bytes(records[:100])
        # MRPC data tokenized with a 30-token vocabulary (the model's has 34).
        from tfrecord_tools.classification_data import ClassificationProcessor
        from tfrecord_tools.finetuning_data import write_classification_data
        from tfrecord_tools.tokenization import FullTokenizer

        self.mrpc_other_vocab = root / "mrpc_other_vocab"
        write_classification_data(
            ClassificationProcessor.for_task("MRPC", str(mrpc)),
            "MRPC",
            ["train", "dev"],
            FullTokenizer(str(bad / "short_vocab.txt")),
            16,
            str(self.mrpc_other_vocab),
        )
        self.conll = root / "conll"
        self.conll.mkdir()
        for name in ("eng.train", "eng.testa"):
            (self.conll / name).write_text("the NN O O\ncat NN O O\n\n")
        rng = np.random.default_rng(0)
        hf = {
            "embeddings.word_embeddings.weight": (len(VOCAB), 32),
            "embeddings.position_embeddings.weight": (64, 32),
            "embeddings.token_type_embeddings.weight": (2, 32),
            "embeddings.LayerNorm.weight": (32,),
            "embeddings.LayerNorm.bias": (32,),
        }
        for layer in range(2):
            for part, shape in (
                ("attention.self.query", (32, 32)),
                ("attention.self.key", (32, 32)),
                ("attention.self.value", (32, 32)),
                ("attention.output.dense", (32, 32)),
                ("intermediate.dense", (37, 32)),
                ("output.dense", (32, 37)),
            ):
                hf[f"encoder.layer.{layer}.{part}.weight"] = shape
                hf[f"encoder.layer.{layer}.{part}.bias"] = shape[:1]
            for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
                hf[f"encoder.layer.{layer}.{norm}.weight"] = hf[f"encoder.layer.{layer}.{norm}.bias"] = (32,)
        hf["pooler.dense.weight"], hf["pooler.dense.bias"] = (32, 32), (32,)
        hf_config = {
            "model_type": "bert",
            "architectures": ["BertModel"],
            "vocab_size": len(VOCAB),
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "intermediate_size": 37,
            "max_position_embeddings": 64,
            "type_vocab_size": 2,
            "hidden_act": "gelu",
        }
        for name, config_changes, cut in (
            ("hf", {}, False),
            ("hf_wrong_config", {"num_hidden_layers": 3}, False),
            ("hf_truncated", {}, True),
        ):
            directory = root / name
            directory.mkdir()
            save_file(
                {key: rng.normal(size=shape).astype(np.float32) for key, shape in hf.items()},
                str(directory / "model.safetensors"),
            )
            if cut:
                data = (directory / "model.safetensors").read_bytes()
                (directory / "model.safetensors").write_bytes(data[: len(data) // 2])
            (directory / "config.json").write_text(json.dumps({**hf_config, **config_changes}))
            (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
        self.hf_dir, self.hf_wrong_config, self.hf_truncated = (
            root / "hf",
            root / "hf_wrong_config",
            root / "hf_truncated",
        )
        self.full = root / "full"
        self.has_full_disk = _mount_tmpfs(self.full, "size=256k")

    def unmount(self):
        for path in (self.read_only, self.full):
            subprocess.run(["umount", str(path)], capture_output=True)


def _model_flags(world, config=None, vocab=None, checkpoint=None):
    return [
        f"--bert_config_file={config or world.good / 'bert_config.json'}",
        f"--vocab_file={vocab or world.good / 'vocab.txt'}",
        f"--init_checkpoint={checkpoint or world.good / 'bert_model.ckpt'}",
    ]


def _pretraining_args(pretraining, out, *extra, config=None):
    """run_pretraining on the good records at their lengths into OUT/p, plus `extra` flags."""
    return [
        f"--bert_config_file={config or pretraining['bert_config.json']}",
        f"--input_file={pretraining['train.tfrecord']}",
        f"--output_dir={out}/p",
        "--do_train",
        f"--max_seq_length={MAX_SEQ}",
        f"--max_predictions_per_seq={MAX_PRED}",
        *extra,
    ]


def _cases(world, out):
    """(case id, tool, arguments, what the last line must name, output location to keep clean)."""
    good, bad = world.good, world.bad
    pretraining = world.pretraining
    train_flags = ["--do_train", "--max_seq_length=16", "--num_train_epochs=1", "--train_batch_size=4"]
    return [
        # build_vocab
        (
            "vocab-missing-input",
            "build_vocab",
            [f"--input_file={bad}/nope.txt", f"--output_file={out}/v.txt"],
            "nope.txt",
            out,
        ),
        (
            "vocab-empty-input",
            "build_vocab",
            [f"--input_file={bad}/empty.txt", f"--output_file={out}/v.txt"],
            "empty.txt",
            out,
        ),
        (
            "vocab-unwritable",
            "build_vocab",
            [f"--input_file={world.root}/text.txt", f"--output_file={world.unwritable}/v.txt"],
            "--output_file",
            out,
        ),
        (
            "vocab-output-is-dir",
            "build_vocab",
            [f"--input_file={world.root}/text.txt", f"--output_file={bad}/a_directory"],
            "a_directory",
            out,
        ),
        # build_vocab --base_vocab: extending a vocabulary that is not the model's
        (
            "vocab-extend-rows-differ",
            "build_vocab",
            [
                f"--base_vocab={bad}/vocab_swapped.txt",
                f"--input_file={world.root}/text.txt",
                "--num_new_tokens=3",
                f"--init_checkpoint={good}/bert_model.ckpt",
                f"--bert_config_file={good}/bert_config.json",
                f"--output_dir={out}/extended",
            ],
            "vocab_swapped.txt",
            out,
        ),
        (
            "vocab-extend-size-differs",
            "build_vocab",
            [
                f"--base_vocab={bad}/short_vocab.txt",
                f"--input_file={world.root}/text.txt",
                "--num_new_tokens=3",
                f"--init_checkpoint={good}/bert_model.ckpt",
                f"--bert_config_file={good}/bert_config.json",
                f"--output_dir={out}/extended",
            ],
            "short_vocab.txt",
            out,
        ),
        # create_pretraining_data
        (
            "pretrain-data-missing-vocab",
            "create_pretraining_data",
            [f"--input_file={world.root}/text.txt", f"--output_file={out}/p.tfrecord", f"--vocab_file={bad}/nope.txt"],
            "nope.txt",
            out,
        ),
        (
            "pretrain-data-vocab-is-dir",
            "create_pretraining_data",
            [
                f"--input_file={world.root}/text.txt",
                f"--output_file={out}/p.tfrecord",
                f"--vocab_file={bad}/a_directory",
            ],
            "a_directory",
            out,
        ),
        (
            "pretrain-data-vocab-without-mask",
            "create_pretraining_data",
            [
                f"--input_file={world.root}/text.txt",
                f"--output_file={out}/p.tfrecord",
                f"--vocab_file={bad}/vocab_without_mask.txt",
            ],
            "vocab_without_mask.txt",
            out,
        ),
        (
            "pretrain-data-empty-corpus",
            "create_pretraining_data",
            [f"--input_file={bad}/empty.txt", f"--output_file={out}/p.tfrecord", f"--vocab_file={good}/vocab.txt"],
            "empty.txt",
            out,
        ),
        (
            "pretrain-data-unwritable",
            "create_pretraining_data",
            [
                f"--input_file={world.root}/text.txt",
                f"--output_file={world.unwritable}/p.tfrecord",
                f"--vocab_file={good}/vocab.txt",
            ],
            "--output_file",
            out,
        ),
        # create_finetuning_data
        (
            "finetune-data-missing-tsv",
            "create_finetuning_data",
            [
                "--task_name=MRPC",
                f"--data_dir={bad}/a_directory",
                f"--vocab_file={good}/vocab.txt",
                f"--output_dir={out}/d",
            ],
            "train.tsv",
            out,
        ),
        (
            "finetune-data-no-usable-rows",
            "create_finetuning_data",
            ["--task_name=MRPC", f"--data_dir={bad}/tsv", f"--vocab_file={good}/vocab.txt", f"--output_dir={out}/d"],
            "train.tsv",
            out,
        ),
        # issue 32: a careful user's trial
        (
            "pretrain-only-unfinished-files",
            "run_pretraining",
            [
                *_pretraining_args(pretraining, out)[:1],
                f"--input_file={world.leftovers}/*.tmp-*",
                f"--output_dir={out}/p",
            ]
            + _pretraining_args(pretraining, out)[3:],
            "matches only unfinished files an interrupted writer left",
            out,
        ),
        (
            "pretrain-input-is-dir",
            "run_pretraining",
            [*_pretraining_args(pretraining, out)[:1], f"--input_file={world.leftovers}", f"--output_dir={out}/p"]
            + _pretraining_args(pretraining, out)[3:],
            f"{world.leftovers}: is a directory; pass a glob such as {world.leftovers}/*.tfrecord",
            out,
        ),
        (
            "squad-v2-file-without-flag",
            "run_squad",
            [
                *_model_flags(world),
                f"--train_file={world.squad}",
                "--do_train",
                "--max_seq_length=24",
                "--max_query_length=8",
                f"--output_dir={out}/s",
            ],
            'a SQuAD 2.0 file (question q2 is marked "is_impossible": true); pass --version_2_with_negative',
            out,
        ),
        (
            "classifier-data-of-another-vocab",
            "run_classifier",
            [
                *_model_flags(world),
                "--task_name=MRPC",
                f"--data_dir={world.mrpc_other_vocab}",
                "--do_eval",
                "--max_seq_length=16",
                f"--output_dir={out}/c",
            ],
            f"tokenized with another vocabulary (30 tokens) than {good}/vocab.txt (34 tokens)",
            out,
        ),
        (
            "vocab-size-below-reserved-tokens",
            "build_vocab",
            [f"--input_file={world.root}/text.txt", f"--output_file={out}/v.txt", "--vocab_size=3"],
            "--vocab_size=3: not even the 5 reserved tokens fit",
            out,
        ),
        (
            "classifier-unknown-flag",
            "run_classifier",
            ["--task_name=MRPC", f"--data_dir={world.mrpc}", "--bogus_flag=1", f"--output_dir={out}/c"],
            "Unknown command line flag 'bogus_flag'",
            out,
        ),
        (
            "classifier-data-dir-is-a-file",
            "run_classifier",
            [
                *_model_flags(world),
                "--task_name=MRPC",
                f"--data_dir={world.mrpc}/train.tsv",
                "--do_train",
                f"--output_dir={out}/c",
            ],
            f"is a file; pass the directory that holds it: --data_dir={world.mrpc}",
            out,
        ),
        (
            "finetune-data-squad-malformed",
            "create_finetuning_data",
            [
                "--task_name=squad",
                "--max_query_length=16",
                f"--train_file={bad}/not_json.json",
                f"--vocab_file={good}/vocab.txt",
                f"--output_dir={out}/d",
            ],
            "not_json.json",
            out,
        ),
        (
            "finetune-data-squad-wrong-shape",
            "create_finetuning_data",
            [
                "--task_name=squad",
                "--max_query_length=16",
                f"--train_file={bad}/squad_not_squad.json",
                f"--vocab_file={good}/vocab.txt",
                f"--output_dir={out}/d",
            ],
            "squad_not_squad.json",
            out,
        ),
        (
            "finetune-data-conll-all-bad",
            "create_finetuning_data",
            ["--task_name=conll", f"--data_dir={bad}/conll", f"--vocab_file={good}/vocab.txt", f"--output_dir={out}/d"],
            "eng.train",
            out,
        ),
        (
            "finetune-data-swag-no-header",
            "create_finetuning_data",
            ["--task_name=swag", f"--data_dir={bad}/swag", f"--vocab_file={good}/vocab.txt", f"--output_dir={out}/d"],
            "train.csv",
            out,
        ),
        (
            "finetune-data-unwritable",
            "create_finetuning_data",
            [
                "--task_name=MRPC",
                f"--data_dir={world.mrpc}",
                f"--vocab_file={good}/vocab.txt",
                f"--output_dir={world.unwritable}",
            ],
            "--output_dir",
            out,
        ),
        # run_pretraining
        (
            "pretrain-missing-config",
            "run_pretraining",
            [
                f"--bert_config_file={bad}/nope.json",
                f"--input_file={pretraining['train.tfrecord']}",
                f"--output_dir={out}/p",
                "--do_train",
            ],
            "nope.json",
            out,
        ),
        (
            "pretrain-config-not-json",
            "run_pretraining",
            [
                f"--bert_config_file={bad}/not_json.json",
                f"--input_file={pretraining['train.tfrecord']}",
                f"--output_dir={out}/p",
                "--do_train",
            ],
            "not_json.json",
            out,
        ),
        (
            "pretrain-config-unknown-key",
            "run_pretraining",
            [
                f"--bert_config_file={bad}/unknown_key_config.json",
                f"--input_file={pretraining['train.tfrecord']}",
                f"--output_dir={out}/p",
                "--do_train",
            ],
            "unknown_key_config.json",
            out,
        ),
        (
            "pretrain-records-length",
            "run_pretraining",
            [
                f"--bert_config_file={pretraining['bert_config.json']}",
                f"--input_file={pretraining['train.tfrecord']}",
                f"--output_dir={out}/p",
                "--do_train",
                "--max_seq_length=32",
                f"--max_predictions_per_seq={MAX_PRED}",
            ],
            f"--max_seq_length={MAX_SEQ}",
            out,
        ),
        (
            "pretrain-not-records",
            "run_pretraining",
            [
                f"--bert_config_file={pretraining['bert_config.json']}",
                f"--input_file={bad}/not_a_tfrecord.tfrecord",
                f"--output_dir={out}/p",
                "--do_train",
                f"--max_seq_length={MAX_SEQ}",
            ],
            "not_a_tfrecord.tfrecord",
            out,
        ),
        (
            "pretrain-checkpoint-mismatch",
            "run_pretraining",
            _pretraining_args(pretraining, out, f"--init_checkpoint={world.other}/bert_model.ckpt"),
            "bert_model.ckpt",
            out,
        ),
        (
            "pretrain-eval-random-weights",
            "run_pretraining",
            [
                "--master=",  # Google's flag, accepted
                f"--bert_config_file={pretraining['bert_config.json']}",
                f"--input_file={pretraining['train.tfrecord']}",
                f"--output_dir={out}/p",
                "--do_eval",
                f"--max_seq_length={MAX_SEQ}",
                f"--max_predictions_per_seq={MAX_PRED}",
            ],
            "--allow_random_weights",
            out,
        ),
        (
            "pretrain-unwritable",
            "run_pretraining",
            [
                f"--bert_config_file={pretraining['bert_config.json']}",
                f"--input_file={pretraining['train.tfrecord']}",
                f"--output_dir={world.unwritable}",
                "--do_train",
                f"--max_seq_length={MAX_SEQ}",
                f"--max_predictions_per_seq={MAX_PRED}",
            ],
            "--output_dir",
            out,
        ),
        # run_classifier
        (
            "classifier-missing-vocab",
            "run_classifier",
            [
                "--task_name=MRPC",
                f"--data_dir={world.mrpc}",
                f"--output_dir={out}/c",
                *train_flags,
                *_model_flags(world, vocab=bad / "nope.txt"),
            ],
            "nope.txt",
            out,
        ),
        (
            "classifier-vocab-config-mismatch",
            "run_classifier",
            [
                "--task_name=MRPC",
                f"--data_dir={world.mrpc}",
                f"--output_dir={out}/c",
                *train_flags,
                *_model_flags(world, vocab=bad / "short_vocab.txt"),
            ],
            "short_vocab.txt",
            out,
        ),
        (
            "classifier-checkpoint-mismatch",
            "run_classifier",
            [
                "--task_name=MRPC",
                f"--data_dir={world.mrpc}",
                f"--output_dir={out}/c",
                *train_flags,
                *_model_flags(world, checkpoint=world.other / "bert_model.ckpt"),
            ],
            "bert_model.ckpt",
            out,
        ),
        (
            "classifier-no-usable-rows",
            "run_classifier",
            ["--task_name=MRPC", f"--data_dir={bad}/tsv", f"--output_dir={out}/c", *train_flags, *_model_flags(world)],
            "train.tsv",
            out,
        ),
        (
            "classifier-missing-tsv",
            "run_classifier",
            [
                "--task_name=MRPC",
                f"--data_dir={bad}/a_directory",
                f"--output_dir={out}/c",
                *train_flags,
                *_model_flags(world),
            ],
            "train.tsv",
            out,
        ),
        (
            "classifier-export-exists",
            "run_classifier",
            [
                "--task_name=MRPC",
                f"--data_dir={world.mrpc}",
                f"--output_dir={out}/c",
                *train_flags,
                *_model_flags(world),
                f"--export_dir={world.root}/existing_export",
            ],
            "existing_export",
            out,
        ),
        (
            # A metric the task never reports: refused before the data is written or a step runs.
            "classifier-keep-best-typo",
            "run_classifier",
            [
                "--task_name=MRPC",
                f"--data_dir={world.mrpc}",
                f"--output_dir={out}/c",
                *train_flags,
                "--do_eval",
                "--eval_every_n_steps=1",
                "--keep_best_checkpoint=eval_acc",
                *_model_flags(world),
            ],
            "--keep_best_checkpoint",
            out,
        ),
        (
            "squad-keep-best-typo",
            "run_squad",
            [
                f"--train_file={world.squad}",
                f"--predict_file={world.squad}",
                f"--output_dir={out}/s",
                "--do_train",
                "--do_predict",
                "--max_seq_length=32",
                "--max_query_length=8",
                "--eval_every_n_steps=1",
                "--keep_best_checkpoint=exact",  # a v2.0 key; v1.1 reports exact_match
                *_model_flags(world),
            ],
            "--keep_best_checkpoint",
            out,
        ),
        (
            "classifier-eval-random-weights",
            "run_classifier",
            [
                "--master=",  # Google's flag, accepted
                "--task_name=MRPC",
                f"--data_dir={world.mrpc}",
                f"--output_dir={out}/c",
                "--do_eval",
                "--max_seq_length=16",
                f"--bert_config_file={good}/bert_config.json",
                f"--vocab_file={good}/vocab.txt",
            ],
            "--allow_random_weights",
            out,
        ),
        (
            "classifier-unwritable",
            "run_classifier",
            [
                "--task_name=MRPC",
                f"--data_dir={world.mrpc}",
                f"--output_dir={world.unwritable}",
                *train_flags,
                *_model_flags(world),
            ],
            "--output_dir",
            out,
        ),
        (
            "classifier-seq-too-long",
            "run_classifier",
            [
                "--task_name=MRPC",
                f"--data_dir={world.mrpc}",
                f"--output_dir={out}/c",
                "--do_train",
                "--max_seq_length=100",
                *_model_flags(world),
            ],
            "bert_config.json",
            out,
        ),
        # run_squad, run_ner, run_swag
        (
            "squad-malformed-json",
            "run_squad",
            [
                f"--train_file={bad}/not_json.json",
                f"--output_dir={out}/s",
                "--do_train",
                "--max_seq_length=32",
                "--max_query_length=8",
                *_model_flags(world),
            ],
            "not_json.json",
            out,
        ),
        (
            "squad-do-eval-rejected",
            "run_squad",
            [
                "--master=",  # Google's flag, accepted
                f"--predict_file={bad}/not_json.json",
                f"--output_dir={out}/s",
                "--do_eval",
                "--max_seq_length=32",
                *_model_flags(world),
            ],
            "--do_eval",
            out,
        ),
        (
            "ner-all-sentences-bad",
            "run_ner",
            [
                f"--data_dir={bad}/conll",
                f"--output_dir={out}/n",
                "--do_train",
                "--max_seq_length=16",
                *_model_flags(world),
            ],
            "eng.train",
            out,
        ),
        (
            "ner-unknown-feature-layers",
            "run_ner",
            [
                f"--data_dir={bad}/conll",  # refused before the data is read
                f"--output_dir={out}/n",
                "--do_train",
                "--max_seq_length=16",
                "--feature_based=third_to_last",
                *_model_flags(world),
            ],
            "--feature_based=third_to_last",
            out,
        ),
        (
            "swag-no-header",
            "run_swag",
            [
                f"--data_dir={bad}/swag",
                f"--output_dir={out}/w",
                "--do_train",
                "--max_seq_length=16",
                *_model_flags(world),
            ],
            "train.csv",
            out,
        ),
        # extract_features
        (
            "features-missing-input",
            "extract_features",
            [
                f"--input_file={bad}/nope.txt",
                f"--output_file={out}/f.jsonl",
                "--max_seq_length=16",
                *_model_flags(world),
            ],
            "nope.txt",
            out,
        ),
        (
            "features-missing-vocab",
            "extract_features",
            [
                f"--input_file={world.root}/text.txt",
                f"--output_file={out}/f.jsonl",
                "--max_seq_length=16",
                *_model_flags(world, vocab=bad / "nope.txt"),
            ],
            "nope.txt",
            out,
        ),
        (
            "features-bad-layers",
            "extract_features",
            [
                f"--input_file={world.root}/text.txt",
                f"--output_file={out}/f.jsonl",
                "--max_seq_length=16",
                "--layers=-1,x",
                *_model_flags(world),
            ],
            "--layers",
            out,
        ),
        (
            "features-unwritable",
            "extract_features",
            [
                f"--input_file={world.root}/text.txt",
                f"--output_file={world.unwritable}/f.jsonl",
                "--max_seq_length=16",
                *_model_flags(world),
            ],
            "--output_file",
            out,
        ),
        (
            "features-normalize-without-pooling",
            "extract_features",
            [
                f"--input_file={world.root}/text.txt",
                f"--output_file={out}/f.jsonl",
                "--max_seq_length=16",
                "--normalize_embeddings",
                *_model_flags(world),
            ],
            "--normalize_embeddings",
            out,
        ),
        # export_saved_model
        (
            "export-pooling-on-a-task-without-sentence-output",
            "export_saved_model",
            [
                "--max_seq_length=32",
                f"--export_dir={out}/e",
                "--model_type=classifier",
                "--label_names=a,b",
                "--pooling=mean",
                *_model_flags(world),
            ],
            "--pooling",
            out,
        ),
        (
            "export-vocab-config-mismatch",
            "export_saved_model",
            [
                "--max_seq_length=32",
                f"--export_dir={out}/e",
                "--model_type=encoder",
                *_model_flags(world, vocab=bad / "short_vocab.txt"),
            ],
            "short_vocab.txt",
            out,
        ),
        (
            "export-missing-vocab",
            "export_saved_model",
            [
                "--max_seq_length=32",
                f"--export_dir={out}/e",
                "--model_type=encoder",
                *_model_flags(world, vocab=bad / "nope.txt"),
            ],
            "nope.txt",
            out,
        ),
        (
            "export-checkpoint-mismatch",
            "export_saved_model",
            [
                "--max_seq_length=32",
                f"--export_dir={out}/e",
                "--model_type=encoder",
                *_model_flags(world, checkpoint=world.other / "bert_model.ckpt"),
            ],
            "bert_model.ckpt",
            out,
        ),
        (
            "export-exists",
            "export_saved_model",
            [
                "--max_seq_length=32",
                f"--export_dir={world.root}/existing_export",
                "--model_type=encoder",
                *_model_flags(world),
            ],
            "existing_export",
            out,
        ),
        (
            "export-unwritable",
            "export_saved_model",
            ["--max_seq_length=32", f"--export_dir={world.unwritable}/e", "--model_type=encoder", *_model_flags(world)],
            "--export_dir",
            out,
        ),
        (
            "export-missing-checkpoint",
            "export_saved_model",
            [
                "--max_seq_length=32",
                f"--export_dir={out}/e",
                "--model_type=encoder",
                *_model_flags(world, checkpoint=bad / "nope.ckpt"),
            ],
            "nope.ckpt",
            out,
        ),
        # convert_hf_checkpoint
        (
            "convert-missing-dir",
            "convert_hf_checkpoint",
            [f"--hf_dir={bad}/nope", f"--output_dir={out}/g"],
            "vocab.txt",
            out,
        ),
        (
            "convert-unwritable",
            "convert_hf_checkpoint",
            [f"--hf_dir={good}", f"--output_dir={world.unwritable}"],
            "--output_dir",
            out,
        ),
        # squad_eval
        (
            "squad-eval-other-predictions",
            "squad_eval",
            [str(world.squad), str(world.root / "other_predictions.json")],
            "other_predictions.json",
            out,
        ),
        (
            "squad-eval-v1-on-v2",
            "squad_eval",
            [str(world.squad), str(world.root / "predictions.json"), "--version", "1.1"],
            "--version 1.1",
            out,
        ),
        (
            "squad-eval-missing-null-odds",
            "squad_eval",
            [
                str(world.squad),
                str(world.root / "predictions.json"),
                "--na-prob-file",
                str(world.root / "other_predictions.json"),
            ],
            "other_predictions.json",
            out,
        ),
        (
            "squad-eval-not-squad",
            "squad_eval",
            [str(bad / "squad_not_squad.json"), str(world.root / "predictions.json")],
            "squad_not_squad.json",
            out,
        ),
        # the helper's newcomer trial
        (
            "pretrain-data-output-is-input",
            "create_pretraining_data",
            [
                f"--input_file={world.root}/text.txt",
                f"--output_file={world.root}/text.txt",
                f"--vocab_file={good}/vocab.txt",
            ],
            "is also an input",
            out,
        ),
        (
            "vocab-output-is-input",
            "build_vocab",
            [f"--input_file={world.root}/text.txt", f"--output_file={world.root}/text.txt"],
            "is also an input",
            out,
        ),
        (
            "pretrain-data-output-twice",
            "create_pretraining_data",
            [
                f"--input_file={world.root}/text.txt",
                f"--output_file={out}/dup.tfrecord,{out}/dup.tfrecord",
                f"--vocab_file={good}/vocab.txt",
            ],
            "listed twice",
            out,
        ),
        (
            "vocab-binary-input",
            "build_vocab",
            [f"--input_file={pretraining['train.tfrecord']}", f"--output_file={out}/v.txt"],
            "binary data",
            out,
        ),
        (
            "features-binary-input",
            "extract_features",
            [
                f"--input_file={pretraining['train.tfrecord']}",
                f"--output_file={out}/f.jsonl",
                "--max_seq_length=16",
                *_model_flags(world),
            ],
            "binary data",
            out,
        ),
        (
            "export-wrong-model-type",
            "export_saved_model",
            [
                "--max_seq_length=32",
                f"--export_dir={out}/e",
                "--model_type=squad",
                *_model_flags(world, checkpoint=world.classifier_run),
            ],
            "--model_type",
            out,
        ),
        (
            "export-head-size-mismatch",
            "export_saved_model",
            [
                "--max_seq_length=32",
                f"--export_dir={out}/e",
                "--model_type=classifier",
                "--label_names=a,b,c",
                *_model_flags(world, checkpoint=world.classifier_run),
            ],
            "--label_names",
            out,
        ),
        (
            "ner-into-another-tasks-run",
            "run_ner",
            [
                f"--data_dir={world.conll}",
                f"--output_dir={world.mrpc_run}",
                "--do_train",
                "--max_seq_length=16",
                *_model_flags(world),
            ],
            "holds a run of task MRPC",
            world.mrpc_run,
        ),
        (
            "pretrain-truncated-records",
            "run_pretraining",
            [
                f"--bert_config_file={pretraining['bert_config.json']}",
                f"--input_file={world.truncated}",
                f"--output_dir={world.root}/truncated_run",
                "--do_train",
                f"--max_seq_length={MAX_SEQ}",
                f"--max_predictions_per_seq={MAX_PRED}",
                "--num_train_steps=400",
                "--train_batch_size=8",
            ],
            "truncated or corrupt",
            world.root / "truncated_run",  # found before the run makes its output directory
        ),
        (
            "classifier-hf-config",
            "run_classifier",
            [
                "--task_name=MRPC",
                f"--data_dir={world.mrpc}",
                f"--output_dir={out}/c",
                *train_flags,
                *_model_flags(world, config=world.hf_dir / "config.json"),
            ],
            "convert_hf_checkpoint",
            out,
        ),
        (
            "classifier-safetensors-checkpoint",
            "run_classifier",
            [
                "--task_name=MRPC",
                f"--data_dir={world.mrpc}",
                f"--output_dir={out}/c",
                *train_flags,
                *_model_flags(world, checkpoint=world.hf_dir / "model.safetensors"),
            ],
            "the Hugging Face directory that holds it",
            out,
        ),
        (
            "convert-config-weights-mismatch",
            "convert_hf_checkpoint",
            [f"--hf_dir={world.hf_wrong_config}", f"--output_dir={out}/g"],
            "different models",
            out,
        ),
        (
            "convert-truncated-safetensors",
            "convert_hf_checkpoint",
            [f"--hf_dir={world.hf_truncated}", f"--output_dir={out}/g"],
            "truncated",
            out,
        ),
        (
            "convert-output-exists",
            "convert_hf_checkpoint",
            [f"--hf_dir={world.hf_dir}", f"--output_dir={good}"],
            "--force",
            out,
        ),
        (
            "squad-no-room-for-context",
            "run_squad",
            [
                f"--train_file={world.squad}",
                f"--output_dir={out}/s",
                "--do_train",
                "--max_seq_length=16",
                "--max_query_length=16",
                *_model_flags(world),
            ],
            "--max_query_length",
            out,
        ),
        (
            "pretrain-data-bad-probability",
            "create_pretraining_data",
            [
                f"--input_file={world.root}/text.txt",
                f"--output_file={out}/p.tfrecord",
                f"--vocab_file={good}/vocab.txt",
                "--masked_lm_prob=1.5",
            ],
            "--masked_lm_prob",
            out,
        ),
        # the CLI audit of 2026-12-02
        *(
            (
                f"{tool_case}-duplicate-vocab",
                tool,
                [*args, f"--vocab_file={bad}/vocab_duplicate.txt"],
                "vocab_duplicate.txt",
                out,
            )
            for tool_case, tool, args in (
                (
                    "pretrain-data",
                    "create_pretraining_data",
                    [f"--input_file={world.root}/text.txt", f"--output_file={out}/p.tfrecord"],
                ),
                (
                    "finetune-data",
                    "create_finetuning_data",
                    ["--task_name=MRPC", f"--data_dir={world.mrpc}", f"--output_dir={out}/d"],
                ),
                (
                    "export",
                    "export_saved_model",
                    [
                        f"--bert_config_file={good}/bert_config.json",
                        f"--init_checkpoint={good}/bert_model.ckpt",
                        "--model_type=encoder",
                        "--max_seq_length=16",
                        f"--export_dir={out}/e",
                    ],
                ),
            )
        ),
        (
            "squad-eval-predictions-is-dir",
            "squad_eval",
            [str(world.squad), str(bad / "a_directory")],
            "a_directory",
            out,
        ),
        (
            "features-empty-input",
            "extract_features",
            [
                f"--input_file={bad}/empty.txt",
                f"--output_file={out}/f.jsonl",
                "--max_seq_length=16",
                *_model_flags(world),
            ],
            "empty.txt",
            out,
        ),
        (
            "pretrain-records-outside-vocab",
            "run_pretraining",
            _pretraining_args(pretraining, out, config=f"{bad}/config_vocab_10.json"),
            "train.tfrecord",
            out,
        ),
        *(
            (
                f"pretrain-{flag.split('=')[0][2:]}",
                "run_pretraining",
                _pretraining_args(pretraining, out, flag),
                flag.split("=")[0],
                out,
            )
            for flag in ("--num_train_steps=0", "--learning_rate=-1", f"--max_predictions_per_seq={MAX_SEQ + 1}")
        ),
        (
            "pretrain-config-is-dir",
            "run_pretraining",
            [
                f"--bert_config_file={bad}/a_directory",
                f"--input_file={pretraining['train.tfrecord']}",
                f"--output_dir={out}/p",
                "--do_train",
            ],
            "is a directory",
            out,
        ),
        (
            "pretrain-data-more-predictions-than-tokens",
            "create_pretraining_data",
            [
                f"--input_file={world.root}/text.txt",
                f"--output_file={out}/p.tfrecord",
                f"--vocab_file={good}/vocab.txt",
                "--max_seq_length=16",
                "--max_predictions_per_seq=40",
            ],
            "--max_predictions_per_seq",
            out,
        ),
        (
            "convert-google-config-of-another-model",
            "convert_checkpoint",
            [
                "--from=google",
                "--to=huggingface",
                f"--input_dir={good}",
                f"--bert_config_file={world.other}/bert_config.json",
                f"--output_dir={out}/hf",
            ],
            "bert_model.ckpt",
            out,
        ),
        (
            "convert-vocab-of-another-model",
            "convert_checkpoint",
            [
                "--from=google",
                "--to=huggingface",
                f"--input_dir={good}",
                f"--vocab_file={bad}/short_vocab.txt",
                f"--output_dir={out}/hf",
            ],
            "short_vocab.txt",
            out,
        ),
    ]


def _disk_full_cases(world):
    """Real work whose output does not fit in 256 KB."""
    big = world.root / "big_corpus.txt"
    words = VOCAB[5:]
    big.write_text(
        "\n\n".join(
            "\n".join(" ".join(words[(d + s + w) % len(words)] for w in range(12)) for s in range(6))
            for d in range(400)
        )
        + "\n"
    )
    return [
        (
            "pretrain-data-disk-full",
            "create_pretraining_data",
            [
                f"--input_file={big}",
                f"--output_file={world.full}/p.tfrecord",
                f"--vocab_file={world.good}/vocab.txt",
                "--max_seq_length=32",
                "--dupe_factor=4",
            ],
            "no space left on device",
            world.full,
        ),
        (
            "pretrain-disk-full",
            "run_pretraining",
            [
                f"--bert_config_file={world.pretraining['bert_config.json']}",
                f"--input_file={world.pretraining['train.tfrecord']}",
                f"--output_dir={world.full}/run",
                "--do_train",
                f"--max_seq_length={MAX_SEQ}",
                f"--max_predictions_per_seq={MAX_PRED}",
                "--num_train_steps=5",
                "--train_batch_size=4",
            ],
            "no space left on device",
            world.full,
        ),
    ]


def _run_all(cases):
    """{case id: CompletedProcess-like result}: every case as a fork of one process that imported
    TensorFlow once (tests/tool_forker.py), three at a time."""
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # the tools' own default: quiet
    jobs = [
        {
            "id": case_id,
            "argv": [*TOOLS[tool], *args],
            "cwd": str(REPO_ROOT),
            "env": env,
        }
        for case_id, tool, args, _, _ in cases
    ]
    forker = subprocess.run(
        [sys.executable, "-m", "tests.tool_forker", "--jobs", "3"],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        env=env,
        cwd=str(REPO_ROOT),
        timeout=900,
    )
    assert forker.returncode == 0, forker.stderr[-3000:]
    return {case_id: types.SimpleNamespace(**result) for case_id, result in json.loads(forker.stdout).items()}


def _listing(directory):
    directory = str(directory)
    if not os.path.isdir(directory):
        return set()
    return {
        os.path.relpath(os.path.join(folder, name), directory)
        for folder, dirs, files in os.walk(directory)
        for name in dirs + files
    }


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_inputs")
    world = World(root)
    out = root / "out"
    out.mkdir()
    cases = _cases(world, out) + (_disk_full_cases(world) if world.has_full_disk else [])
    before = {case[0]: _listing(case[4]) for case in cases}
    existing_export = (root / "existing_export" / "saved_model.pb").read_text()
    try:
        results = _run_all(cases)
        after = {case[0]: _listing(case[4]) for case in cases}
        assert (root / "existing_export" / "saved_model.pb").read_text() == existing_export
        yield {case[0]: (case, results[case[0]], before[case[0]], after[case[0]]) for case in cases}, world
    finally:
        world.unmount()


def test_every_tool_fails_cleanly_on_every_bad_input(outcomes):
    table, _ = outcomes
    problems = []
    for case_id, ((_, tool, _, named, _), result, before, after) in table.items():
        if case_id in ("pretrain-data-disk-full", "pretrain-disk-full"):
            continue
        lines = result.stderr.strip().splitlines()
        if result.returncode == 0:
            problems.append(f"{case_id}: exit 0")
        elif "Traceback" in result.stderr:
            problems.append(f"{case_id}: a traceback:\n{result.stderr[-1500:]}")
        elif not lines or not lines[-1].startswith(f"{tool}: error: "):
            problems.append(f"{case_id}: last line {lines[-1:]!r}")
        elif not any(option in lines[-1] for option in named.split("|")):
            problems.append(f"{case_id}: {lines[-1]!r} does not name {named!r}")
        elif after != before:
            problems.append(f"{case_id}: left {sorted(after - before)}")
        elif len(lines) > 10:  # a few named bad rows at most, never one line per row
            problems.append(f"{case_id}: {len(lines)} lines on stderr:\n{result.stderr[-1500:]}")
    assert not problems, f"{len(problems)} of {len(table)} cases:\n" + "\n".join(problems)
    assert len(table) >= 45


def test_disk_full_fails_cleanly(outcomes):
    table, world = outcomes
    if not world.has_full_disk:
        pytest.skip("cannot mount a small tmpfs here")
    for case_id in ("pretrain-data-disk-full", "pretrain-disk-full"):
        (_, tool, _, named, location), result, before, after = table[case_id]
        lines = result.stderr.strip().splitlines()
        assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
        assert lines[-1].startswith(f"{tool}: error: ") and named in lines[-1], lines[-1]
        assert "{{" not in lines[-1]  # no TensorFlow graph internals in the line
        # Nothing half-written: no output, no temporary, no checkpoint (training's TensorBoard log may stay).
        left = sorted(path for path in after - before if not path.startswith(("run/train", "run")) or "ckpt" in path)
        assert not left, (case_id, left)


def test_every_tool_has_cases(outcomes):
    """Every console script in pyproject.toml is among the cases (a new tool needs bad inputs too)."""
    table, _ = outcomes
    assert {case[1] for case, *_ in table.values()} == set(TOOLS)
