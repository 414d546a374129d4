r"""BERT fine-tuning on SQuAD v1.1 / v2.0 with Google's flags and output files.

    python run_squad.py --vocab_file=vocab.txt --bert_config_file=bert_config.json \
        --init_checkpoint=bert_model.ckpt --do_train --train_file=train-v2.0.json --do_predict \
        --predict_file=dev-v2.0.json --version_2_with_negative --train_batch_size=24 \
        --learning_rate=3e-5 --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=out

With --data_dir (create_finetuning_data.py's output) training and prediction read its TFRecords;
--predict_file still gives the answers' text.
"""

from absl import flags

from keras_bert_cli import app
from keras_bert_cli import flags as shared

FLAGS = flags.FLAGS
flags.DEFINE_string("train_file", None, "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string("predict_file", None, "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
shared.define_data_dir("Instead of converting the JSON files: the directory create_finetuning_data.py wrote for them.")
flags.DEFINE_bool(
    "version_2_with_negative", False, "If true, the SQuAD examples contain some that do not have an answer."
)
flags.DEFINE_integer(
    "doc_stride", 128, "When splitting up a long document into chunks, how much stride to take between chunks."
)
flags.DEFINE_integer("max_query_length", 64, "The maximum number of tokens for the question.")
flags.DEFINE_integer(
    "n_best_size", 20, "The total number of n-best predictions to generate in the nbest_predictions.json output file."
)
flags.DEFINE_integer("max_answer_length", 30, "The maximum length of an answer that can be generated.")
flags.DEFINE_float(
    "null_score_diff_threshold", 0.0, "If null_score - best_non_null is greater than the threshold predict null."
)
flags.DEFINE_bool("verbose_logging", False, "If true, all of the warnings related to data processing will be printed.")
shared.define_common_flags(max_seq_length=384, learning_rate=5e-5)


def main(_):
    from keras_bert_impl.runners.run_squad import SquadOptions, run_squad

    run_squad(shared.options_of(SquadOptions), log=app.Log())


def console_main():
    app.run(main, "run_squad")


if __name__ == "__main__":
    console_main()
