"""Learns a WordPiece `vocab.txt` from raw text files (tensorflow-text's learner).

The flags and the work: keras_bert_cli/build_vocab.py;
`python tfrecord_tools/build_vocab.py --helpshort` lists the flags.
"""

import sys

try:
    from keras_bert_cli.build_vocab import console_main
except ModuleNotFoundError as error:
    if error.name != "keras_bert_cli":
        raise
    # A checkout run by a Python that has not got the package on its path.
    sys.exit(
        f"{sys.argv[0]}: cannot import keras_bert_cli; run it with the checkout's .venv/bin/python (`make venv`), "
        "or `pip install -e .` into your environment, or run `python -m keras_bert_cli.build_vocab`"
    )

if __name__ == "__main__":
    console_main()
