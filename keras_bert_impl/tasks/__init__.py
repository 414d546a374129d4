"""Tasks: one `Task` subclass per kind of BERT problem (`base.Task` is the contract).

What lives here: the contract (`base`), pretraining (MLM + NSP, and MLM alone), classification and regression,
SQuAD spans, tagging (NER), multiple choice, the bare encoder, and the name registry. A task knows
its TFRecord features, builds its model on an encoder, and defines its losses, metrics and
serving signature. May import `layers`, `models`, `evaluation` and `tfrecord_tools`; never `training`,
`serving` or `runners`.
"""
