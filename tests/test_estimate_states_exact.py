"""Model states to the byte: the registered buffers, torch.optim's `step` counters (and where
they live), Adafactor's factored state — against the tensors torch itself holds after a real
optimizer step on CPU."""

import collections
import json
import subprocess
import sys

import pytest

from preflight.models import formulas
from preflight.physics import estimate
from preflight.plan import TrainingPlan

TINY_LLAMA = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=344, vocab_size=1000,
                  max_position_embeddings=256)
TINY_BERT = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                 intermediate_size=512, vocab_size=1000)


def _tensors(shape):
    return {"trainable": [[list(d), n] for d, n in shape.param_shapes],
            "buffers": [[name, list(d), t] for name, d, t in shape.buffers]}


def _lines(**kw):
    return estimate(TrainingPlan.from_values(kw)).ledger.lines


def _line(lines, label):
    hits = [ln for ln in lines if label in ln.label]
    assert len(hits) == 1, [ln.label for ln in lines]
    return hits[0]


def _llama(**kw):
    shape = formulas.count("llama", TINY_LLAMA)
    return dict(params=shape.params, model_tensors=_tensors(shape), layers=2, hidden=128,
                heads=4, kv_heads=2, ffn_hidden=344, vocab=1000, family="llama", **kw)


# ------------------------------------------------------------------ the architecture's tensors


def test_llama_tensors_by_shape():
    shape = formulas.count("llama", TINY_LLAMA)
    got = collections.Counter()
    for d, n in shape.param_shapes:
        got[d] += n
    # embed, lm_head; q, o; k, v (GQA width 64); gate, up; down; 2 norms per layer + final
    assert got == {(1000, 128): 2, (128, 128): 4, (64, 128): 4, (344, 128): 4,
                   (128, 344): 2, (128,): 5}
    assert shape.buffers == [("rotary_emb.inv_freq", (16,), "float"),
                             ("rotary_emb.original_inv_freq", (16,), "float")]


def test_bert_registers_position_and_token_type_ids():
    shape = formulas.count("bert", TINY_BERT)
    assert shape.buffers == [("position_ids", (1, 512), "int64"),
                             ("token_type_ids", (1, 512), "int64")]
    lines = _lines(params=shape.params, model_tensors=_tensors(shape), optimizer="sgd",
                   param_dtype="fp32")
    buf = _line(lines, "registered buffers")
    assert buf.bytes == 8192 and buf.key == "params"
    assert buf.formula == "8 B × 2 × 512 (position_ids, token_type_ids)"


def test_an_architecture_without_shapes_has_no_tensor_lines():
    shape = formulas.count("gpt_neox", {})
    assert shape.param_shapes is None and shape.buffers is None


# ------------------------------------------------------------------ buffers


@pytest.mark.parametrize("cast,nbytes", [(False, 4 * 2 * 16), (True, 2 * 2 * 16)])
def test_rotary_tables_are_fp32_unless_the_model_is_cast(cast, nbytes):
    """transformers creates inv_freq in fp32 even for a model created or loaded in bf16;
    `model.to(torch.bfloat16)` casts it with the weights."""
    lines = _lines(**_llama(optimizer="sgd", param_dtype="bf16", mixed_precision="none",
                            model_cast=cast))
    assert _line(lines, "registered buffers").bytes == nbytes


# ------------------------------------------------------------------ step counters


def test_adamw_step_counts_are_host_memory_on_a_gpu():
    step = _line(_lines(**_llama(optimizer="adamw", param_dtype="fp32")), "step counts")
    assert step.bytes == 0
    assert "on the host: 4 B × 21 tensors" in step.formula and "= 84 B" in step.formula


@pytest.mark.parametrize("kw", [{"device": "cpu"}, {"optimizer_fused": True}])
def test_adamw_step_counts_on_the_device(kw):
    step = _line(_lines(**_llama(optimizer="adamw", param_dtype="fp32", **kw)), "step counts")
    assert step.bytes == 84 and step.key == "optimizer"


def test_adafactor_step_counts_stay_on_the_host_even_fused():
    lines = _lines(**_llama(optimizer="adafactor", param_dtype="fp32", optimizer_fused=True))
    assert _line(lines, "step counts").bytes == 0
    lines = _lines(**_llama(optimizer="adafactor", param_dtype="fp32", device="cpu"))
    assert _line(lines, "step counts").bytes == 84


