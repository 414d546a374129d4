"""Writes Hugging Face-format BERT weights (config.json + model.safetensors + vocab.txt) as a
Google-format model directory: bert_config.json, vocab.txt and bert_model.ckpt.

    python convert_hf_checkpoint.py --hf_dir=path/to/model --output_dir=google_model
"""

import os
import shutil

from absl import flags, logging

from keras_bert_cli import app

FLAGS = flags.FLAGS
flags.DEFINE_string("hf_dir", None, "Directory with config.json, model.safetensors and vocab.txt.")
flags.DEFINE_string("output_dir", None, "Where bert_config.json, vocab.txt and bert_model.ckpt go.")
flags.DEFINE_bool("force", False, "Replace a model already in --output_dir.")
flags.mark_flags_as_required(["hf_dir", "output_dir"])


def main(_):
    from keras_bert_impl.checkpoints.google_checkpoint import write_google_checkpoint
    from keras_bert_impl.checkpoints.hf_weights import load_hf_directory
    from tfrecord_tools.files import atomic_output, check_readable_file, check_writable

    vocab = os.path.join(FLAGS.hf_dir, "vocab.txt")
    check_readable_file(vocab, "--hf_dir", "vocab.txt")
    check_writable(FLAGS.output_dir, "--output_dir", kind="directory")
    names = ("bert_config.json", "vocab.txt", "bert_model.ckpt.index")
    present = [name for name in names if os.path.exists(os.path.join(FLAGS.output_dir, name))]
    if present and not FLAGS.force:
        raise FileExistsError(
            f"{FLAGS.output_dir}: already holds {', '.join(present)}; pass --force to replace "
            "them (or choose another --output_dir)"
        )
    config, weights = load_hf_directory(FLAGS.hf_dir)
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    config.to_json_file(os.path.join(FLAGS.output_dir, "bert_config.json"))
    with atomic_output(os.path.join(FLAGS.output_dir, "vocab.txt"), "wb") as writer, open(vocab, "rb") as reader:
        shutil.copyfileobj(reader, writer)
    prefix = write_google_checkpoint(weights, os.path.join(FLAGS.output_dir, "bert_model.ckpt"))
    logging.info("wrote %s (%d tensors) with bert_config.json and vocab.txt", prefix, len(weights))


def console_main():
    app.run(main, "convert_hf_checkpoint")


if __name__ == "__main__":
    console_main()
