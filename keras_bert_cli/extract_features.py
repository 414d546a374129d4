r"""Extracts pre-computed feature vectors from BERT (Google's extract_features.py flags and output).

    python extract_features.py --input_file=input.txt --output_file=output.jsonl --vocab_file=vocab.txt \
        --bert_config_file=bert_config.json --init_checkpoint=bert_model.ckpt --layers=-1,-2,-3,-4 \
        --max_seq_length=128 --batch_size=8

With --pooling=mean|cls|max, one sentence embedding per line instead: {"linex_index": i, "embedding": [...]}
(the last layer pooled as sentence-transformers pools; a sentence-transformers model's own
--normalize_embeddings setting unless given).
"""

from absl import flags

from keras_bert_cli import app
from keras_bert_cli import flags as shared

FLAGS = flags.FLAGS
shared.define_model_flags()
shared.define_tokenizer_flags()
shared.define_tpu_flags()
flags.DEFINE_string("input_file", None, "One example per line; `text_a ||| text_b` for a pair.")
flags.DEFINE_string("output_file", None, "JSON lines: one object per input line.")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "Encoder layers to output (negative from the last).")
flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
flags.DEFINE_bool("allow_random_weights", False, "Extract even without --init_checkpoint (random weights).")
flags.DEFINE_bool(
    "pad_to_max_seq_length", False, "Pad every batch to --max_seq_length instead of cutting it to a length bucket."
)
flags.DEFINE_bool("use_one_hot_embeddings", False, "Accepted for compatibility.")
shared.define_pooling_flags()
flags.mark_flags_as_required(["input_file", "output_file", "vocab_file", "bert_config_file"])


def main(_):
    if shared.tpu_from_flags() is not None:
        app.Log.warning("extract_features runs on this machine's devices: --use_tpu, --tpu and --master are ignored")
    from keras_bert_impl.runners.extract_features import ExtractOptions, run_extract_features

    run_extract_features(shared.options_of(ExtractOptions), log=app.Log())


def console_main():
    app.run(main, "extract_features")


if __name__ == "__main__":
    console_main()
