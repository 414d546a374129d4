"""Writes Hugging Face-format BERT weights (config.json + model.safetensors + vocab.txt) as a
Google-format model directory: bert_config.json, vocab.txt and bert_model.ckpt.

    python convert_hf_checkpoint.py --hf_dir=path/to/model --output_dir=google_model
"""

import os
import shutil
import sys

from absl import app, flags, logging

FLAGS = flags.FLAGS
flags.DEFINE_string("hf_dir", None, "Directory with config.json, model.safetensors and vocab.txt.")
flags.DEFINE_string("output_dir", None, "Where bert_config.json, vocab.txt and bert_model.ckpt go.")


def main(_):
    from keras_bert_impl.hf_weights import load_hf_directory
    from keras_bert_impl.google_checkpoint import write_google_checkpoint

    try:
        config, weights = load_hf_directory(FLAGS.hf_dir)
    except (FileNotFoundError, ValueError) as error:
        sys.exit(f"convert_hf_checkpoint: error: {error}")
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    config.to_json_file(os.path.join(FLAGS.output_dir, "bert_config.json"))
    shutil.copyfile(os.path.join(FLAGS.hf_dir, "vocab.txt"), os.path.join(FLAGS.output_dir, "vocab.txt"))
    prefix = write_google_checkpoint(weights, os.path.join(FLAGS.output_dir, "bert_model.ckpt"))
    logging.info("wrote %s (%d tensors) with bert_config.json and vocab.txt", prefix, len(weights))


if __name__ == "__main__":
    flags.mark_flags_as_required(["hf_dir", "output_dir"])
    app.run(main)
