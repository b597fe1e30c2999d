"""The encoders BERT and RoBERTa, with their pooler and their task heads.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.shape import (ModelShape, ParamCount, UnsupportedArchitecture, cfg_bool,
                                    cfg_int, cfg_num_labels, finish_shape)


def bert(arch: str, cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    V = cfg_int(cfg, "vocab_size", default=50265 if arch == "roberta" else 30522)
    h = cfg_int(cfg, "hidden_size", default=768)
    L = cfg_int(cfg, "num_hidden_layers", default=12)
    nh = cfg_int(cfg, "num_attention_heads", default=12)
    inter = cfg_int(cfg, "intermediate_size", default=3072)
    P = cfg_int(cfg, "max_position_embeddings", default=512)
    T = cfg_int(cfg, "type_vocab_size", default=2)
    c = ParamCount()
    c.tensor(V, h)                                           # word_embeddings
    c.tensor(P, h)                                           # position_embeddings
    c.tensor(T, h)                                           # token_type_embeddings
    c.tensor(h, count=2)                                     # embeddings.LayerNorm
    # the embeddings register position_ids and token_type_ids, int64, (1, max positions)
    c.buffers = [("position_ids", (1, P), "int64"), ("token_type_ids", (1, P), "int64")]
    for name in ("query", "key", "value"):
        c.linear(name, h, h, count=L, bias=True)
    c.linear("dense", h, h, count=L, bias=True)              # attention.output.dense
    c.linear("dense", h, inter, count=L, bias=True)          # intermediate.dense
    c.linear("dense", inter, h, count=L, bias=True)          # output.dense
    c.tensor(h, count=L * 4)                                 # two LayerNorms per layer
    if head in ("base", "seq_cls") and arch == "bert":
        c.linear("dense", h, h, bias=True, in_block=False)   # pooler
    if head == "base" and arch == "roberta":
        c.linear("dense", h, h, bias=True, in_block=False)   # pooler (add_pooling_layer)
    if head == "masked_lm":
        c.linear("dense", h, h, bias=True, in_block=False)   # transform / lm_head.dense
        c.tensor(h, count=2)                                 # transform.LayerNorm
        c.tensor(V)                                          # decoder bias (tied weight)
        if not cfg_bool(cfg, "tie_word_embeddings", True):
            # untied, the decoder has its own weight and its own bias (tied, its bias is
            # the head's `bias`)
            c.linear("decoder", h, V, bias=True, in_block=False)
    elif head == "seq_cls":
        n = cfg_num_labels(cfg, num_labels)
        if arch == "roberta":                                # classifier.dense + out_proj
            c.linear("dense", h, h, bias=True, in_block=False)
            c.linear("out_proj", h, n, bias=True, in_block=False)
        else:
            c.linear("classifier", h, n, bias=True, in_block=False)
    elif head == "token_cls":
        c.linear("classifier", h, cfg_num_labels(cfg, num_labels), bias=True, in_block=False)
    elif head != "base":
        raise UnsupportedArchitecture(f"head {head!r} not modelled for {arch}")
    return finish_shape(c, layers=L, hidden=h, heads=nh, kv_heads=nh, ffn_hidden=inter, vocab=V,
                        family="bert", arch=arch, head_dim=h // nh, tied=True, head=head)
