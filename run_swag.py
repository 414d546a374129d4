"""BERT fine-tuning on SWAG multiple choice (rowanz/swagaf train.csv / val.csv).

The flags and the work: keras_bert_cli/run_swag.py;
`python run_swag.py --helpshort` lists the flags.
"""

from keras_bert_cli.run_swag import console_main

if __name__ == "__main__":
    console_main()
