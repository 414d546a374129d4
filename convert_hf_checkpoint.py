"""Writes Hugging Face-format BERT weights (config.json + model.safetensors + vocab.txt) as a

The flags and the work: keras_bert_cli/convert_hf_checkpoint.py;
`python convert_hf_checkpoint.py --helpshort` lists the flags.
"""

from keras_bert_cli.convert_hf_checkpoint import console_main

if __name__ == "__main__":
    console_main()
