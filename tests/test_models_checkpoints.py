"""A model sized from its safetensors headers (headers only, never the weights), through a
saved adapter's base or a fine-tune's `_name_or_path`, and bad checkpoint files read as
located findings."""

import json
import os
import struct

import pytest

from preflight.plan import Origin, Source, merge
from preflight.resolve import checkpoints
from preflight.resolve.entry import facts_for_name, resolve
from tests.hub_server import safetensors_bytes

SRC = Source(path="train.py", line=7, col=9)

#: a checkpoint of an architecture preflight has no formula for: 2 × 32,000 × 64 embedding
#: and head, 3 layers of a 64 × 192 and a 192 × 64 matrix, 64-wide norms, and a buffer
TENSORS = {
    "model.embed.weight": ("BF16", [32000, 64]),
    **{f"model.layers.{i}.up.weight": ("BF16", [192, 64]) for i in range(3)},
    **{f"model.layers.{i}.down.weight": ("BF16", [64, 192]) for i in range(3)},
    **{f"model.layers.{i}.norm.weight": ("F32", [64]) for i in range(3)},
    "lm_head.weight": ("BF16", [32000, 64]),
    "model.embeddings.position_ids": ("I64", [1, 512]),
}
EXACT = 2 * 32000 * 64 + 3 * 2 * 192 * 64 + 3 * 64     # 4,169,920


@pytest.fixture(autouse=True)
def _empty_hf_cache(tmp_path, monkeypatch):
    for v in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_ASSETS_CACHE",
              "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    # a hub that answers nothing: no test of this file may ask it
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.chdir(tmp_path)


def _write(folder, files: dict) -> str:
    os.makedirs(folder, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data if isinstance(data, bytes) else json.dumps(data).encode())
    return str(folder)


def _resolve(name, **kw):
    facts, diags = resolve([{"kind": "hub", "name": name, "source": SRC}],
                           search_dirs=kw.pop("search_dirs", []), project_models={},
                           params_override=None, **kw)
    return merge(facts), diags


def test_the_exact_count_of_a_directory_holding_only_safetensors_headers(tmp_path):
    assert EXACT == 4_169_920
    d = _write(tmp_path / "novel-4m", {"model.safetensors": safetensors_bytes(TENSORS)})
    plan, diags = _resolve(d)
    assert diags == []
    f = plan.fact("params")
    assert (f.value, f.origin, f.source) == (EXACT, Origin.CATALOG, SRC)
    assert f.reason == (f"{d}: safetensors headers ({d}/model.safetensors): 4,169,920 "
                        f"parameters in 11 tensors (4,169,728 BF16, 192 F32); buffers not "
                        f"counted: model.embeddings.position_ids")
    assert plan.value("trainable_params") == EXACT
    # the dtype the weights are stored in: most parameters are bf16
    assert "bfloat16, the checkpoint's dtype (safetensors headers" in \
        plan.fact("param_dtype").reason


def test_only_the_header_is_read_never_the_weights(tmp_path, monkeypatch):
    d = _write(tmp_path / "m", {"model.safetensors": safetensors_bytes(TENSORS)})
    size = os.path.getsize(os.path.join(d, "model.safetensors"))
    header = struct.unpack("<Q", open(os.path.join(d, "model.safetensors"), "rb").read(8))[0]
    asked = []
    real = checkpoints.safe_read.read_regular

    def spy(path, max_bytes=0, **kw):
        asked.append(max_bytes)
        return real(path, max_bytes, **kw)

    monkeypatch.setattr(checkpoints.safe_read, "read_regular", spy)
    tensors, why = checkpoints.read_header(os.path.join(d, "model.safetensors"))
    assert why is None and len(tensors) == len(TENSORS)
    assert asked == [8, 8 + header] and 8 + header < size / 100


def test_a_sharded_checkpoint_and_a_config_without_a_formula(tmp_path):
    half = dict(list(TENSORS.items())[:5])
    rest = dict(list(TENSORS.items())[5:])
    d = _write(tmp_path / "sharded", {
        "config.json": {"model_type": "acme_novel", "hidden_size": 64, "num_hidden_layers": 3,
                        "vocab_size": 32000},
        "model.safetensors.index.json": {"metadata": {"total_size": 0}, "weight_map": {
            **{k: "model-00001-of-00002.safetensors" for k in half},
            **{k: "model-00002-of-00002.safetensors" for k in rest}}},
        "model-00001-of-00002.safetensors": safetensors_bytes(half),
        "model-00002-of-00002.safetensors": safetensors_bytes(rest)})
    plan, diags = _resolve(d)
    assert diags == []
    f = plan.fact("params")
    assert f.value == EXACT
    assert f.reason.startswith(f"{d}: safetensors headers ({d}/model.safetensors.index.json): "
                               f"4,169,920 parameters in 11 tensors")
    assert f.reason.endswith("model_type 'acme_novel' has no parameter formula")
    # the config's own fields still name the shape
    assert (plan.value("layers"), plan.value("hidden"), plan.value("vocab")) == (3, 64, 32000)


