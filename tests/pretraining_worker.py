"""Subprocess for the distribution tests: trains a few steps with a chosen strategy (two logical
CPU devices are configured before TensorFlow starts) and prints losses and final weights."""

import argparse
import json
import os


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--setup")
    parser.add_argument("--strategy")
    parser.add_argument("--output_dir")
    parser.add_argument("--steps", type=int)
    args = parser.parse_args()
    import tensorflow as tf

    from tests.conftest import split_cpu

    split_cpu(2)
    from keras_bert_impl.runners.run_pretraining import PretrainingOptions, run_pretraining
    from tests.pretraining_fixtures import pretraining_flags

    logs = []
    flags = pretraining_flags(
        json.loads(args.setup),
        args.output_dir,
        num_train_steps=args.steps,
        iterations_per_loop=1,
        distribution_strategy=args.strategy,
        export_google_checkpoint=True,
    )
    result = run_pretraining(PretrainingOptions(**flags), log=logs.append)
    losses = [loop["loss"] for loop in result.train.history]
    replicas = int(next(line for line in logs if line.startswith("strategy")).split(" with ")[1].split()[0])
    reader = tf.train.load_checkpoint(os.path.join(args.output_dir, "bert_model.ckpt"))
    weights = [
        float(x) for name in sorted(reader.get_variable_to_shape_map()) for x in reader.get_tensor(name).ravel()[:50]
    ]
    print(json.dumps({"losses": losses, "weights": weights, "replicas": replicas}))


if __name__ == "__main__":
    main()
