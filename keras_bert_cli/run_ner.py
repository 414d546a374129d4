r"""BERT fine-tuning for named-entity recognition on CoNLL-2003 files (eng.train, eng.testa, eng.testb).

    python run_ner.py --data_dir=conll2003 --vocab_file=vocab.txt --bert_config_file=bert_config.json \
        --init_checkpoint=bert_model.ckpt --do_train --do_eval --output_dir=out
"""

from absl import flags

from keras_bert_cli import app
from keras_bert_cli import flags as shared

FLAGS = flags.FLAGS
shared.define_data_dir(
    "eng.train, eng.testa (dev) and eng.testb (test), or the directory "
    "create_finetuning_data.py --task_name=conll wrote."
)
flags.DEFINE_integer("max_train_sentences", None, "Train on this many sentences drawn with --random_seed.")
shared.define_common_flags()
flags.mark_flags_as_required(["data_dir"])


def main(_):
    from keras_bert_impl.runners.run_ner import run_ner

    run_ner(shared.options_from_flags(), FLAGS.data_dir, FLAGS.max_train_sentences, FLAGS.random_seed, log=app.Log())


def console_main():
    app.run(main, "run_ner")


if __name__ == "__main__":
    console_main()
