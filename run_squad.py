"""BERT fine-tuning on SQuAD v1.1 / v2.0 with Google's flags and output files.

The flags and the work: keras_bert_cli/run_squad.py;
`python run_squad.py --helpshort` lists the flags.
"""

from keras_bert_cli.run_squad import console_main

if __name__ == "__main__":
    console_main()
