r"""Converts a BERT model directory between formats, heads included.

    python convert_checkpoint.py --from=google|huggingface|keras_hub --to=google|huggingface|keras_hub \
        --input_dir=out/pretraining --output_dir=converted [--vocab_file=vocab.txt] \
        [--model_type=pretrainer|masked_lm|classifier|squad|ner|multiple_choice|encoder]

A `google` directory holds bert_config.json and bert_model.ckpt (Google's releases; run_pretraining's
--output_dir); pass --vocab_file when it has no vocab.txt. A `huggingface` directory is what
transformers' `from_pretrained` reads: config.json (with `architectures`), model.safetensors,
vocab.txt, tokenizer_config.json. A `keras_hub` directory is a preset that keras-hub's
`BertBackbone.from_preset` (and `BertMaskedLM` / `BertTextClassifier` for those heads) reads;
masked_lm is transformers' `BertForMaskedLM` and keras-hub's `BertMaskedLM`;
keras-hub has no next-sentence, SQuAD, NER or multiple-choice BERT class, so those heads stay behind.
"""

from absl import flags

from keras_bert_cli import app
from keras_bert_cli import flags as shared

FLAGS = flags.FLAGS
flags.DEFINE_enum("from", None, ["google", "huggingface", "keras_hub"], "The input directory's format.")
flags.DEFINE_enum("to", None, ["google", "huggingface", "keras_hub"], "The output directory's format.")
flags.DEFINE_string("input_dir", None, "The model directory to convert.")
flags.DEFINE_string("output_dir", None, "Where the converted model directory goes (written whole, then renamed).")
flags.DEFINE_string("vocab_file", None, "The vocabulary, when --input_dir has no vocab.txt.")
flags.DEFINE_string(
    "bert_config_file", None, "The config, when --input_dir has no bert_config.json (a fine-tuning runner's output)."
)
flags.DEFINE_string(
    "model_type",
    None,
    "The task model to write, a task of keras_bert_impl/tasks/registry.py (default: the head the weights hold; "
    "encoder drops every head).",
)
flags.DEFINE_list("label_names", None, "classifier, ner: the labels (tags) in id order (config.json's id2label).")
flags.DEFINE_bool(
    "do_lower_case", None, "The tokenizer's casing (default: the input's tokenizer_config.json, else True)."
)
flags.DEFINE_bool("force", False, "Replace an existing --output_dir.")
flags.mark_flags_as_required(["from", "to", "input_dir", "output_dir"])


def main(_):
    from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint

    # --from and --to are the flags' names; `from` is a Python keyword.
    options = shared.options_of(ConvertOptions, from_format=FLAGS["from"].value, to_format=FLAGS.to)
    convert_checkpoint(options, log=app.Log())


def console_main():
    app.run(main, "convert_checkpoint")


if __name__ == "__main__":
    console_main()
