"""BERT pretraining (masked LM + next sentence) on tf.distribute: Google's flags, from one CPU to
a TPU pod.

    python run_pretraining.py --bert_config_file=bert_config.json --input_file=data/*.tfrecord \
        --output_dir=out --do_train --do_eval --train_batch_size=256 --num_train_steps=100000 \
        --num_warmup_steps=10000 --learning_rate=1e-4 [--tpu=NAME]
"""

import sys

from absl import app, flags, logging

import runner_flags

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
runner_flags.define_distribution_flags()
flags.DEFINE_bool("export_google_checkpoint", True, "Also write the final weights as OUTPUT_DIR/bert_model.ckpt under Google's names.")


def main(_):
    from keras_bert_impl.pretraining import PretrainingOptions, run_pretraining

    if not (FLAGS.do_train or FLAGS.do_eval):
        sys.exit("run_pretraining: error: at least one of --do_train or --do_eval must be True")
    options = runner_flags.options_of(PretrainingOptions)
    try:
        results = run_pretraining(options, log=logging.info)
    except (FileNotFoundError, ValueError, RuntimeError) as error:
        sys.exit(f"run_pretraining: error: {error}")
    for key, value in sorted((results or {}).items()):
        logging.info("%s = %s", key, value)


if __name__ == "__main__":
    flags.mark_flags_as_required(["bert_config_file", "input_file", "output_dir"])
    app.run(main)
