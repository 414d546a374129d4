"""BERT fine-tuning for named-entity recognition on CoNLL-2003 files (eng.train, eng.testa, eng.testb).

The flags and the work: keras_bert_cli/run_ner.py;
`python run_ner.py --helpshort` lists the flags.
"""

from keras_bert_cli.run_ner import console_main

if __name__ == "__main__":
    console_main()
