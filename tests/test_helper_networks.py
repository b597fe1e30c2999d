"""Helper networks loaded beside the trained one (a diffusion trainer's latent autoencoder
and prompt encoder): never the job's model, its size or its weights' dtype. A base the
script freezes (LoRA, a linear probe) stays the model."""
import json
import textwrap

from preflight.extract.python import extract
from preflight.plan import merge
from tests.conftest import run_cli

# a latent diffusion trainer: the autoencoder is loaded by name, the denoiser is built from a
# registry of the repository's own classes and is what the optimizer updates
_OWN_DENOISER = """\
import torch
from diffusers.models import AutoencoderKL
from nets import NETS

def main(args):
    net = NETS[args.arch](depth=28)
    vae = AutoencoderKL.from_pretrained("some-org/latent-autoencoder")
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
"""

# a fine-tune of a pipeline loaded by name: the frozen encoders are cast to half precision,
# the denoiser (the trained network) keeps fp32 weights
_FROZEN_CASTS = """\
import torch
from diffusers import UNet2DConditionModel, AutoencoderKL
from transformers import CLIPTextModel

def main(name):
    text_encoder = CLIPTextModel.from_pretrained(name, subfolder="text_encoder")
    vae = AutoencoderKL.from_pretrained(name, subfolder="vae")
    unet = UNet2DConditionModel.from_pretrained(name, subfolder="unet")
    vae.requires_grad_(False)
    text_encoder.requires_grad_(False)
    opt = torch.optim.AdamW(unet.parameters(), lr=5e-6)
    vae.to("cuda", dtype=torch.float16)
    text_encoder.to("cuda", dtype=torch.float16)

main("org/pipeline")
"""

# a LoRA job freezes its base and casts it to half precision: the base's weights and dtype
# are still the job's (a frozen module is not a helper network)
_FROZEN_BASE = """\
import torch
from diffusers import UNet2DConditionModel, AutoencoderKL

def main(name):
    vae = AutoencoderKL.from_pretrained(name, subfolder="vae")
    unet = UNet2DConditionModel.from_pretrained(name, subfolder="unet")
    unet.requires_grad_(False)
    vae.requires_grad_(False)
    unet.to("cuda", dtype=torch.float16)
    vae.to("cuda", dtype=torch.float16)
    opt = torch.optim.AdamW([p for p in unet.parameters() if p.requires_grad], lr=1e-4)

main("org/pipeline")
"""


def _plan(src):
    return merge(extract("train.py", textwrap.dedent(src), []).facts)


def test_a_latent_autoencoder_loaded_by_name_is_not_the_model():
    facts = _plan(_OWN_DENOISER).facts
    assert "model" not in facts or not facts["model"].known
    assert facts["optimizer"].value == "adamw"


def test_the_job_is_not_sized_by_a_helper_network(tmp_path):
    (tmp_path / "train.py").write_text(_OWN_DENOISER + "\nmain(None)\n")
    r = run_cli("check", "--format", "json", "--exit-zero", "train.py", cwd=str(tmp_path))
    facts = json.loads(r.stdout)["jobs"][0]["facts"]
    assert facts["params"]["value"] is None and facts["params"]["origin"] == "unknown"
    assert facts["params"]["source"] == "train.py:7:11"
    assert "helper networks some-org/latent-autoencoder" in facts["params"]["reason"]
    assert facts["model"]["value"] != "some-org/latent-autoencoder"


def test_casting_frozen_encoders_is_not_the_trained_weights_dtype():
    facts = _plan(_FROZEN_CASTS).facts
    assert (facts["model"].value, facts["model"].origin.value) == ("org/pipeline", "literal")
    assert facts["param_dtype"].value == "fp32"
    assert facts["param_dtype"].origin.value == "default"


def test_a_frozen_base_is_still_the_model_and_its_cast_the_weights_dtype():
    facts = _plan(_FROZEN_BASE).facts
    assert (facts["model"].value, facts["model"].origin.value) == ("org/pipeline", "literal")
    assert str(facts["model"].source) == "train.py:13:6"
    assert (facts["param_dtype"].value, facts["param_dtype"].origin.value) == ("fp16", "literal")
    assert str(facts["param_dtype"].source) == "train.py:9:5"
