"""A real round trip to a Hugging Face hub: huggingface_hub, driven by the real command line
in a subprocess, against a local HTTP server (`tests/hub_server.py`) that serves model
repositories' config.json, adapter_config.json and safetensors files. What it proves:
`--hub` (or `[tool.preflight] hub = true`) resolves a model the offline sources lack and
says the hub in the facts' reason; the next run asks nothing (the hub's cache); without
the setting, or with HF_HUB_OFFLINE=1, no request is made at all."""

import json
import os

import pytest

from tests.hub_server import COMMIT, Hub, safetensors_bytes
from tests.test_models_checkpoints import EXACT, TENSORS

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

#: a small llama (a family with a formula): its config.json is all the hub is asked for
LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256,
         "intermediate_size": 688, "num_hidden_layers": 4, "num_attention_heads": 8,
         "num_key_value_heads": 2, "vocab_size": 3000, "tie_word_embeddings": False,
         "torch_dtype": "bfloat16"}
#: an architecture without a formula: counted from its sharded checkpoint's headers
NOVEL = {"model_type": "acme_novel", "hidden_size": 64, "num_hidden_layers": 3,
         "vocab_size": 32000}
_HALF = dict(list(TENSORS.items())[:5])
_REST = dict(list(TENSORS.items())[5:])
REPOS = {
    "acme/tiny-llama": {"config.json": json.dumps(LLAMA).encode()},
    "acme/novel-4m": {
        "config.json": json.dumps(NOVEL).encode(),
        "model.safetensors.index.json": json.dumps({"metadata": {"total_size": 0}, "weight_map": {
            **{k: "model-00001-of-00002.safetensors" for k in _HALF},
            **{k: "model-00002-of-00002.safetensors" for k in _REST}}}).encode(),
        "model-00001-of-00002.safetensors": safetensors_bytes(_HALF),
        "model-00002-of-00002.safetensors": safetensors_bytes(_REST)},
    "acme/broken": {"config.json": json.dumps(NOVEL).encode(),
                    "model.safetensors": (1 << 40).to_bytes(8, "little") + b"{"},
    "acme/tiny-llama-lora": {"adapter_config.json": json.dumps({
        "peft_type": "LORA", "base_model_name_or_path": "acme/tiny-llama", "r": 4,
        "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]}).encode()},
}
SCRIPT = ("from transformers import AutoModelForCausalLM\n"
          "model = AutoModelForCausalLM.from_pretrained({name!r})\n")


def _meta_count(cfg: dict) -> int:
    config = transformers.AutoConfig.for_model(**{k: v for k, v in cfg.items()
                                                  if k != "architectures"})
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


@pytest.fixture
def hub(tmp_path):
    with Hub(REPOS) as h:
        yield h


@pytest.fixture
def env(tmp_path, hub):
    """The subprocess's environment: the local hub, an empty hub cache of its own."""
    e = {k: v for k, v in os.environ.items() if k not in (
        "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_ASSETS_CACHE",
        "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY", "HF_TOKEN")}
    e.update(HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf"), NO_PROXY="127.0.0.1",
             no_proxy="127.0.0.1")
    return e


def _estimate(cli, env, tmp_path, *args):
    r = cli("estimate", *args, "--format", "json", cwd=str(tmp_path), env=env)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stderr
    return json.loads(r.stdout)["jobs"][0]["facts"]


def _check(cli, env, tmp_path, name, *args):
    (tmp_path / "train.py").write_text(SCRIPT.format(name=name))
    r = cli("check", "train.py", "--no-cache", "--format", "json", *args, cwd=str(tmp_path),
            env=env)
    assert "Traceback" not in r.stderr, r.stderr
    job = json.loads(r.stdout)["jobs"][0]
    return job["facts"], job["diagnostics"]


def _file(repo, name, revision="main"):
    return f"/{repo}/resolve/{revision}/{name}"


def test_with_hub_the_model_resolves_and_the_next_run_asks_nothing(cli, env, tmp_path, hub):
    exact = _meta_count(LLAMA)
    facts = _estimate(cli, env, tmp_path, "--model", "acme/tiny-llama", "--hub")
    snapshot = tmp_path / "hf" / "hub" / "models--acme--tiny-llama" / "snapshots" / COMMIT
    assert facts["params"]["value"] == exact == 4_307_200
    assert facts["params"]["reason"] == (
        f"acme/tiny-llama: config.json from the Hugging Face hub, {hub.url}/acme/tiny-llama "
        f"at {COMMIT[:12]} ({snapshot}/config.json)")
    assert (facts["layers"]["value"], facts["hidden"]["value"], facts["kv_heads"]["value"]) == \
        (4, 256, 2)
    assert "bfloat16, the checkpoint's dtype (config.json" in facts["param_dtype"]["reason"]
    # what huggingface_hub asked: the file's metadata, then the file; nothing else
    config = _file("acme/tiny-llama", "config.json")
    assert hub.requests == [("HEAD", config, None), ("GET", config, None)]
    assert json.loads((snapshot / "config.json").read_text()) == LLAMA

    # the second run reads the hub's cache: not one request
    facts = _estimate(cli, env, tmp_path, "--model", "acme/tiny-llama", "--hub")
    assert facts["params"]["value"] == exact
    assert facts["params"]["reason"] == (
        f"acme/tiny-llama: config.json from the Hugging Face cache ({snapshot}/config.json)")
    assert len(hub.requests) == 2


def test_an_architecture_without_a_formula_is_counted_from_the_hub_s_headers(
        cli, env, tmp_path, hub):
    facts, diags = _check(cli, env, tmp_path, "acme/novel-4m", "--hub")
    assert [d["code"] for d in diags if d["code"] in ("PF004", "PF005")] == []
    assert facts["params"]["value"] == EXACT
    assert facts["params"]["source"] == "train.py:2:9"
    assert facts["params"]["reason"].startswith(
        f"acme/novel-4m: safetensors headers ({hub.url}/acme/novel-4m at {COMMIT[:12]} "
        f"(model-00001-of-00002.safetensors, model-00002-of-00002.safetensors)): 4,169,920 "
        f"parameters in 11 tensors")
    assert facts["params"]["reason"].endswith("model_type 'acme_novel' has no parameter formula")
    assert facts["layers"]["value"] == 3
    # the config, then the headers by range requests: never the weights
    shard = "model-0000{}-of-00002.safetensors"
    assert hub.requests == [
        ("HEAD", _file("acme/novel-4m", "config.json"), None),
        ("GET", _file("acme/novel-4m", "config.json"), None),
        ("GET", _file("acme/novel-4m", "model.safetensors", COMMIT), "bytes=0-100000"),
        ("HEAD", _file("acme/novel-4m", "model.safetensors.index.json", COMMIT), None),
        ("GET", _file("acme/novel-4m", "model.safetensors.index.json", COMMIT), None),
        ("GET", _file("acme/novel-4m", shard.format(1), COMMIT), "bytes=0-100000"),
        ("GET", _file("acme/novel-4m", shard.format(2), COMMIT), "bytes=0-100000")]
    kept = tmp_path / "hf" / "assets" / "preflight" / "models--acme--novel-4m" / COMMIT / \
        "safetensors-headers.json"
    assert len(json.loads(kept.read_text())["tensors"]) == len(TENSORS)

    asked = len(hub.requests)
    facts, _ = _check(cli, env, tmp_path, "acme/novel-4m", "--hub")
    assert facts["params"]["value"] == EXACT
    assert f"safetensors headers (kept from the hub in {kept})" in facts["params"]["reason"]
    assert len(hub.requests) == asked


def test_without_the_setting_no_request_is_made(cli, env, tmp_path, hub):
    facts, diags = _check(cli, env, tmp_path, "acme/tiny-llama")
    assert facts["params"]["value"] is None
    pf004 = [d for d in diags if d["code"] == "PF004"]
    assert [(d["path"], d["line"]) for d in pf004] == [("train.py", 2)]
    assert pf004[0]["message"].endswith(
        "; the Hugging Face hub was not asked (the network is used only with --hub or "
        "[tool.preflight] hub = true)")
    r = cli("estimate", "--model", "acme/tiny-llama", cwd=str(tmp_path), env=env)
    assert r.returncode == 2 and r.stderr.strip().endswith(
        "or --hub to ask the Hugging Face hub")
    assert hub.requests == []


def test_hf_hub_offline_keeps_the_hub_unasked_with_the_setting(cli, env, tmp_path, hub):
    env = {**env, "HF_HUB_OFFLINE": "1"}
    facts, diags = _check(cli, env, tmp_path, "acme/tiny-llama", "--hub")
    assert facts["params"]["value"] is None
    assert [d["message"] for d in diags if d["code"] == "PF004"][0].endswith(
        "; the Hugging Face hub was not asked: HF_HUB_OFFLINE is set")
    assert hub.requests == []


def test_the_project_setting_allows_the_hub(cli, env, tmp_path, hub):
    (tmp_path / "pyproject.toml").write_text("[tool.preflight]\nhub = true\n")
    facts, _ = _check(cli, env, tmp_path, "acme/tiny-llama")
    assert facts["params"]["value"] == _meta_count(LLAMA)
    assert f"from the Hugging Face hub, {hub.url}/acme/tiny-llama" in facts["params"]["reason"]
    assert [m for m, _, _ in hub.requests] == ["HEAD", "GET"]


def test_a_bad_setting_is_a_located_finding(cli, env, tmp_path, hub):
    (tmp_path / "pyproject.toml").write_text("[tool.preflight]\nhub = \"yes\"\n")
    (tmp_path / "train.py").write_text(SCRIPT.format(name="acme/tiny-llama"))
    r = cli("check", "train.py", "--no-cache", "--format", "json", cwd=str(tmp_path), env=env)
    found = [d for d in json.loads(r.stdout)["diagnostics"] if d["code"] == "PF005"]
    assert [(d["message"], d["line"]) for d in found] == [
        ("[tool.preflight] hub: expected true or false, got 'yes'", 2)]
    assert hub.requests == []


def test_an_adapter_on_the_hub_resolves_through_its_base_on_the_hub(cli, env, tmp_path, hub):
    facts = _estimate(cli, env, tmp_path, "--model", "acme/tiny-llama-lora", "--hub")
    base = _meta_count(LLAMA)
    # r=4 adapters on q_proj (256 → 256) and v_proj (256 → 64) of 4 layers
    adapters = 4 * 4 * ((256 + 256) + (256 + 64))
    assert (facts["params"]["value"], facts["trainable_params"]["value"]) == \
        (base + adapters, adapters)
    assert facts["lora"]["value"]["r"] == 4
    assert [p for _, p, _ in hub.requests] == [
        _file("acme/tiny-llama-lora", "config.json"),
        _file("acme/tiny-llama-lora", "adapter_config.json"),
        _file("acme/tiny-llama-lora", "adapter_config.json"),
        _file("acme/tiny-llama", "config.json"), _file("acme/tiny-llama", "config.json")]


def test_a_repository_the_hub_does_not_have_is_said(cli, env, tmp_path, hub):
    facts, diags = _check(cli, env, tmp_path, "acme/no-such-model", "--hub")
    assert facts["params"]["value"] is None
    assert [d["message"] for d in diags if d["code"] == "PF004"][0].endswith(
        f"; the Hugging Face hub ({hub.url}/acme/no-such-model): config.json: no such "
        f"repository (or a private one)")
    assert hub.requests == [("HEAD", _file("acme/no-such-model", "config.json"), None)]


def test_the_library_s_check_takes_the_hub_keyword(tmp_path, hub, monkeypatch):
    import preflight
    for k in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_HUB_OFFLINE",
              "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    (tmp_path / "train.py").write_text(SCRIPT.format(name="acme/tiny-llama"))
    report = preflight.check([str(tmp_path / "train.py")])
    assert report.jobs[0].job.plan.value("params") is None and hub.requests == []
    report = preflight.check([str(tmp_path / "train.py")], hub=True)
    assert report.jobs[0].job.plan.value("params") == _meta_count(LLAMA)
    assert len(hub.requests) == 2


def test_the_help_of_both_commands_names_the_setting(cli):
    for command in ("check", "estimate"):
        text = " ".join(cli(command, "--help").stdout.split())
        assert "--hub Ask the Hugging Face hub for a model nothing offline sizes" in text
        assert "Never while HF_HUB_OFFLINE=1" in text and "[tool.preflight] hub = true" in text


def test_a_bad_header_on_the_hub_is_said_and_nothing_is_kept(cli, env, tmp_path, hub):
    facts, diags = _check(cli, env, tmp_path, "acme/broken", "--hub")
    assert facts["params"]["value"] is None
    message = [d["message"] for d in diags if d["code"] == "PF004"][0]
    assert "model_type 'acme_novel' has no parameter formula; its safetensors headers: " \
        "SafetensorsParsingError: " in message
    assert hub.requests[-1] == ("GET", _file("acme/broken", "model.safetensors", COMMIT),
                                "bytes=0-100000")
    assert not (tmp_path / "hf" / "assets").exists()
