"""Learns a WordPiece `vocab.txt` from raw text files (tensorflow-text's learner).

The flags and the work: keras_bert_cli/build_vocab.py;
`python tfrecord_tools/build_vocab.py --helpshort` lists the flags.
"""

import os
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from keras_bert_cli.build_vocab import console_main  # noqa: E402

if __name__ == "__main__":
    console_main()
