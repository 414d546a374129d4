"""Creates masked-LM / next-sentence pretraining TFRecords; Google's flags and schema.

The flags and the work: keras_bert_cli/create_pretraining_data.py;
`python tfrecord_tools/create_pretraining_data.py --helpshort` lists the flags.
"""

import sys

try:
    from keras_bert_cli.create_pretraining_data import console_main
except ModuleNotFoundError as error:
    if error.name != "keras_bert_cli":
        raise
    # A checkout run by a Python that has not got the package on its path.
    sys.exit(
        f"{sys.argv[0]}: cannot import keras_bert_cli; run it with the checkout's .venv/bin/python (`make venv`), "
        "or `pip install -e .` into your environment, or run `python -m keras_bert_cli.create_pretraining_data`"
    )

if __name__ == "__main__":
    console_main()