def test_lora_steps_its_adapters():
    """peft's lora_A (r, in) and lora_B (out, r) on q, k, v, o of 2 layers: 16 tensors."""
    from preflight.models.lora import adapter_shapes
    shape = formulas.count("llama", TINY_LLAMA)
    got = adapter_shapes(shape, 8, ["q_proj", "k_proj", "v_proj", "o_proj"])
    assert sorted(got) == sorted([((8, 128), 2), ((128, 8), 2), ((8, 128), 2), ((64, 8), 2),
                                  ((8, 128), 2), ((64, 8), 2), ((8, 128), 2), ((128, 8), 2)])
    assert sum(n for _, n in got) == 16


# ------------------------------------------------------------------ Adafactor


def test_adafactor_row_and_column_variances_from_the_shapes():
    """torch.optim.Adafactor: a matrix keeps its row variance (last dim reduced) and column
    variance (second-to-last reduced), a vector its full variance: for the tiny llama
    2 × (1000 + 128) + 2 × ((128+128)·2 + (64+128)·2 + (344+128)·3) + 5 × 128 = 7,520."""
    opt = [ln for ln in _lines(**_llama(optimizer="adafactor", param_dtype="fp32"))
           if ln.label.startswith("Adafactor factored")]
    assert len(opt) == 1 and opt[0].bytes == 4 * 7520 and opt[0].formula == "4 B × 7,520"


# ------------------------------------------------------------------ against torch

SCRIPT = """import torch
from transformers import {cfg}, {cls}
config = {cfg}({kw}, attn_implementation="sdpa")
model = {cls}(config)
{cast}device = "cpu"
model = model.to(device)
optimizer = torch.optim.{opt}
for step in range(10):
    x = torch.randint(0, 1000, (2, 64))
    loss = model(input_ids=x, labels=x).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""


def _real_states(cfg, cls, kw, cast, opt):
    """The bytes torch holds between steps: weights, buffers, optimizer state (steps too)."""
    import torch
    import transformers
    model = getattr(transformers, cls)(getattr(transformers, cfg)(**kw))
    if cast:
        model = model.to(torch.bfloat16)
    o = eval("torch.optim." + opt.replace("model.parameters()", "params"),
             {"torch": torch, "params": list(model.parameters())})
    x = torch.randint(0, 1000, (2, 64))
    model(input_ids=x, labels=x).loss.backward()
    o.step()
    o.zero_grad()
    seen = {}
    for t in [*model.parameters(), *model.buffers(),
              *(v for st in o.state.values() for v in st.values() if torch.is_tensor(v))]:
        seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return sum(seen.values())


@pytest.mark.parametrize("cfg,cls,kw,cast,opt", [
    ("LlamaConfig", "LlamaForCausalLM", TINY_LLAMA, True,
     "AdamW(model.parameters(), lr=1e-4)"),
    ("LlamaConfig", "LlamaForCausalLM", TINY_LLAMA, False,
     "Adafactor(model.parameters(), lr=1e-3)"),
    ("BertConfig", "BertForMaskedLM", TINY_BERT, False, "AdamW(model.parameters(), lr=1e-4)"),
])
def test_script_states_equal_torch_to_the_byte(tmp_path, cfg, cls, kw, cast, opt):
    pytest.importorskip("torch", reason="torch==2.13.0 not installed (test extra)")
    pytest.importorskip("transformers")
    path = tmp_path / "train.py"
    path.write_text(SCRIPT.format(cfg=cfg, cls=cls, opt=opt,
                                  kw=", ".join(f"{k}={v!r}" for k, v in kw.items()),
                                  cast="model = model.to(torch.bfloat16)\n" if cast else ""))
    r = subprocess.run([sys.executable, "-m", "preflight", "estimate", str(path),
                        "--format", "json"], capture_output=True, text=True, timeout=300)
    b = json.loads(r.stdout)["jobs"][0]["ledger"]["per_gpu_bytes"]
    # between steps zero_grad() has set the gradients to None
    assert b["params"] + b["optimizer"] + b["master"] == _real_states(cfg, cls, kw, cast, opt)
