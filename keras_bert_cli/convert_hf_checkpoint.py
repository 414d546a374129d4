"""Writes Hugging Face-format BERT weights (config.json + model.safetensors + vocab.txt) as a
Google-format model directory: bert_config.json, vocab.txt and bert_model.ckpt (an alias of
`convert_checkpoint.py --from=huggingface --to=google`).

    python convert_hf_checkpoint.py --hf_dir=path/to/model --output_dir=google_model
"""

from absl import flags

from keras_bert_cli import app

FLAGS = flags.FLAGS
flags.DEFINE_string("hf_dir", None, "Directory with config.json, model.safetensors and vocab.txt.")
flags.DEFINE_string("output_dir", None, "Where bert_config.json, vocab.txt and bert_model.ckpt go.")
flags.DEFINE_bool("force", False, "Replace a model already in --output_dir.")
flags.mark_flags_as_required(["hf_dir", "output_dir"])


def main(_):
    """`convert_checkpoint.py --from=huggingface --to=google` under its older name."""
    from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint

    convert_checkpoint(
        ConvertOptions("huggingface", "google", FLAGS.hf_dir, FLAGS.output_dir, force=FLAGS.force), log=app.Log()
    )


def console_main():
    app.run(main, "convert_hf_checkpoint")


if __name__ == "__main__":
    console_main()
