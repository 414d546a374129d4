"""Converts a BERT model directory between Google's and Hugging Face's formats, heads included.

The flags and the work: keras_bert_cli/convert_checkpoint.py;
`python convert_checkpoint.py --helpshort` lists the flags.
"""

from keras_bert_cli.convert_checkpoint import console_main

if __name__ == "__main__":
    console_main()
