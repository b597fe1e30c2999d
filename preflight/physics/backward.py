"""The backward's own tensors: the temporaries of a layer's backward at its MLP activation,
the moment the last layer is back-propagated (every layer's saved tensors still alive), and
what else is alive while a checkpointed layer is recomputed (the inputs not yet consumed and
the gradients already made)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Optional

from preflight.physics import sac
from preflight.physics.inputs import Inputs
from preflight.physics.layers import frozen_of, head_bytes, layer_activations, layer_shape
from preflight.physics.phases import gradients_kept
from preflight.physics.result import LedgerLine
from preflight.physics.states import precision_of
from preflight.physics.tensors import block_params
from preflight.units import fmt_int


def backward_temporaries(x: Inputs, p, ffn: int, lifetime: str,
                         freed: tuple[int, str] = (0, "")) -> LedgerLine:
    """A layer's backward at its MLP activation, the largest moment of a layer's backward
    (measured): the gradient of the layer's output (fp32 under autocast: the residual
    stream's dtype) and the activation's two input gradients, alive together; less
    `freed` (bytes, what), saved tensors already released by then."""
    b, s, h = x.micro_batch, x.seq_len, x.hidden
    gres = 4 if p.autocast else p.act
    split_h = x.tp if x.sp else 1
    tmp = math.ceil(Fraction(gres * b * s * h, split_h)
                    + Fraction(2 * p.act * b * s * ffn, x.tp))
    which = "that layer's" if lifetime == "recompute" else "the last layer's"
    less = f" − {fmt_int(freed[0])} B ({freed[1]})" if freed[0] else ""
    return LedgerLine(
        key="activations",
        label=f"{which} backward temporaries (its output's gradient and the MLP "
              "activation's two input gradients)",
        bytes=max(tmp - freed[0], 0), lifetime=lifetime,
        formula=f"{b} × {fmt_int(s)} × ({gres}×{fmt_int(h)}"
                f"{f'/{split_h}' if split_h > 1 else ''} + 2 × {p.act}×{fmt_int(ffn)}"
                f"{f'/{x.tp}' if x.tp > 1 else ''}) B{less}",
        note="measured: the peak of a layer's backward is at its MLP activation's "
             "backward, with the gradient of the layer's output alive")


def head_and_pout_grads(x: Inputs, per: Fraction, ffn: int) -> tuple[int, str]:
    """The gradients that exist when the last layer's MLP activation is back-propagated
    (gradients not kept): the head's (V·h: the lm_head's, or the tied embedding's) and that
    layer's MLP output projection's, at `per` bytes per parameter."""
    pout = x.hidden * ffn + (x.hidden if x.family != "llama" else 0)  # type: ignore[operator]
    head = x.vocab * x.hidden  # type: ignore[operator]
    return (math.ceil(per * (head + pout)),
            f"{per} B × ({fmt_int(x.vocab)} × {fmt_int(x.hidden)} + {fmt_int(pout)}) "
            "(the head's and the MLP output projection's)")


def grad_bytes(lines: list[LedgerLine]) -> Optional[int]:
    grads = [ln.bytes for ln in lines if ln.lifetime == "gradients" and ln.key == "grads"]
    return None if any(v is None for v in grads) else sum(grads)  # type: ignore[arg-type]


def layer_backward_lines(x: Inputs, lines: list[LedgerLine]) -> list[LedgerLine]:
    """Without full checkpointing: the moment the last layer's MLP activation is
    back-propagated. Every layer's saved tensors are still alive (the logits and their
    gradients are freed), with that layer's backward temporaries and the gradients made
    before it (the head's and the MLP output projection's, unless the gradients are kept
    through the whole step). Lifetime `layer`. With a small vocabulary and a wide MLP this
    moment, not the loss's backward, is the peak. Not sized (no line, so no phase) for
    mixture-of-experts layers, a layer stack, pipeline stages or an unknown shape."""
    if (x.checkpointing == "full" or x.moe is not None or x.layer_stack is not None
            or x.pp > 1 or layer_activations(x) is None):
        return []
    p = precision_of(x)
    ffn = x.ffn_hidden or 4 * x.hidden  # type: ignore[operator]
    fz, r, _ = frozen_of(x)
    # the final norm's and the lm_head's saved inputs are released by the head's backward
    head, _ = head_bytes(x, layer_shape(x, p, ffn, r), "head", fz)
    out = [backward_temporaries(x, p, ffn, "layer",
                                (head, "the final norm's and lm_head's saved inputs, "
                                       "released by the head's backward"))]
    kept, _ = gradients_kept(x)
    if kept or x.lora:
        # kept: the gradients line is alive in this phase already; LoRA: the head and
        # the projections are frozen (the adapters' gradients are the only ones)
        return out
    g_known = grad_bytes(lines)
    if x.vocab is None or g_known is None or not x.trainable:
        return []
    gb, gtext = head_and_pout_grads(x, Fraction(g_known, x.trainable), ffn)
    out.append(LedgerLine(key="grads", label="gradients already made at the last layer's "
                          "MLP backward", bytes=gb, lifetime="layer", formula=gtext,
                          note="a part of the gradients line: they appear layer by layer "
                               "as backward goes down"))
    return out


def recompute_state_lines(x: Inputs, lines: list[LedgerLine]) -> list[LedgerLine]:
    """What else is alive while a checkpointed layer is recomputed and back-propagated (full
    checkpointing): the layer inputs not yet consumed and the gradients already made.

    Backward runs from the last layer down. While layer i is recomputed, the inputs of
    layers 0…i are still kept and the gradients of the head (V·h: the lm_head's, or the
    tied embedding's) and of layers i+1…L−1 exist (plus the first of layer i's own: its MLP
    output projection, P_out), unless the gradients are kept through the whole step anyway.
    Both grow linearly in i, so the largest moment is at one end: the first layer
    recomputed (L inputs, the head's gradient) or the last (1 input, L − 1 layers'
    gradients). Lines: the inputs and gradients of that moment, lifetime `recompute` (the
    gradient line is a part of the gradients, not more of them)."""
    la = layer_activations(x)
    if la is None or x.layers is None:
        return []
    L = x.layers
    kept, _ = gradients_kept(x)
    g_known = grad_bytes(lines)
    # op-level selective checkpointing keeps each layer's saved op outputs with its input
    inp = la.total if x.checkpointing == sac.MODE else la.layer_input
    ffn = x.ffn_hidden or 4 * x.hidden  # type: ignore[operator]
    if kept:
        end, n_in, gb, gtext = "first", L, 0, ""
    elif (x.lora or x.pp > 1 or x.vocab is None or g_known is None
          or not x.trainable):
        # the part already made is not sized here: all of them (an upper bound)
        end, n_in, gb = "first", L, g_known
        gtext = "all gradients (an upper bound: the part made so far is not sized here)"
    else:
        per = Fraction(g_known, x.trainable)             # bytes per trainable parameter
        blk, btext = block_params(x.family, x.hidden, ffn, x.heads, x.kv)  # type: ignore[arg-type]
        pout = x.hidden * ffn + (x.hidden if x.family != "llama" else 0)  # type: ignore[operator]
        head = x.vocab * x.hidden  # type: ignore[operator]
        first = math.ceil(per * (head + pout)) + L * inp
        last = math.ceil(per * (head + (L - 1) * blk + pout)) + inp
        if first >= last:
            end, n_in = "first", L
            gb, gtext = head_and_pout_grads(x, per, ffn)
        else:
            end, n_in, gb = "last", 1, math.ceil(per * (head + (L - 1) * blk + pout))
            gtext = (f"{per} B × ({fmt_int(x.vocab)} × {fmt_int(x.hidden)} + {L - 1} × "
                     f"({btext}) + {fmt_int(pout)}) (the head's, {L - 1} "
                     f"layer{'s' if L > 2 else ''}' and layer 0's MLP output projection's)")
    which = ("the first layer recomputed (the last of the model)" if end == "first"
             else "the last layer recomputed (layer 0)")
    kept_what = ("layers' kept tensors (op-level selective)" if x.checkpointing == sac.MODE
                 else "layer inputs")
    out = [LedgerLine(key="activations",
                      label=f"checkpointed {kept_what} still kept at {which}",
                      bytes=n_in * inp, lifetime="recompute",
                      formula=f"{n_in} × {fmt_int(inp)} B")]
    if not kept:
        out.append(LedgerLine(key="grads", label=f"gradients already made at {which}",
                              bytes=gb, lifetime="recompute", formula=gtext,
                              note="a part of the gradients line: they appear layer by layer "
                                   "as backward goes down"))
    return out