def test_a_quantised_checkpoint_is_not_counted_from_its_packed_tensors(tmp_path):
    d = _write(tmp_path / "q", {"model.safetensors": safetensors_bytes(
        {"w.weight": ("U8", [64, 32]), "w.weight.absmax": ("F32", [16])})})
    plan, diags = _resolve(d)
    assert not plan.known("params")
    assert "'w.weight' is stored as U8: a quantised checkpoint" in plan.fact("params").reason
    assert [d.code for d in diags] == ["PF004"]


@pytest.mark.parametrize("data,why", [
    (b"\x01\x02\x03", "is truncated: 3 bytes, not the 8-byte header length"),
    (struct.pack("<Q", 1 << 60) + b"{}", "header length 1,152,921,504,606,846,976 bytes is "
                                         "over the 100,000,000-byte limit; not read"),
    (struct.pack("<Q", 4096) + b'{"a": 1}', "is truncated: its header is 4,096 bytes, the "
                                            "file holds 8 after the length"),
    (struct.pack("<Q", 5) + b"\xff\xfenot", "the header is not JSON"),
    (struct.pack("<Q", 9) + b"[1, 2, 3]", "the header is not a JSON object"),
    (struct.pack("<Q", 19) + b'{"w": {"dtype": 1}}', "tensor 'w' has no dtype and shape"),
])
def test_a_bad_header_is_a_located_finding_and_an_unknown_size(tmp_path, data, why):
    d = _write(tmp_path / "bad", {"model.safetensors": data})
    plan, diags = _resolve(d)
    assert not plan.known("params")
    pf005 = [x for x in diags if x.code == "PF005"]
    assert len(pf005) == 1 and why in pf005[0].message
    assert (pf005[0].path, pf005[0].line) == (f"{d}/model.safetensors", 1)
    assert [x.code for x in diags] == ["PF005", "PF004"]


