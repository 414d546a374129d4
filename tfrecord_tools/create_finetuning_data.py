"""Creates fine-tuning TFRecords: GLUE-style classification, SQuAD v1.1/v2.0, CoNLL-2003 NER, SWAG.

The flags and the work: keras_bert_cli/create_finetuning_data.py;
`python tfrecord_tools/create_finetuning_data.py --helpshort` lists the flags.
"""

import os
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from keras_bert_cli.create_finetuning_data import console_main  # noqa: E402

if __name__ == "__main__":
    console_main()
