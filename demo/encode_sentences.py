"""Demo step: build a tiny BERT from a bert_config.json, write it as a Google TF1 checkpoint,
load that checkpoint into a fresh model and print the pooled output for two sentences."""

import collections
import os
import re

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("corpus", "demo/data/corpus.txt", "Text the demo vocabulary is drawn from.")
flags.DEFINE_string("output_dir", "demo_output/tiny_bert", "Where config, vocab and checkpoint go.")


def write_vocab(corpus, path):
    """Specials, then every lower-cased word and punctuation mark of the corpus, then ## letters."""
    with open(corpus, encoding="utf-8") as reader:
        words = collections.Counter(re.findall(r"\w+|[^\w\s]", reader.read().lower()))
    letters = sorted({letter for word in words for letter in word})
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words) + [f"##{c}" for c in letters]
    with open(path, "w", encoding="utf-8") as writer:
        writer.write("\n".join(tokens) + "\n")
    return len(tokens)


def main(_):
    import numpy as np
    import tensorflow_text as text

    from keras_bert_impl import BertConfig, BertEncoder
    from keras_bert_impl.google_checkpoint import load_google_checkpoint, save_google_checkpoint

    os.makedirs(FLAGS.output_dir, exist_ok=True)
    vocab_file = os.path.join(FLAGS.output_dir, "vocab.txt")
    vocab_size = write_vocab(FLAGS.corpus, vocab_file)
    config = BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=64, type_vocab_size=2)
    config_file = os.path.join(FLAGS.output_dir, "bert_config.json")
    config.to_json_file(config_file)
    checkpoint = os.path.join(FLAGS.output_dir, "bert_model.ckpt")
    save_google_checkpoint(BertEncoder.from_bert_config(config), checkpoint)
    print(f"wrote {config_file} (vocab {vocab_size}), {checkpoint}.index")

    encoder = BertEncoder.from_bert_config(config_file)
    print("loaded:", load_google_checkpoint(encoder, checkpoint).summary())

    sentences = ["The baker mixes the dough late in the evening.", "Gulls follow the boats."]
    tokenizer = text.BertTokenizer(vocab_file, lower_case=True)
    pieces = tokenizer.tokenize(sentences).merge_dims(-2, -1)
    cls_id, sep_id = 2, 3
    rows = [[cls_id] + list(row) + [sep_id] for row in pieces.to_list()]
    length = max(len(row) for row in rows)
    input_ids = np.array([row + [0] * (length - len(row)) for row in rows], np.int32)
    input_mask = (np.arange(length)[None, :] < np.array([len(row) for row in rows])[:, None]).astype(np.int32)
    outputs = encoder({"input_ids": input_ids, "input_mask": input_mask,
                       "segment_ids": np.zeros_like(input_ids)}, training=False)
    np.set_printoptions(precision=4, suppress=True, linewidth=120)
    for sentence, pooled in zip(sentences, np.asarray(outputs["pooled_output"])):
        print(f"{sentence!r}\n  pooled_output[:8] = {pooled[:8]}")


if __name__ == "__main__":
    app.run(main)