def test_a_bad_header_through_the_command_line_is_no_traceback(tmp_path, cli):
    _write(tmp_path / "bad", {"model.safetensors": struct.pack("<Q", 1 << 62)})
    r = cli("estimate", "--model", str(tmp_path / "bad"), cwd=str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "does not resolve to a known model" in r.stderr


def test_an_index_naming_a_shard_that_is_not_there(tmp_path):
    d = _write(tmp_path / "partial", {
        "config.json": {"model_type": "acme_novel"},
        "model.safetensors.index.json": {"weight_map": {"a": "model-00001-of-00002.safetensors"}}})
    plan, diags = _resolve(d)
    assert not plan.known("params")
    assert plan.fact("params").reason.endswith(
        "its safetensors headers: " + f"{d}/model.safetensors.index.json: shard "
        f"model-00001-of-00002.safetensors is not in {d}")
    assert [x.code for x in diags] == ["PF004"]


def test_a_saved_adapter_resolves_through_its_base_s_headers(tmp_path):
    base = _write(tmp_path / "base", {"model.safetensors": safetensors_bytes(TENSORS)})
    adapter = _write(tmp_path / "adapter", {"adapter_config.json": {
        "peft_type": "LORA", "base_model_name_or_path": base, "r": 16, "lora_alpha": 32,
        "target_modules": ["up"], "lora_dropout": 0.05}})
    plan, diags = _resolve(adapter)
    assert diags == []
    f = plan.fact("params")
    assert f.value == EXACT
    assert f.reason.startswith(f"{adapter}: adapter_config.json ({adapter}/adapter_config.json) "
                               f"names its base {base}; {base}: safetensors headers")
    lora = plan.value("lora")
    assert (lora["r"], lora["alpha"], lora["targets"]) == (16, 32, ["up"])
    assert lora["dropout"] == 0.05          # the adapter's lora_dropout
    assert plan.fact("lora").source.path == f"{adapter}/adapter_config.json"


def test_an_adapter_in_the_hugging_face_cache_resolves_through_its_base(tmp_path):
    snap = tmp_path / "hf" / "hub" / "models--acme--llama-lora" / "snapshots" / ("a" * 40)
    _write(snap, {"adapter_config.json": {"peft_type": "LORA", "r": 8,
                                          "base_model_name_or_path": "meta-llama/Llama-2-7b-hf"}})
    plan, diags = _resolve("acme/llama-lora")
    assert diags == []
    assert plan.fact("model").reason.startswith(
        f"acme/llama-lora: adapter_config.json ({snap}/adapter_config.json) names its base "
        f"meta-llama/Llama-2-7b-hf; meta-llama/Llama-2-7b-hf: offline catalogue entry")
    # the base's 6,738,415,616 plus r=8 adapters on q_proj and v_proj of 32 layers
    assert plan.value("trainable_params") == 32 * 2 * 8 * (4096 + 4096)
    assert plan.value("params") == 6_738_415_616 + 32 * 2 * 8 * (4096 + 4096)


def test_a_fine_tune_whose_config_cannot_be_counted_resolves_through_its_base(tmp_path):
    # a fine-tune saved with a config whose model_type has no formula, naming its base
    d = _write(tmp_path / "my-finetune", {"config.json": {
        "model_type": "acme_custom_llama", "_name_or_path": "meta-llama/Llama-2-7b-hf",
        "torch_dtype": "bfloat16"}})
    plan, diags = _resolve(d)
    assert diags == []
    f = plan.fact("params")
    assert f.value == 6_738_415_616
    assert f.reason.startswith(
        f"{d}: config.json from the local directory ({d}/config.json) cannot be counted "
        f"({d}: config.json from the local directory ({d}/config.json): model_type "
        f"'acme_custom_llama' has no parameter formula); its _name_or_path names "
        f"meta-llama/Llama-2-7b-hf: meta-llama/Llama-2-7b-hf: offline catalogue entry")
    # a config that counts is its own size: _name_or_path is not followed
    _write(tmp_path / "counted", {"config.json": {
        "model_type": "llama", "_name_or_path": "meta-llama/Llama-2-7b-hf", "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "vocab_size": 100}})
    plan, _ = _resolve(str(tmp_path / "counted"))
    assert plan.value("params") < 1_000_000


def test_a_fine_tune_naming_itself_is_not_followed_forever(tmp_path):
    d = _write(tmp_path / "loop", {"config.json": {"model_type": "acme_x", "_name_or_path": "../loop"}})
    plan, diags = _resolve(d, search_dirs=[d])
    assert not plan.known("params")
    assert [x.code for x in diags] == ["PF004"]


def test_without_the_hub_setting_the_finding_says_what_would_ask_the_hub():
    plan, diags = _resolve("acme/secret-13b")
    assert [d.code for d in diags] == ["PF004"]
    assert diags[0].message == (
        "cannot size acme/secret-13b: model 'acme/secret-13b' is not a local directory with "
        "config.json, not in the Hugging Face cache and not in preflight's offline catalogue; "
        "the Hugging Face hub was not asked (the network is used only with --hub or "
        "[tool.preflight] hub = true)")
    assert facts_for_name("acme/secret-13b") is None


@pytest.mark.parametrize("name", ["/model", "/weka/ckpts/olmo3-7b-sft", "../checkpoints/tulu_7B",
                                  "tulu_65b/", "~/ckpt", "./out", "runs/exp1/step100",
                                  "C:\\models\\llama"])
def test_a_local_path_that_is_not_here_is_said_to_be_a_path_and_never_sent_to_the_hub(
        name, monkeypatch):
    from preflight.resolve import hub as hubs

    def no_request(*a, **k):
        raise AssertionError("a local path was sent to the hub")
    monkeypatch.setattr(hubs, "download", no_request)
    plan, diags = _resolve(name, hub=True)
    assert [d.code for d in diags] == ["PF004"]
    assert diags[0].message == (
        f"cannot size {name}: model {name!r} is a local path, and no config.json is there on "
        f"this machine (preflight reads that directory's config.json where it exists, or a "
        f"[tool.preflight.models] entry for the path)")
    assert not plan.known("params")


@pytest.mark.parametrize("name", ["acme/secret-13b", "gpt2", "models/llama3-8b-pro"])
def test_a_name_spelled_as_a_hub_id_is_not_a_local_path(name):
    from preflight.resolve import hub as hubs
    assert not hubs.is_local_path(name)


def test_hf_hub_offline_keeps_the_hub_unasked_even_with_the_setting(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    plan, diags = _resolve("acme/secret-13b", hub=True)
    assert diags[0].message.endswith("; the Hugging Face hub was not asked: HF_HUB_OFFLINE is set")


def test_the_static_path_does_not_import_huggingface_hub(tmp_path):
    import subprocess
    import sys
    code = ("import sys, preflight\n"
            "from preflight.resolve.entry import facts_for_name\n"
            "facts_for_name('meta-llama/Llama-2-7b-hf')\n"
            "facts_for_name('acme/secret-13b')\n"
            "print('huggingface_hub' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=120,
                       env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(
                           os.path.abspath(__file__)))})
    assert r.stdout.strip() == "False", r.stderr


def test_the_hand_written_files_are_real_safetensors_and_the_reader_reads_real_ones(tmp_path):
    safetensors = pytest.importorskip("safetensors")
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file
    path = tmp_path / "hand.safetensors"
    path.write_bytes(safetensors_bytes(TENSORS, metadata={"format": "pt"}))
    with safetensors.safe_open(str(path), framework="pt") as f:
        got = {k: list(f.get_slice(k).get_shape()) for k in f.keys()}
        assert f.metadata() == {"format": "pt"}
    assert got == {k: s for k, (_, s) in TENSORS.items()}
    # a file the safetensors package writes, read back by preflight's header reader
    real = tmp_path / "real.safetensors"
    save_file({"w": torch.zeros(3, 5, dtype=torch.float16), "b": torch.zeros(7)}, str(real),
              metadata={"format": "pt"})
    assert checkpoints.read_header(str(real)) == ({"w": ("F16", [3, 5]), "b": ("F32", [7])},
                                                  None)
    assert checkpoints.tally(checkpoints.read_header(str(real))[0])[:2] == (22, "fp16")
