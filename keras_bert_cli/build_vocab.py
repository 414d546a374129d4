"""Learns a WordPiece `vocab.txt` from raw text files (tensorflow-text's learner), or extends a
released model's vocabulary with a domain's words (and resizes the model to it).

python tfrecord_tools/build_vocab.py --input_file=corpus/*.txt --output_file=vocab.txt --vocab_size=8000
python tfrecord_tools/build_vocab.py --base_vocab=bert/vocab.txt --input_file=domain.txt --num_new_tokens=500 \
    --init_checkpoint=bert/bert_model.ckpt --bert_config_file=bert/bert_config.json --output_dir=bert_domain
"""

from absl import flags

from keras_bert_cli import app
from keras_bert_cli import flags as shared

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Raw text files: a comma list of files or globs.")
flags.DEFINE_string("output_file", None, "Where to write vocab.txt (one token per line).")
flags.DEFINE_integer(
    "vocab_size",
    8000,
    "Largest vocabulary size: the vocabulary has at most this many tokens (usually within 5% below).",
)
flags.DEFINE_bool("do_lower_case", True, "Lower case and strip accents, as the tokenizer will.")
flags.DEFINE_list(
    "reserved_tokens", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "Tokens placed first, in this order."
)
flags.DEFINE_integer("min_count", 2, "Least number of occurrences for a word to be considered whole.")
flags.DEFINE_string(
    "base_vocab",
    None,
    "Extend this vocab.txt instead of learning one: the domain's words it splits most (count x pieces - 1) "
    "take its [unusedK] slots, then are appended; every token keeps its id. Writes --output_dir.",
)
flags.DEFINE_integer("num_new_tokens", 1000, "--base_vocab: how many words to add.")
flags.DEFINE_string(
    "init_checkpoint",
    None,
    "--base_vocab: also resize this model (Google's bert_model.ckpt, one of ours, or a Hugging Face "
    "directory) to the new vocabulary: each new row the mean of its old pieces' rows, old rows unchanged.",
)
flags.DEFINE_string("bert_config_file", None, "--init_checkpoint's bert_config.json (a Hugging Face one has its own).")
flags.DEFINE_string(
    "output_dir",
    None,
    "--base_vocab: where vocab.txt, vocab_extension.json (what was added, tokens per word before and after) "
    "and, with --init_checkpoint, bert_config.json and bert_model.ckpt go.",
)
flags.DEFINE_bool("force", False, "Replace an existing --output_dir.")
flags.mark_flags_as_required(["input_file"])


def main(_):
    from keras_bert_impl.runners.build_vocab import VocabOptions, build_vocab

    build_vocab(shared.options_of(VocabOptions), log=app.Log())


def console_main():
    app.run(main, "build_vocab")


if __name__ == "__main__":
    console_main()
