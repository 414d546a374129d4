"""Subprocess for the fine-tuning distribution test: run_classifier with length-bucketed batches
under a chosen strategy (two logical CPU devices configured before TensorFlow starts), dropout
off so that one device and two replicas must agree; prints the losses and dev metrics."""

import argparse
import json
import pathlib


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir")
    parser.add_argument("--data_dir")
    parser.add_argument("--output_dir")
    parser.add_argument("--strategy")
    args = parser.parse_args()
    from tests.conftest import split_cpu

    split_cpu(2)
    from keras_bert_impl.layers.dropout import Dropout
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tests.finetuning_fixtures import _options
    from tfrecord_tools.classification_data import ClassificationProcessor

    Dropout.call = lambda self, inputs, training=False: inputs  # deterministic: replicas must match one device
    logs = []
    options = _options(
        pathlib.Path(args.model_dir),
        args.output_dir,
        max_seq_length=32,
        do_train=True,
        do_eval=True,
        train_batch_size=4,
        eval_batch_size=4,
        num_train_epochs=2.0,
        iterations_per_loop=1,
        distribution_strategy=args.strategy,
    )
    processor = ClassificationProcessor.for_task("MRPC", args.data_dir)
    result = run_classifier(options, "MRPC", args.data_dir, processor, log=logs.append)
    replicas = int(next(line for line in logs if line.startswith("strategy")).split(" with ")[1].split()[0])
    losses = [loop["loss"] for loop in result.train.history]
    print(json.dumps({"losses": losses, "eval": result.eval, "replicas": replicas}))


if __name__ == "__main__":
    main()
