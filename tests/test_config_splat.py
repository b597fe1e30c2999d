"""A model config built from a mapping not known statically (`Cfg(**meta["model"])`,
the usual way a checkpoint's saved config is rebuilt): the fields it does not name
explicitly are unknown, never the dataclass's defaults."""
import json

from tests.conftest import run_cli

MODEL = '''\
from dataclasses import dataclass
import torch.nn as nn

@dataclass
class NetConfig:
    n_layer: int = 12
    n_head: int = 6
    n_embd: int = 768
    vocab_size: int = 32768

class Net(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.h = nn.ModuleList([nn.Linear(config.n_embd, config.n_embd)
                                for _ in range(config.n_layer)])
'''

TRAIN = '''\
import json, torch
{imports}
meta = json.load(open("meta.json"))
config = NetConfig({call})
model = Net(config)
opt = torch.optim.AdamW(model.parameters())
'''


def _facts(tmp_path, call, same_file=False):
    imports = "from model import Net, NetConfig"
    if same_file:
        imports = MODEL
    (tmp_path / "train.py").write_text(TRAIN.format(imports=imports, call=call))
    files = ["train.py"]
    if not same_file:
        (tmp_path / "model.py").write_text(MODEL)
        files.append("model.py")
    r = run_cli("check", "--format", "json", "--exit-zero", "--no-cache", *files,
                cwd=str(tmp_path))
    assert "Traceback" not in r.stderr, r.stderr
    return json.loads(r.stdout)["jobs"][0]["facts"]


def test_unknown_mapping_leaves_every_unnamed_field_unknown(tmp_path):
    f = _facts(tmp_path, '**meta["model_config"]')
    for k in ("layers", "hidden", "heads", "vocab", "params"):
        assert f[k]["origin"] == "unknown", (k, f[k])
        assert f[k]["value"] is None


def test_a_keyword_beside_the_mapping_is_still_read(tmp_path):
    f = _facts(tmp_path, 'n_layer=4, **meta["model_config"]')
    assert (f["layers"]["value"], f["layers"]["origin"]) == (4, "derived")
    assert f["layers"]["source"] == "train.py:5:9"
    assert f["hidden"]["origin"] == "unknown"


def test_a_dataclass_of_the_script_itself(tmp_path):
    f = _facts(tmp_path, '**meta["model_config"]', same_file=True)
    assert f["layers"]["origin"] == "unknown", f["layers"]
    assert f["params"]["origin"] == "unknown"


def test_without_the_mapping_the_defaults_still_size_the_model(tmp_path):
    f = _facts(tmp_path, "")
    assert (f["layers"]["value"], f["layers"]["origin"]) == (12, "derived")
    assert f["params"]["value"] == 32768 * 768 + 12 * (768 * 768 + 768)


def test_a_known_mapping_is_read(tmp_path):
    f = _facts(tmp_path, '**{"n_layer": 2}')
    assert (f["layers"]["value"], f["hidden"]["value"]) == (2, 768)
