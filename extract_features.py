"""Extracts pre-computed feature vectors from BERT (Google's extract_features.py flags and output).

    python extract_features.py --input_file=input.txt --output_file=output.jsonl --vocab_file=vocab.txt \
        --bert_config_file=bert_config.json --init_checkpoint=bert_model.ckpt --layers=-1,-2,-3,-4 \
        --max_seq_length=128 --batch_size=8
"""

import json
import sys

from absl import app, flags, logging

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "One example per line; `text_a ||| text_b` for a pair.")
flags.DEFINE_string("output_file", None, "JSON lines: one object per input line.")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "Encoder layers to output (negative from the last).")
flags.DEFINE_string("bert_config_file", None, "The config json file corresponding to the pre-trained BERT model.")
flags.DEFINE_integer("max_seq_length", 128, "The maximum total input sequence length after WordPiece tokenization.")
flags.DEFINE_string("init_checkpoint", None, "Initial checkpoint: Google's TF1 bert_model.ckpt or one of ours.")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text.")
flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
flags.DEFINE_bool("use_tpu", False, "Accepted for compatibility; extraction runs on the local device.")
flags.DEFINE_string("master", None, "Accepted for compatibility.")
flags.DEFINE_integer("num_tpu_cores", 8, "Accepted for compatibility.")
flags.DEFINE_bool("use_one_hot_embeddings", False, "Accepted for compatibility.")


def main(_):
    from keras_bert_impl.bert_encoder import BertEncoder
    from keras_bert_impl.feature_extraction import extract_features, read_lines
    from keras_bert_impl.init_checkpoint import initialize_from_checkpoint
    from tfrecord_tools.atomic_output import atomic_output
    from tfrecord_tools.tokenization import FullTokenizer, validate_case_matches_checkpoint

    try:
        layer_indexes = [int(x) for x in FLAGS.layers.split(",")]
        encoder = BertEncoder.from_bert_config(FLAGS.bert_config_file)
        encoder.bert_config.check_max_seq_length(FLAGS.max_seq_length, FLAGS.bert_config_file)
        validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
        tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
        encoder.bert_config.check_vocab_size(len(tokenizer.inv_vocab), FLAGS.vocab_file, FLAGS.bert_config_file)
        if FLAGS.init_checkpoint:
            logging.info("init_checkpoint: %s", initialize_from_checkpoint(encoder, FLAGS.init_checkpoint).summary())
        examples = read_lines(FLAGS.input_file)
        with atomic_output(FLAGS.output_file) as writer:
            for record in extract_features(encoder, tokenizer, examples, layer_indexes, FLAGS.max_seq_length, FLAGS.batch_size):
                writer.write(json.dumps(record) + "\n")
    except (FileNotFoundError, ValueError) as error:
        sys.exit(f"extract_features: error: {error}")
    logging.info("wrote %s: %d examples", FLAGS.output_file, len(examples))


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_file", "output_file", "vocab_file", "bert_config_file"])
    app.run(main)
