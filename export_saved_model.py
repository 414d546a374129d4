"""Exports a BERT model as a SavedModel that serves raw text (tokenization in the graph), token

The flags and the work: keras_bert_cli/export_saved_model.py;
`python export_saved_model.py --helpshort` lists the flags.
"""

from keras_bert_cli.export_saved_model import console_main

if __name__ == "__main__":
    console_main()
