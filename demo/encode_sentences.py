"""Demo step: build a tiny BERT from a bert_config.json, write it as a Google TF1 checkpoint,
load that checkpoint into a fresh model and print the pooled output for two sentences."""

import os

from absl import flags  # noqa: E402

from keras_bert_cli import app  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("vocab_file", "demo_output/vocab.txt", "WordPiece vocabulary (from build_vocab).")
flags.DEFINE_string("output_dir", "demo_output/tiny_bert", "Where bert_config.json and bert_model.ckpt go.")


def main(_):
    import numpy as np

    from keras_bert_impl import BertConfig, BertEncoder
    from keras_bert_impl.checkpoints.google_checkpoint import load_google_checkpoint, save_google_checkpoint
    from tfrecord_tools.classification_data import pack_pairs
    from tfrecord_tools.tokenization import FullTokenizer

    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=True)
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    config = BertConfig(
        vocab_size=len(tokenizer.vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
        type_vocab_size=2,
    )
    config_file = os.path.join(FLAGS.output_dir, "bert_config.json")
    config.to_json_file(config_file)
    checkpoint = os.path.join(FLAGS.output_dir, "bert_model.ckpt")
    save_google_checkpoint(BertEncoder.from_bert_config(config), checkpoint)
    print(f"wrote {config_file} (vocab {config.vocab_size}) and {checkpoint}")

    encoder = BertEncoder.from_bert_config(config_file)
    print("loaded:", load_google_checkpoint(encoder, checkpoint).summary())

    sentences = ["The baker mixes the dough late in the evening.", "Gulls follow the boats."]
    print("tokens:", tokenizer.tokenize(sentences[0]))
    inputs = pack_pairs(
        tokenizer.tokenize_to_ids(sentences), None, 16, tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
    )
    outputs = encoder({name: value.astype("int32") for name, value in inputs.items()}, training=False)
    np.set_printoptions(precision=4, suppress=True, linewidth=120)
    for sentence, pooled in zip(sentences, np.asarray(outputs["pooled_output"])):
        print(f"{sentence!r}\n  pooled_output[:6] = {pooled[:6]}")


if __name__ == "__main__":
    app.run(main, "encode_sentences")
