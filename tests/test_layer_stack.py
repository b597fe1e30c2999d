"""Custom MLP / CNN modules: the layers their forward applies, what each saves for backward
(against autograd on CPU), and the job sized from them — or not sized, with the reason."""

import json

import libcst as cst
import pytest

from preflight.frameworks.torchrun import _CNN
from preflight.models.forward import read_forward
from preflight.models.modules import build_modules
from preflight.physics.stack import stack_activations
from tests.conftest import run_cli

MLP = """\
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, d_in=512, width=1024, classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, width), nn.ReLU(), nn.Dropout(0.0),
                                 nn.Linear(width, width), nn.GELU(), nn.Linear(width, classes))

    def forward(self, x):
        return self.net(x)
"""


def _stack(src: str, cls: str, shape: tuple) -> dict:
    n, pieces, built = build_modules(cst.parse_module(src), cls)
    assert built is not None, pieces
    ops, why = read_forward(built[0], built[1], shape)
    assert ops is not None, why
    from dataclasses import asdict
    return {"ops": [asdict(o) for o in ops]}


def test_mlp_stack_saved_bytes():
    st = _stack(MLP, "MLP", (512,))
    # per sample, fp32: the input (Linear 1), the ReLU output (ReLU and Linear 2), the
    # Linear 2 output (GELU saves its input), the GELU output (Linear 3); Dropout(0) is none
    assert [o["label"] for o in st["ops"]] == [
        "Linear(512, 1024) input", "ReLU output", "Linear(1024, 1024) input", "GELU input",
        "Linear(1024, 10) input"]
    sa = stack_activations(st, 8, 4, 4)
    assert sa.saved == 8 * 4 * (512 + 1024 + 1024 + 1024)
    assert sa.terms == "2,048 + 4,096 + 4,096 + 4,096"


def test_cnn_stack_saved_bytes():
    st = _stack(_CNN, "Net", (3, 32, 32))
    sa = stack_activations(st, 2, 4, 4)
    # input 3·32², conv1 out (BatchNorm input) 64·32², in-place ReLU output (MaxPool input)
    # 64·32², pool indices 64·16² (int64), pool out 64·16², conv2 out 128·16², ReLU out
    # 128·16², pooled 128 (Linear input); BatchNorm mean and inverse std 2·(64 + 128) fp32
    per = 4 * (3 * 1024 + 2 * 64 * 1024 + 64 * 256 + 2 * 128 * 256 + 128) + 8 * 64 * 256
    assert sa.saved == 2 * per + 4 * 2 * (64 + 128)


@pytest.mark.parametrize("src,cls,shape", [(MLP, "MLP", (512,)), (_CNN, "Net", (3, 32, 32))])
def test_stack_matches_autograd(src, cls, shape):
    torch = pytest.importorskip("torch")
    ns: dict = {}
    exec(src.split("\nmodel = ")[0], ns)
    torch.manual_seed(0)
    model = ns[cls]().train()
    skip = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    seen: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in skip and st.nbytes():
            seen[st.data_ptr()] = st.nbytes()
        return t

    x = torch.randn(4, *shape)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    assert sum(seen.values()) == stack_activations(_stack(src, cls, shape), 4, 4, 4).saved


def test_unknown_forward_is_said(tmp_path):
    src = MLP.replace("return self.net(x)", "if x.dim() > 2:\n            x = x.flatten(1)\n"
                                            "        return self.net(x)")
    st = build_modules(cst.parse_module(src), "MLP")[2]
    ops, why = read_forward(st[0], st[1], (512,))
    assert ops is None and why == "control flow in the forward is not modelled"


SCRIPT = MLP + """

model = MLP()
batch_size = 64
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(100):
    x = torch.randn(batch_size, 512)
    y = torch.randint(0, 10, (batch_size,))
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""


def test_check_path_sizes_a_custom_mlp(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    r = run_cli("estimate", str(tmp_path / "train.py"), "--format", "json")
    job = json.loads(r.stdout)["jobs"][0]
    led = job["ledger"]
    n = 512 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10
    assert job["facts"]["params"]["value"] == n
    saved = [ln for ln in led["lines"] if ln["label"].startswith("MLP's layers")]
    assert [(ln["bytes"], ln["formula"]) for ln in saved] == \
        [(64 * 4 * 3584, "64 × (2,048 + 4,096 + 4,096 + 4,096) B")]
    assert led["tiers"]["tensors"] is not None and "micro_batch" not in led["unknown"]


def test_check_path_without_the_input_shape_is_not_sized(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT.replace("torch.randn(batch_size, 512)",
                                                      "next(loader)"))
    r = run_cli("estimate", str(tmp_path / "train.py"), "--format", "json")
    led = json.loads(r.stdout)["jobs"][0]["ledger"]
    assert led["tiers"]["tensors"] is None
    notes = [ln["note"] for ln in led["lines"] if ln["label"].startswith("transformer layers")]
    assert notes == ["unknown: MLP: the shape of the tensor the script gives the model is not "
                     "known (e.g. x = torch.randn(batch_size, 3, 32, 32); model(x))"]


def test_a_check_that_counts_a_model_class_never_imports_libcst(tmp_path):
    # the class counter and the forward reader walk the `ast` tree the extractor parsed;
    # libcst is for writing fixes only. Cold, then from the cache (the counter parses the
    # script again, with `ast`)
    (tmp_path / "train.py").write_text(SCRIPT)
    for run in ("cold", "warm"):
        r = run_cli("check", "--format", "json", "train.py", cwd=str(tmp_path),
                    env={"PYTHONPROFILEIMPORTTIME": "1"})
        assert r.returncode == 0, r.stderr[-2000:]
        job = json.loads(r.stdout)["jobs"][0]
        assert job["facts"]["params"]["value"] == 512 * 1024 + 1024 + 1024 * 1024 + 1024 + 10250
        # the forward read too: the layers it applies size the activations
        assert any(ln["label"].startswith("MLP's layers: saved activations (5 layers")
                   for ln in job["ledger"]["lines"])
        imported = {ln.rsplit("|", 1)[-1].strip().split(".")[0]
                    for ln in r.stderr.splitlines() if ln.startswith("import time:")}
        assert "preflight" in imported and "libcst" not in imported, run
    assert (tmp_path / ".preflight_cache").is_dir()
