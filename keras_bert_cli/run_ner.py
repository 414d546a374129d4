r"""BERT fine-tuning for named-entity recognition on CoNLL-2003 files (eng.train, eng.testa, eng.testb).

    python run_ner.py --data_dir=conll2003 --vocab_file=vocab.txt --bert_config_file=bert_config.json \
        --init_checkpoint=bert_model.ckpt --do_train --do_eval --output_dir=out

The paper's feature-based approach (§5.3, Table 7): the encoder frozen, its layers computed once
and cached, a two-layer BiLSTM trained on them:

    python run_ner.py ... --feature_based=concat_last_four --learning_rate=1e-3 --num_train_epochs=4
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
flags.DEFINE_string(
    "feature_based",
    None,
    "Freeze the encoder and train a 2-layer BiLSTM on these of its layers: embeddings, second_to_last, last, "
    "sum_last_four, concat_last_four or weighted_sum_all (the sums learn softmax-normalised weights). "
    "Unset: fine-tune.",
)
flags.DEFINE_integer("lstm_size", None, "--feature_based: the BiLSTM's units each way (default: the hidden size).")
flags.DEFINE_string(
    "feature_cache_dir",
    None,
    "--feature_based: where the computed layers are kept, keyed by checkpoint, layers and data "
    "(default: OUTPUT_DIR/layer_features); share it between runs.",
)
shared.define_common_flags()
flags.mark_flags_as_required(["data_dir"])


def main(_):
    from keras_bert_impl.runners.run_ner import NerOptions, run_ner

    run_ner(shared.options_of(NerOptions), log=app.Log())


def console_main():
    app.run(main, "run_ner")


if __name__ == "__main__":
    console_main()
