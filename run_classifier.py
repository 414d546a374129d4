"""BERT fine-tuning for sentence (pair) classification and regression: GLUE tasks, XNLI, any TSV.

The flags and the work: keras_bert_cli/run_classifier.py;
`python run_classifier.py --helpshort` lists the flags.
"""

from keras_bert_cli.run_classifier import console_main

if __name__ == "__main__":
    console_main()
