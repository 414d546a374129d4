"""A linear probe of pretraining checkpoints: how much a sentence classifier can read from the
frozen encoder's features, before any fine-tuning (logistic regression, scikit-learn).

    .venv/bin/python -m bench.pretraining_probe --records_dir=RUN/sst2 --bert_config_file=CONFIG \
        --checkpoints=random,RUNS/ours_static/ckpt-1000,...

--records_dir is a folder where run_classifier wrote `train.tfrecord` and `dev.tfrecord` (with its
`meta.json`), e.g. one of bench/pretraining_quality.py's SST-2 fine-tuning runs. For each checkpoint
("random": the config's random initialisation, seed 12345) it prints dev accuracy of a logistic
regression trained on the training records' features: the mean of the final hidden states over the
real tokens, the mean of the embedding layer's output, and the pooled [CLS] output. Probes that fall
as pretraining goes on say the encoder's features carry less about the words than random ones.
"""

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FEATURES = ("mean of the final hidden states", "mean of the embedding output", "pooled output")


def features(encoder, dataset):
    """[examples, hidden] per entry of FEATURES, and the labels."""
    import numpy as np
    import tensorflow as tf

    parts, labels = [[] for _ in FEATURES], []
    for batch in dataset:
        outputs = encoder({name: batch[name] for name in ("input_ids", "input_mask", "segment_ids")}, training=False)
        mask = tf.cast(batch["input_mask"], tf.float32)[..., None]
        count = tf.reduce_sum(mask, axis=1)
        parts[0].append((tf.reduce_sum(outputs["sequence_output"] * mask, axis=1) / count).numpy())
        parts[1].append((tf.reduce_sum(outputs["embedding_output"] * mask, axis=1) / count).numpy())
        parts[2].append(outputs["pooled_output"].numpy())
        labels.append(batch["label_ids"].numpy().reshape(-1))
    return [np.concatenate(part) for part in parts], np.concatenate(labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records_dir", required=True)
    parser.add_argument("--bert_config_file", required=True)
    parser.add_argument("--checkpoints", required=True, help="comma list; 'random' for random weights")
    args = parser.parse_args()
    import keras
    from sklearn.linear_model import LogisticRegression

    from keras_bert_impl.checkpoints.init_checkpoint import initialize_from_checkpoint
    from keras_bert_impl.models.bert_config import BertConfig
    from keras_bert_impl.tasks.classification import ClassificationTask
    from keras_bert_impl.training.input_pipeline import make_tfrecord_dataset

    with open(os.path.join(args.records_dir, "meta.json"), encoding="utf-8") as reader:
        meta = json.load(reader)
    config = BertConfig.from_json_file(args.bert_config_file)
    task = ClassificationTask(config, meta["max_seq_length"], meta["labels"])
    spec = task.feature_spec(is_training=False)
    splits = {
        split: make_tfrecord_dataset(
            [os.path.join(args.records_dir, f"{split}.tfrecord")], spec, 128, False, drop_remainder=False
        )
        for split in ("train", "dev")
    }
    print(f"| checkpoint | {' | '.join(FEATURES)} |\n|---|{'---|' * len(FEATURES)}")
    for checkpoint in args.checkpoints.split(","):
        keras.utils.set_random_seed(12345)
        encoder = task.new_encoder()
        if checkpoint != "random":
            initialize_from_checkpoint(encoder, checkpoint)
        (train, train_labels), (dev, dev_labels) = (features(encoder, splits[s]) for s in ("train", "dev"))
        assert len(dev_labels) == meta["counts"]["dev"], "every dev record is probed"
        scores = [
            LogisticRegression(max_iter=2000).fit(x, train_labels).score(y, dev_labels) for x, y in zip(train, dev)
        ]
        print(f"| {checkpoint} | {' | '.join(f'{score:.4f}' for score in scores)} |", flush=True)


if __name__ == "__main__":
    main()
