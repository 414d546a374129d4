"""BERT fine-tuning for named-entity recognition on CoNLL-2003 files (eng.train, eng.testa, eng.testb).

    python run_ner.py --data_dir=conll2003 --vocab_file=vocab.txt --bert_config_file=bert_config.json \
        --init_checkpoint=bert_model.ckpt --do_train --do_eval --output_dir=out
"""

import sys

from absl import app, flags, logging

import runner_flags

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", None, "Directory with eng.train, eng.testa (dev) and eng.testb (test).")
flags.DEFINE_integer("max_train_sentences", None, "Train on this many sentences drawn with --random_seed.")
runner_flags.define_common_flags()


def main(_):
    from keras_bert_impl.ner_runner import run_ner

    try:
        run_ner(runner_flags.options_from_flags(), FLAGS.data_dir, FLAGS.max_train_sentences, FLAGS.random_seed,
                log=logging.info)
    except (FileNotFoundError, ValueError, RuntimeError) as error:
        sys.exit(f"run_ner: error: {error}")


if __name__ == "__main__":
    flags.mark_flags_as_required(["data_dir"])
    app.run(main)
