"""BERT pretraining (masked LM + next sentence) on tf.distribute: Google's flags, from one CPU to
a TPU pod.

    python run_pretraining.py --bert_config_file=bert_config.json --input_file=data/*.tfrecord \
        --output_dir=out --do_train --do_eval --train_batch_size=256 --num_train_steps=100000 \
        --num_warmup_steps=10000 --learning_rate=1e-4 [--tpu=NAME]
"""

import os
import sys

from absl import app, flags, logging

FLAGS = flags.FLAGS
flags.DEFINE_string("bert_config_file", None, "The config json file corresponding to the pre-trained BERT model.")
flags.DEFINE_string("input_file", None, "Input TF example files (can be a glob or comma separated).")
flags.DEFINE_string("eval_input_file", None, "Evaluation TF example files (default: --input_file).")
flags.DEFINE_string("output_dir", None, "The output directory where the model checkpoints will be written.")
flags.DEFINE_string("init_checkpoint", None, "Initial checkpoint: Google's TF1 bert_model.ckpt or one of ours.")
flags.DEFINE_integer("max_seq_length", 128, "The maximum total input sequence length after WordPiece tokenization.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 32, "Total (global) batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000, "How many steps to make in each estimator call (steps per execution).")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
flags.DEFINE_bool("use_tpu", False, "Whether to use TPU (--tpu names it).")
flags.DEFINE_string("tpu", None, "The Cloud TPU to use for training (name or grpc:// address).")
flags.DEFINE_string("tpu_name", None, "Alias of --tpu, as in Google's run_pretraining.py.")
flags.DEFINE_string("tpu_zone", None, "GCE zone where the Cloud TPU is located in.")
flags.DEFINE_string("gcp_project", None, "Project name for the Cloud TPU-enabled project.")
flags.DEFINE_integer("num_tpu_cores", 8, "Only used if --use_tpu: the strategy finds the cores itself.")
flags.DEFINE_enum("distribution_strategy", "auto", ["auto", "one_device", "mirrored", "multi_worker_mirrored", "tpu"],
                  "The tf.distribute strategy; auto picks TPU, multi-worker (TF_CONFIG), mirrored (GPUs) or one device.")
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "AdamW (Google's BERT) or LAMB for large batches.")
flags.DEFINE_enum("mixed_precision", "float32", ["float32", "mixed_bfloat16", "mixed_float16"], "Keras dtype policy.")
flags.DEFINE_bool("jit_compile", False, "XLA-compile each replica's forward and backward pass.")
flags.DEFINE_integer("gradient_accumulation_steps", 1, "Micro-batches per replica batch; their gradients are summed.")
flags.DEFINE_bool("export_google_checkpoint", True, "Also write the final weights as OUTPUT_DIR/bert_model.ckpt under Google's names.")
flags.DEFINE_integer("random_seed", 12345, "Seed of initialisation, dropout and data shuffling.")


def main(_):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from keras_bert_impl.pretraining import PretrainingOptions, run_pretraining

    if not (FLAGS.do_train or FLAGS.do_eval):
        sys.exit("run_pretraining: error: at least one of --do_train or --do_eval must be True")
    options = PretrainingOptions(**{name: FLAGS[name].value for name in PretrainingOptions.flag_names()})
    options.tpu = FLAGS.tpu or FLAGS.tpu_name or (None if not FLAGS.use_tpu else "")
    try:
        results = run_pretraining(options, log=logging.info)
    except (FileNotFoundError, ValueError, RuntimeError) as error:
        sys.exit(f"run_pretraining: error: {error}")
    for key, value in sorted((results or {}).items()):
        logging.info("%s = %s", key, value)


if __name__ == "__main__":
    flags.mark_flags_as_required(["bert_config_file", "input_file", "output_dir"])
    app.run(main)
