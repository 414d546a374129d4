"""BERT fine-tuning on SWAG multiple choice (rowanz/swagaf train.csv / val.csv).

    python run_swag.py --data_dir=swagaf/data --vocab_file=vocab.txt --bert_config_file=bert_config.json \
        --init_checkpoint=bert_model.ckpt --do_train --do_eval --learning_rate=2e-5 --output_dir=out
"""

import sys

from absl import app, flags, logging

import runner_flags

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", None, "Directory with train.csv and val.csv.")
runner_flags.define_common_flags()


def main(_):
    from keras_bert_impl.swag_runner import run_swag

    try:
        run_swag(runner_flags.options_from_flags(), FLAGS.data_dir, log=logging.info)
    except (FileNotFoundError, ValueError, RuntimeError) as error:
        sys.exit(f"run_swag: error: {error}")


if __name__ == "__main__":
    flags.mark_flags_as_required(["data_dir"])
    app.run(main)
