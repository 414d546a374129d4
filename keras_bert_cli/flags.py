"""The absl flags the tools share (Google's names), and their conversion to the options
dataclasses of keras_bert_impl. Only the shells in this package read flags."""

import dataclasses
import os

from absl import flags

FLAGS = flags.FLAGS


def define_max_seq_length(default=128):
    flags.DEFINE_integer(
        "max_seq_length",
        default,
        "The maximum total input sequence length after WordPiece tokenization (at least 3: [CLS], a token, [SEP]).",
        lower_bound=3,
    )


def define_tokenizer_flags(max_seq_length=128, vocab_help="The vocabulary file that the BERT model was trained on."):
    """--vocab_file, --do_lower_case and (unless None) --max_seq_length: how text becomes ids."""
    flags.DEFINE_string("vocab_file", None, vocab_help)
    flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text (True for uncased models).")
    if max_seq_length is not None:
        define_max_seq_length(max_seq_length)


def define_model_flags():
    """--bert_config_file and --init_checkpoint: which model, with which weights."""
    flags.DEFINE_string("bert_config_file", None, "The config json file corresponding to the pre-trained BERT model.")
    flags.DEFINE_string(
        "init_checkpoint",
        None,
        "Initial checkpoint: Google's TF1 bert_model.ckpt, one of ours, or a Hugging Face directory.",
    )


def define_tpu_flags():
    """Google's TPU flags; --tpu (or --tpu_name, --master) names the TPU."""
    flags.DEFINE_bool("use_tpu", False, "Whether to use TPU (--tpu names it).")
    flags.DEFINE_string("tpu", None, "The Cloud TPU to use for training (name or grpc:// address).")
    flags.DEFINE_string("tpu_name", None, "Alias of --tpu, as in Google's runners.")
    flags.DEFINE_string("tpu_zone", None, "GCE zone where the Cloud TPU is located in.")
    flags.DEFINE_string("gcp_project", None, "Project name for the Cloud TPU-enabled project.")
    flags.DEFINE_string("master", None, "Google's TPU master address (grpc://...); an alias of --tpu.")
    flags.DEFINE_integer(
        "num_tpu_cores", 8, "Google's scripts' core count; ignored (with a WARNING): the strategy uses every core."
    )


def define_distribution_flags():
    """TPU / strategy / precision flags of every training runner (Google's TPU flag names)."""
    define_tpu_flags()
    flags.DEFINE_enum(
        "distribution_strategy",
        "auto",
        ["auto", "one_device", "mirrored", "multi_worker_mirrored", "tpu"],
        "The tf.distribute strategy; auto picks TPU, multi-worker (TF_CONFIG), mirrored (GPUs) or one device.",
    )
    flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "AdamW (Google's BERT) or LAMB for large batches.")
    flags.DEFINE_enum(
        "mixed_precision", "float32", ["float32", "mixed_bfloat16", "mixed_float16"], "Keras dtype policy."
    )
    flags.DEFINE_bool("jit_compile", False, "XLA-compile each replica's forward and backward pass.")
    flags.DEFINE_integer(
        "gradient_accumulation_steps", 1, "Micro-batches per replica batch; their gradients are summed."
    )
    flags.DEFINE_integer("random_seed", 12345, "Seed of initialisation, dropout and data shuffling.")
    flags.DEFINE_float(
        "log_every_seconds",
        30.0,
        "A progress line (examples/s, ETA) at least this often; it does not "
        "change how many steps run in one loop call.",
    )


def tpu_from_flags():
    """--tpu, or its aliases --tpu_name and --master; "" (find it) for a bare --use_tpu."""
    if FLAGS["num_tpu_cores"].present:
        from absl import logging

        logging.warning("--num_tpu_cores is ignored: the TPU strategy trains on every core of the TPU it is given")
    return FLAGS.tpu or FLAGS.tpu_name or FLAGS.master or ("" if FLAGS.use_tpu else None)


