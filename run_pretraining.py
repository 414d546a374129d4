"""BERT pretraining (masked LM + next sentence) on tf.distribute: Google's flags, from one CPU to

The flags and the work: keras_bert_cli/run_pretraining.py;
`python run_pretraining.py --helpshort` lists the flags.
"""

from keras_bert_cli.run_pretraining import console_main

if __name__ == "__main__":
    console_main()
