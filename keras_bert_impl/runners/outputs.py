"""The files the runners write in Google's formats (the Trainer knows none of them)."""

from keras_bert_common.files import atomic_output


def write_eval_results(results, path):
    """Google's eval_results.txt: `key = value` lines, sorted by key."""
    with atomic_output(path) as writer:
        for key in sorted(results):
            writer.write(f"{key} = {results[key]}\n")
