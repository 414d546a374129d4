r"""BERT pretraining (masked LM + next sentence, or the masked LM alone) on tf.distribute: Google's
flags, from one CPU to a TPU pod.

    python run_pretraining.py --bert_config_file=bert_config.json --input_file=data/*.tfrecord \
        --output_dir=out --do_train --do_eval --train_batch_size=256 --num_train_steps=100000 \
        --num_warmup_steps=10000 --learning_rate=1e-4 [--tpu=NAME]
"""

from absl import flags, logging

from keras_bert_cli import app
from keras_bert_cli import flags as shared

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Input TF example files (can be a glob or comma separated).")
flags.DEFINE_string("eval_input_file", None, "Evaluation TF example files (default: --input_file).")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
flags.DEFINE_bool(
    "export_google_checkpoint", True, "Also write the final weights as OUTPUT_DIR/bert_model.ckpt under Google's names."
)
flags.DEFINE_bool(
    "continue_optimizer",
    False,
    "With --init_checkpoint of a previous phase (its --output_dir): "
    "continue its optimizer and step count too (--num_train_steps counts both phases); without, the "
    "optimizer restarts, as Google's --init_checkpoint.",
)
flags.DEFINE_bool(
    "next_sentence_prediction",
    None,
    "Train the next-sentence head too. Default: when the records have next_sentence_labels (masked-LM-only "
    "records from create_pretraining_data.py --nonext_sentence_prediction train the masked LM alone); "
    "--nonext_sentence_prediction also drops it on Google's records.",
)
flags.DEFINE_float("masked_lm_prob", 0.15, "Dynamic masking (unmasked records): masked LM probability.")
flags.DEFINE_bool("do_whole_word_mask", False, "Dynamic masking (unmasked records): mask whole words.")
shared.define_training_flags(learning_rate=5e-5)
flags.mark_flags_as_required(["bert_config_file", "input_file", "output_dir"])


def main(_):
    from keras_bert_impl.runners.run_pretraining import PretrainingOptions, run_pretraining

    result = run_pretraining(shared.options_of(PretrainingOptions), log=app.Log())
    for key, value in sorted((result.eval or {}).items()):
        logging.info("%s = %s", key, value)


def console_main():
    app.run(main, "run_pretraining")


if __name__ == "__main__":
    console_main()
