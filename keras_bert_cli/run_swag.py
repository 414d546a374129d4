r"""BERT fine-tuning on SWAG multiple choice (rowanz/swagaf train.csv / val.csv).

    python run_swag.py --data_dir=swagaf/data --vocab_file=vocab.txt --bert_config_file=bert_config.json \
        --init_checkpoint=bert_model.ckpt --do_train --do_eval --learning_rate=2e-5 --output_dir=out
"""

from absl import flags

from keras_bert_cli import app
from keras_bert_cli import flags as shared

FLAGS = flags.FLAGS
shared.define_data_dir("train.csv and val.csv, or the directory create_finetuning_data.py --task_name=swag wrote.")
shared.define_common_flags()
flags.mark_flags_as_required(["data_dir"])


def main(_):
    from keras_bert_impl.runners.run_swag import run_swag

    run_swag(shared.options_from_flags(), FLAGS.data_dir, log=app.Log())


def console_main():
    app.run(main, "run_swag")


if __name__ == "__main__":
    console_main()
