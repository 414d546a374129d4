"""Creates masked-LM / next-sentence pretraining TFRecords; Google's flags and schema.

The flags and the work: keras_bert_cli/create_pretraining_data.py;
`python tfrecord_tools/create_pretraining_data.py --helpshort` lists the flags.
"""

import os
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from keras_bert_cli.create_pretraining_data import console_main  # noqa: E402

if __name__ == "__main__":
    console_main()
