"""Extracts pre-computed feature vectors from BERT (Google's extract_features.py flags and output).

The flags and the work: keras_bert_cli/extract_features.py;
`python extract_features.py --helpshort` lists the flags.
"""

from keras_bert_cli.extract_features import console_main

if __name__ == "__main__":
    console_main()
