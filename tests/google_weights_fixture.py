"""Random weights under Google's TF1 names and shapes, written from Google's layout, not our table."""

import numpy as np


def google_shapes(config, heads=()):
    """{google_name: shape} of a BERT TF1 checkpoint of `config`, plus the named heads."""
    h, i, v = config.hidden_size, config.intermediate_size, config.vocab_size
    shapes = {
        "bert/embeddings/word_embeddings": (v, h),
        "bert/embeddings/token_type_embeddings": (config.type_vocab_size, h),
        "bert/embeddings/position_embeddings": (config.max_position_embeddings, h),
        "bert/embeddings/LayerNorm/gamma": (h,),
        "bert/embeddings/LayerNorm/beta": (h,),
        "bert/pooler/dense/kernel": (h, h),
        "bert/pooler/dense/bias": (h,),
    }
    for layer in range(config.num_hidden_layers):
        p = f"bert/encoder/layer_{layer}/"
        for part in ("query", "key", "value"):
            shapes[f"{p}attention/self/{part}/kernel"] = (h, h)
            shapes[f"{p}attention/self/{part}/bias"] = (h,)
        shapes[f"{p}attention/output/dense/kernel"] = (h, h)
        shapes[f"{p}attention/output/dense/bias"] = (h,)
        shapes[f"{p}attention/output/LayerNorm/gamma"] = (h,)
        shapes[f"{p}attention/output/LayerNorm/beta"] = (h,)
        shapes[f"{p}intermediate/dense/kernel"] = (h, i)
        shapes[f"{p}intermediate/dense/bias"] = (i,)
        shapes[f"{p}output/dense/kernel"] = (i, h)
        shapes[f"{p}output/dense/bias"] = (h,)
        shapes[f"{p}output/LayerNorm/gamma"] = (h,)
        shapes[f"{p}output/LayerNorm/beta"] = (h,)
    if "pretraining" in heads:
        shapes.update(
            {
                "cls/predictions/transform/dense/kernel": (h, h),
                "cls/predictions/transform/dense/bias": (h,),
                "cls/predictions/transform/LayerNorm/gamma": (h,),
                "cls/predictions/transform/LayerNorm/beta": (h,),
                "cls/predictions/output_bias": (v,),
                "cls/seq_relationship/output_weights": (2, h),
                "cls/seq_relationship/output_bias": (2,),
            }
        )
    return shapes


def random_google_weights(config, heads=(), seed=0, scale=0.2):
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in google_shapes(config, heads).items():
        value = rng.normal(0.0, scale, shape)
        if name.endswith("gamma"):
            value += 1.0
        weights[name] = value.astype(np.float32)
    return weights
