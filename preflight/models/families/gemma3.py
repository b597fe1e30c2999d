"""Gemma 3 as released at 4B and above: the gemma3_text decoder, a SigLIP vision tower
and the projector between them.
"""

from __future__ import annotations

from typing import Optional

from preflight.models.families.llama import llama_like
from preflight.models.families.siglip import siglip_vision
from preflight.models.shape import (Head, ModelShape, ParamCount, add_decoder_head, cfg_bool,
                                    finish_shape)


def gemma3(cfg: dict, head: str, num_labels: Optional[int]) -> ModelShape:
    """Gemma 3 as released at 4B and above: the `gemma3_text` decoder (`text_config`), a
    SigLIP vision tower (`vision_config`) and the projector between them (one weight matrix
    and an RMSNorm). The causal-LM class is the image-text one (`…ForConditionalGeneration`)."""
    text = llama_like("gemma3_text", dict(cfg.get("text_config") or {}), "base", None)
    c = ParamCount()
    c.total, c.linears = text.params, list(text.linears)
    vh = siglip_vision(c, dict(cfg.get("vision_config") or {}))
    c.add(vh * text.hidden + vh)                             # mm_input_projection, soft_emb_norm
    tied = cfg_bool(cfg.get("text_config") or {}, "tie_word_embeddings", True)
    if head in ("causal_lm", "seq2seq_lm"):
        head = "causal_lm"
    add_decoder_head(c, Head(head, text.vocab, text.hidden, tied, num_labels, cfg))
    return finish_shape(c, layers=text.layers, hidden=text.hidden, heads=text.heads,
                        kv_heads=text.kv_heads, ffn_hidden=text.ffn_hidden, vocab=text.vocab,
                        family="llama", arch="gemma3", head_dim=text.head_dim, tied=tied, head=head)