def options_of(options_class, **overrides):
    """An options dataclass filled from the flags of the same names (`tpu` from --tpu or its aliases)."""
    names = [field.name for field in dataclasses.fields(options_class)]
    values = {name: FLAGS[name].value for name in names if name != "tpu" and name in FLAGS}
    if "tpu" in names:
        values["tpu"] = tpu_from_flags()
    values.update(overrides)
    return options_class(**values)


def define_pooling_flags():
    """--pooling and --normalize_embeddings: sentence embeddings (None: the model's own settings)."""
    flags.DEFINE_enum(
        "pooling",
        None,
        ["mean", "cls", "max"],
        "Sentence embeddings: pool the last layer's tokens so (default: the sentence-transformers pooling files "
        "beside --init_checkpoint, else mean).",
    )
    flags.DEFINE_bool(
        "normalize_embeddings",
        None,
        "Sentence embeddings: L2-normalise them (default: as the sentence-transformers model does, else no).",
    )


def define_training_flags(max_seq_length=128, learning_rate=5e-5, train_batch_size=32):
    """The flags RunOptions holds, with Google's defaults."""
    define_model_flags()
    define_max_seq_length(max_seq_length)
    flags.DEFINE_string("output_dir", None, "The output directory where the model checkpoints will be written.")
    flags.DEFINE_bool("do_train", False, "Whether to run training.")
    flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
    flags.DEFINE_integer("train_batch_size", train_batch_size, "Total (global) batch size for training.")
    flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
    flags.DEFINE_float("learning_rate", learning_rate, "The initial learning rate for Adam.")
    flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
    flags.DEFINE_integer("iterations_per_loop", 1000, "How many steps run inside one tf.function call (as on TPUs).")
    flags.DEFINE_integer(
        "eval_every_n_steps",
        None,
        "With --do_train --do_eval: also evaluate every N steps "
        "(TensorBoard in OUTPUT_DIR/eval); unset: only at the end.",
    )
    flags.DEFINE_bool(
        "allow_random_weights",
        False,
        "Evaluate / predict / export even when neither --output_dir nor --init_checkpoint holds weights.",
    )
    flags.DEFINE_bool(
        "pad_to_max_seq_length",
        False,
        "Pad every batch to --max_seq_length (Google's fixed shapes); by default each (training) batch "
        "is cut to its longest input, rounded up to one of a few bucket lengths.",
    )
    define_distribution_flags()


def define_common_flags(max_seq_length=128, learning_rate=5e-5, train_batch_size=32):
    """Every fine-tuning runner's flags."""
    define_training_flags(max_seq_length, learning_rate, train_batch_size)
    define_tokenizer_flags(max_seq_length=None)
    flags.DEFINE_bool("do_predict", False, "Whether to run the model in inference mode on the test set.")
    flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
    flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
    flags.DEFINE_float("warmup_proportion", 0.1, "Proportion of training to perform linear learning rate warmup for.")
    flags.DEFINE_string("export_dir", None, "After training, export a SavedModel that serves raw text here.")
    flags.DEFINE_bool("force", False, "Replace an existing --export_dir.")
    flags.DEFINE_string(
        "keep_best_checkpoint",
        None,
        "With --eval_every_n_steps: keep the checkpoint of the best evaluation by this metric (e.g. "
        "eval_accuracy, eval_f1, f1 for SQuAD; lowest wins for a loss) in OUTPUT_DIR/best; evaluation, "
        "prediction and export then use it.",
    )
    flags.DEFINE_integer(
        "early_stopping_patience",
        None,
        "With --keep_best_checkpoint: stop training after this many evaluations without improvement.",
    )
    flags.mark_flags_as_required(["bert_config_file", "vocab_file", "output_dir"])


def options_from_flags():
    from keras_bert_impl.runners.finetuning import FineTuningOptions

    return options_of(FineTuningOptions)


def define_data_dir(help_text):
    """--data_dir, refused at parse time when it names a file (a common slip: dir/train.tsv)."""
    flags.DEFINE_string("data_dir", None, help_text)

    def is_not_a_file(value):
        if value and os.path.isfile(value):
            raise flags.ValidationError(
                f"is a file; pass the directory that holds it: --data_dir={os.path.dirname(value) or '.'}"
            )
        return True

    flags.register_validator("data_dir", is_not_a_file)
