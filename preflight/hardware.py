"""The GPU catalogue: usable memory, peak FLOP/s and bandwidths of the cards people train on.

Figures come from the project's hardware reference (public datasheets, nvidia-smi logs,
nccl-tests threads). Usable memory is what nvidia-smi reports as total (MiB × 2**20):
the marketed "80 GB" is neither 80 GB nor 80 GiB of room for tensors. Fields whose
value is secondary, derived or unverified are listed in `approximate` so that every
output can say so.

Bus bandwidth (`*_busbw`) is the nccl-tests figure: an all-reduce of S bytes over n GPUs
takes ≈ S·2(n−1)/n / busbw.

The host link (`host_link_bytes_per_s`) is what CPU offload crosses every step: the card's
PCIe generation with the reference's x16 one-direction figure (gen4 ≈ 31, gen5 ≈ 63 GB/s).
Cards whose host link the reference has no figure for (PCIe gen3, NVLink-C2C superchips)
leave it unknown.
"""

from __future__ import annotations

import re
from typing import Optional

from pydantic import BaseModel, Field

MiB = 2**20
T = 10**12
G = 10**9


class UnknownGPU(ValueError):
    """An unknown GPU name; the message lists the known ones."""


class Hardware(BaseModel):
    name: str
    aliases: list[str] = Field(default_factory=list)
    marketed_gb: Optional[float] = None
    usable_bytes: int                                  # nvidia-smi total MiB × 2**20
    bf16_flops: Optional[float] = None                 # dense peak FLOP/s; None = not supported
    fp16_flops: Optional[float] = None
    fp32_flops: Optional[float] = None
    hbm_bytes_per_s: Optional[float] = None
    link_bytes_per_s: Optional[float] = None           # GPU-GPU link, bidirectional
    host_link_bytes_per_s: Optional[float] = None      # CPU-GPU link (PCIe x16), one direction
    intra_node_busbw: Optional[float] = None           # all-reduce bus bandwidth within a node
    inter_node_busbw: Optional[float] = None           # all-reduce bus bandwidth across nodes
    gpus_per_node: int = 8
    approximate: list[str] = Field(default_factory=list)   # fields not from a primary source
    note: str = ""                                     # e.g. how an ambiguous name was read
    custom: bool = False

    def peak_flops(self, precision: str) -> Optional[float]:
        """Peak dense FLOP/s for the compute precision: bf16 | fp16 | fp8 | fp32."""
        if precision == "fp8":
            # no fp8 figures in the catalogue: bf16 peak is the honest lower bound
            return self.bf16_flops
        return {"bf16": self.bf16_flops, "fp16": self.fp16_flops,
                "fp32": self.fp32_flops}.get(precision)


def _mib(n: int) -> int:
    return n * MiB


_IB400 = 320 * G   # 8×400 Gb/s InfiniBand per node, low end of 320–380 GB/s at ≥ 1 GiB
_PCIE4 = 31 * G    # PCIe gen4 x16, one direction
_PCIE5 = 63 * G
_NODE_NOTE = "across nodes: 8×400 Gb/s InfiniBand per node assumed"

#: The catalogue. Names are canonical; `aliases` are matched after normalisation.
KNOWN: list[Hardware] = [
    Hardware(name="V100-SXM2-16GB", aliases=["v100-16gb", "v100-sxm2", "tesla v100"],
             marketed_gb=16, usable_bytes=_mib(16384), bf16_flops=None, fp16_flops=125 * T,
             fp32_flops=15.7 * T, hbm_bytes_per_s=900 * G, link_bytes_per_s=300 * G,
             intra_node_busbw=120 * G, inter_node_busbw=45 * G,
             approximate=["usable_bytes", "fp32_flops", "link_bytes_per_s", "intra_node_busbw",
                          "inter_node_busbw"],
             note="no bf16 on V100 (fp16 tensor cores only); busbw derived as 0.8 × one-way "
                  "NVLink2; across nodes 4×100 Gb/s EDR assumed"),
    Hardware(name="V100-SXM2-32GB", aliases=["v100-32gb", "v100-sxm2-32gb", "v100 32gb"],
             marketed_gb=32, usable_bytes=_mib(32768), bf16_flops=None, fp16_flops=125 * T,
             fp32_flops=15.7 * T, hbm_bytes_per_s=900 * G, link_bytes_per_s=300 * G,
             intra_node_busbw=120 * G, inter_node_busbw=45 * G,
             approximate=["fp32_flops", "link_bytes_per_s", "intra_node_busbw", "inter_node_busbw"],
             note="no bf16 on V100 (fp16 tensor cores only); busbw derived as 0.8 × one-way NVLink2"),
    Hardware(name="A100-SXM4-40GB", aliases=["a100-40gb", "a100-sxm4-40gb", "a100 40g", "a100-40"],
             marketed_gb=40, usable_bytes=_mib(40960), bf16_flops=312 * T, fp16_flops=312 * T,
             fp32_flops=19.5 * T, hbm_bytes_per_s=1555 * G, link_bytes_per_s=600 * G,
             intra_node_busbw=230 * G, inter_node_busbw=160 * G,
             approximate=["usable_bytes", "inter_node_busbw"],
             note="across nodes 8×200 Gb/s HDR InfiniBand assumed"),
    Hardware(name="A100-SXM4-80GB", aliases=["a100-80gb", "a100-sxm4-80gb", "a100 80g", "a100-80"],
             marketed_gb=80, usable_bytes=_mib(81920), bf16_flops=312 * T, fp16_flops=312 * T,
             fp32_flops=19.5 * T, hbm_bytes_per_s=2039 * G, link_bytes_per_s=600 * G,
             intra_node_busbw=230 * G, inter_node_busbw=160 * G,
             approximate=["inter_node_busbw"],
             note="across nodes 8×200 Gb/s HDR InfiniBand assumed"),
    Hardware(name="A10G", aliases=["a10g", "nvidia a10g"],
             marketed_gb=24, usable_bytes=_mib(23028), bf16_flops=70 * T, fp16_flops=70 * T,
             fp32_flops=35.0 * T, hbm_bytes_per_s=600 * G, link_bytes_per_s=None,
             intra_node_busbw=_PCIE4, inter_node_busbw=None,
             approximate=["bf16_flops", "fp16_flops", "fp32_flops", "hbm_bytes_per_s",
                          "intra_node_busbw"],
             note="no NVLink: collectives over PCIe gen4"),
    Hardware(name="L4", aliases=["l4", "nvidia l4"],
             marketed_gb=24, usable_bytes=_mib(23034), bf16_flops=121 * T, fp16_flops=121 * T,
             fp32_flops=30.3 * T, hbm_bytes_per_s=300 * G, intra_node_busbw=_PCIE4,
             approximate=["bf16_flops", "fp16_flops", "fp32_flops", "intra_node_busbw"],
             note="no NVLink: collectives over PCIe gen4"),
    Hardware(name="L40S", aliases=["l40s", "nvidia l40s"],
             marketed_gb=48, usable_bytes=_mib(46068), bf16_flops=362 * T, fp16_flops=362 * T,
             fp32_flops=91.6 * T, hbm_bytes_per_s=864 * G, intra_node_busbw=_PCIE4,
             approximate=["intra_node_busbw"], note="no NVLink: collectives over PCIe gen4"),
    Hardware(name="RTX-3090", aliases=["3090", "rtx3090", "rtx-3090", "geforce rtx 3090"],
             marketed_gb=24, usable_bytes=_mib(24576), bf16_flops=71 * T, fp16_flops=71 * T,
             fp32_flops=35.6 * T, hbm_bytes_per_s=936 * G, link_bytes_per_s=112.5 * G,
             intra_node_busbw=_PCIE4,
             approximate=["bf16_flops", "fp16_flops", "fp32_flops", "hbm_bytes_per_s",
                          "link_bytes_per_s", "intra_node_busbw"],
             note="NVLink bridge joins pairs only: collectives over PCIe gen4"),
    Hardware(name="RTX-4090", aliases=["4090", "rtx4090", "rtx-4090", "geforce rtx 4090"],
             marketed_gb=24, usable_bytes=_mib(24564), bf16_flops=165.2 * T, fp16_flops=165.2 * T,
             fp32_flops=82.6 * T, hbm_bytes_per_s=1008 * G, intra_node_busbw=_PCIE4,
             approximate=["bf16_flops", "fp16_flops", "intra_node_busbw"],
             note="no NVLink: collectives over PCIe gen4"),
    Hardware(name="H100-SXM5-80GB", aliases=["h100-80gb", "h100-sxm", "h100-sxm5",
                                             "h100-sxm-80gb", "h100 80gb hbm3"],
             marketed_gb=80, usable_bytes=_mib(81559), bf16_flops=989.4 * T, fp16_flops=989.4 * T,
             fp32_flops=67 * T, hbm_bytes_per_s=3350 * G, link_bytes_per_s=900 * G,
             intra_node_busbw=370 * G, inter_node_busbw=_IB400,
             approximate=["inter_node_busbw"], note=_NODE_NOTE),
    Hardware(name="H100-PCIe-80GB", aliases=["h100-pcie", "h100 pcie", "h100-pcie-80gb",
                                             "h100-pcie-80"],
             marketed_gb=80, usable_bytes=_mib(81559), bf16_flops=756 * T, fp16_flops=756 * T,
             fp32_flops=51 * T, hbm_bytes_per_s=2000 * G, link_bytes_per_s=600 * G,
             intra_node_busbw=_PCIE5, inter_node_busbw=None,
             approximate=["usable_bytes", "link_bytes_per_s", "intra_node_busbw"],
             note="NVLink bridge joins pairs only: collectives over PCIe gen5"),
    Hardware(name="H200-SXM-141GB", aliases=["h200", "h200-141gb", "h200-sxm", "h200 141gb"],
             marketed_gb=141, usable_bytes=_mib(143771), bf16_flops=989.4 * T,
             fp16_flops=989.4 * T, fp32_flops=67 * T, hbm_bytes_per_s=4800 * G,
             link_bytes_per_s=900 * G, intra_node_busbw=370 * G, inter_node_busbw=_IB400,
             approximate=["inter_node_busbw"], note=_NODE_NOTE),
    Hardware(name="B200", aliases=["b200", "b200-180gb"],
             marketed_gb=180, usable_bytes=_mib(183359), bf16_flops=2250 * T, fp16_flops=2250 * T,
             fp32_flops=80 * T, hbm_bytes_per_s=8000 * G, link_bytes_per_s=1800 * G,
             intra_node_busbw=680 * G, inter_node_busbw=_IB400,
             approximate=["marketed_gb", "bf16_flops", "fp16_flops", "fp32_flops",
                          "intra_node_busbw", "inter_node_busbw"], note=_NODE_NOTE),
    Hardware(name="GH200-96GB", aliases=["gh200", "gh200-96gb", "gh200 480gb"],
             marketed_gb=96, usable_bytes=_mib(97900), bf16_flops=989 * T, fp16_flops=989 * T,
             fp32_flops=67 * T, hbm_bytes_per_s=4000 * G, link_bytes_per_s=900 * G,
             intra_node_busbw=370 * G, inter_node_busbw=_IB400,
             approximate=["usable_bytes", "fp32_flops", "link_bytes_per_s", "intra_node_busbw",
                          "inter_node_busbw"],
             note="the 96 GB HBM3 model; the HBM3e model has 141–144 GB"),
    Hardware(name="T4", aliases=["t4", "tesla t4", "nvidia t4"],
             marketed_gb=16, usable_bytes=_mib(15360), bf16_flops=None, fp16_flops=65 * T,
             fp32_flops=8.1 * T, hbm_bytes_per_s=320 * G, intra_node_busbw=12 * G,
             approximate=["usable_bytes", "intra_node_busbw"],
             note="no bf16 on T4 (Turing: fp16 tensor cores only); collectives over PCIe gen3"),
    Hardware(name="A10", aliases=["a10", "nvidia a10"],
             marketed_gb=24, usable_bytes=_mib(23028), bf16_flops=125 * T, fp16_flops=125 * T,
             fp32_flops=31.2 * T, hbm_bytes_per_s=600 * G, intra_node_busbw=_PCIE4,
             approximate=["usable_bytes", "intra_node_busbw"],
             note="no NVLink: collectives over PCIe gen4"),
    Hardware(name="A40", aliases=["a40", "nvidia a40"],
             marketed_gb=48, usable_bytes=_mib(46068), bf16_flops=149.7 * T,
             fp16_flops=149.7 * T, fp32_flops=37.4 * T, hbm_bytes_per_s=696 * G,
             link_bytes_per_s=112.5 * G, intra_node_busbw=_PCIE4,
             approximate=["usable_bytes", "intra_node_busbw"],
             note="NVLink bridge joins pairs only: collectives over PCIe gen4"),
    Hardware(name="RTX-A6000", aliases=["a6000", "rtx a6000", "rtx-a6000", "rtxa6000"],
             marketed_gb=48, usable_bytes=_mib(49140), bf16_flops=154.8 * T,
             fp16_flops=154.8 * T, fp32_flops=38.7 * T, hbm_bytes_per_s=768 * G,
             link_bytes_per_s=112.5 * G, intra_node_busbw=_PCIE4,
             approximate=["intra_node_busbw"],
             note="NVLink bridge joins pairs only: collectives over PCIe gen4"),
    Hardware(name="A100-PCIe-40GB", aliases=["a100-pcie-40gb", "a100 pcie 40gb", "a100-pcie-40"],
             marketed_gb=40, usable_bytes=_mib(40960), bf16_flops=312 * T, fp16_flops=312 * T,
             fp32_flops=19.5 * T, hbm_bytes_per_s=1555 * G, link_bytes_per_s=600 * G,
             intra_node_busbw=_PCIE4, approximate=["usable_bytes", "intra_node_busbw"],
             note="NVLink bridge joins pairs only: collectives over PCIe gen4"),
    Hardware(name="A100-PCIe-80GB", aliases=["a100-pcie-80gb", "a100 pcie 80gb", "a100-pcie-80",
                                             "a100-pcie"],
             marketed_gb=80, usable_bytes=_mib(81920), bf16_flops=312 * T, fp16_flops=312 * T,
             fp32_flops=19.5 * T, hbm_bytes_per_s=1935 * G, link_bytes_per_s=600 * G,
             intra_node_busbw=_PCIE4, approximate=["intra_node_busbw"],
             note="NVLink bridge joins pairs only: collectives over PCIe gen4"),
    Hardware(name="H100-NVL-94GB", aliases=["h100-nvl", "h100 nvl", "h100nvl", "h100-nvl-94gb"],
             marketed_gb=94, usable_bytes=_mib(95830), bf16_flops=835 * T, fp16_flops=835 * T,
             fp32_flops=60 * T, hbm_bytes_per_s=3938 * G, link_bytes_per_s=600 * G,
             intra_node_busbw=_PCIE5,
             approximate=["usable_bytes", "fp32_flops", "intra_node_busbw"],
             note="NVLink bridge joins pairs only: collectives over PCIe gen5"),
    Hardware(name="H800-SXM5-80GB", aliases=["h800", "h800-80gb", "h800-sxm", "h800-sxm5"],
             marketed_gb=80, usable_bytes=_mib(81559), bf16_flops=989.4 * T,
             fp16_flops=989.4 * T, fp32_flops=67 * T, hbm_bytes_per_s=3350 * G,
             link_bytes_per_s=400 * G, intra_node_busbw=160 * G, inter_node_busbw=_IB400,
             approximate=["intra_node_busbw", "inter_node_busbw"],
             note="NVLink limited to 400 GB/s (export variant of H100 SXM); " + _NODE_NOTE),
    Hardware(name="GB200", aliases=["gb200", "gb200-nvl72", "gb200 nvl72"],
             marketed_gb=186, usable_bytes=_mib(189471), bf16_flops=2500 * T,
             fp16_flops=2500 * T, fp32_flops=80 * T, hbm_bytes_per_s=8000 * G,
             link_bytes_per_s=1800 * G, intra_node_busbw=680 * G, inter_node_busbw=_IB400,
             gpus_per_node=4,
             approximate=["usable_bytes", "bf16_flops", "fp16_flops", "fp32_flops",
                          "intra_node_busbw", "inter_node_busbw"],
             note="figures per Blackwell GPU of a GB200 superchip; " + _NODE_NOTE),
    Hardware(name="MI250X", aliases=["mi250x", "mi250", "instinct mi250x"],
             marketed_gb=64, usable_bytes=64 * G, bf16_flops=191.5 * T, fp16_flops=191.5 * T,
             fp32_flops=23.95 * T, hbm_bytes_per_s=1638.5 * G,
             approximate=["usable_bytes"],
             note="one MI250X is two devices of 64 GB; figures are per device (half the card); "
                  "usable memory taken as 64 GB"),
    Hardware(name="MI300X", aliases=["mi300x", "mi300", "instinct mi300x"],
             marketed_gb=192, usable_bytes=192 * G, bf16_flops=1307.4 * T, fp16_flops=1307.4 * T,
             fp32_flops=163.4 * T, hbm_bytes_per_s=5300 * G, intra_node_busbw=310 * G,
             inter_node_busbw=_IB400,
             approximate=["usable_bytes", "fp32_flops", "intra_node_busbw", "inter_node_busbw"],
             note="no rocm-smi total in the reference: usable memory taken as the marketed "
                  "192 GB; " + _NODE_NOTE),
    Hardware(name="MI325X", aliases=["mi325x", "mi325", "instinct mi325x"],
             marketed_gb=256, usable_bytes=256 * G, bf16_flops=1307.4 * T,
             fp16_flops=1307.4 * T, fp32_flops=163.4 * T, hbm_bytes_per_s=6000 * G,
             intra_node_busbw=310 * G, inter_node_busbw=_IB400,
             approximate=["usable_bytes", "fp32_flops", "intra_node_busbw", "inter_node_busbw"],
             note="usable memory taken as the marketed 256 GB; " + _NODE_NOTE),
    Hardware(name="RTX-4080", aliases=["4080", "rtx4080", "rtx-4080", "geforce rtx 4080"],
             marketed_gb=16, usable_bytes=_mib(16376), bf16_flops=97.5 * T, fp16_flops=97.5 * T,
             fp32_flops=48.7 * T, hbm_bytes_per_s=717 * G, intra_node_busbw=_PCIE4,
             approximate=["usable_bytes", "bf16_flops", "fp16_flops", "intra_node_busbw"],
             note="no NVLink: collectives over PCIe gen4"),
    Hardware(name="RTX-5090", aliases=["5090", "rtx5090", "rtx-5090", "geforce rtx 5090"],
             marketed_gb=32, usable_bytes=_mib(32607), bf16_flops=209.5 * T,
             fp16_flops=209.5 * T, fp32_flops=104.8 * T, hbm_bytes_per_s=1792 * G,
             intra_node_busbw=_PCIE5,
             approximate=["usable_bytes", "bf16_flops", "fp16_flops", "fp32_flops",
                          "intra_node_busbw"],
             note="no NVLink: collectives over PCIe gen5"),
]

#: the host link of each card: its PCIe generation (x16), one direction
_HOST_LINK = {
    _PCIE4: ("A100-SXM4-40GB", "A100-SXM4-80GB", "A100-PCIe-40GB", "A100-PCIe-80GB", "A10G",
             "A10", "L4", "L40S", "A40", "RTX-A6000", "RTX-3090", "RTX-4090", "RTX-4080",
             "MI250X"),
    _PCIE5: ("H100-SXM5-80GB", "H100-PCIe-80GB", "H100-NVL-94GB", "H800-SXM5-80GB",
             "H200-SXM-141GB", "B200", "RTX-5090", "MI300X", "MI325X"),
}
for _hw in KNOWN:
    _hw.host_link_bytes_per_s = next((bw for bw, cards in _HOST_LINK.items()
                                      if _hw.name in cards), None)

# Names that name a family with more than one memory size: the smaller one is taken
# (a fit on the smaller card is a fit on both) and the choice is said in `note`.
_AMBIGUOUS = {
    "a100": "A100-SXM4-40GB",
    "v100": "V100-SXM2-16GB",
    "h100": "H100-SXM5-80GB",        # SXM / PCIe 80 GB, NVL 94 GB
    "a100pcie": "A100-PCIe-40GB",
}

_NOISE = ("nvidia", "geforce", "tesla", "amd", "instinct", "hbm3e", "hbm3", "hbm2e", "hbm2")


def normalise(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' → 'h10080': lower case, vendor words and separators gone,
    '80GB'/'80G'/'80GiB' → '80'."""
    s = name.lower()
    for w in _NOISE:
        s = s.replace(w, " ")
    s = re.sub(r"(\d+)\s*gi?b\b", r"\1", s)
    s = re.sub(r"(?<![a-z])(\d{2,3})\s*g\b", r"\1", s)   # '80g' but not 'a10g'
    return re.sub(r"[^a-z0-9]", "", s)


def _index() -> dict[str, Hardware]:
    idx: dict[str, Hardware] = {}
    for hw in KNOWN:
        for n in [hw.name, *hw.aliases]:
            idx.setdefault(normalise(n), hw)
    return idx


_INDEX = _index()


def names() -> list[str]:
    return [hw.name for hw in KNOWN]


def lookup(name: str) -> Hardware:
    """A catalogue entry by any usual spelling: H100, h100-80gb, A100-40GB, 4090, MI300X…

    Raises UnknownGPU (a ValueError) listing the known names.
    """
    key = normalise(str(name))
    if key in _AMBIGUOUS:
        hw = next(h for h in KNOWN if h.name == _AMBIGUOUS[key])
        other = [h.name for h in KNOWN if normalise(h.name).startswith(key) and h is not hw]
        if not other:
            other = [h.name for h in KNOWN if h.name.lower().startswith(hw.name.lower()[:4])
                     and h is not hw]
        return hw.model_copy(update={"note": (
            f"'{name}' read as {hw.name} (the smaller memory size); name "
            f"{' or '.join(other)} for the other" + (f"; {hw.note}" if hw.note else ""))})
    hw = _INDEX.get(key)
    if hw is None:
        # 'h100sxm580' and friends: drop a trailing memory size the catalogue already implies
        for k, cand in _INDEX.items():
            if key.startswith(k) and key[len(k):].isdigit() and cand.marketed_gb is not None \
                    and key.endswith(str(int(cand.marketed_gb))):
                hw = cand
                break
    if hw is None:
        raise UnknownGPU(f"unknown GPU {name!r}; known: {', '.join(names())} "
                         f"(or give --gpu-memory, e.g. 80GiB)")
    return hw


def custom(memory_bytes: int, name: Optional[str] = None) -> Hardware:
    """A card known only by its memory (`--gpu-memory 80GiB`): no FLOP/s, no bandwidth.

    With a catalogue `name`, its speeds are kept and only the memory is replaced."""
    if memory_bytes <= 0:
        raise ValueError("GPU memory must be positive")
    if name:
        try:
            base = lookup(name)
            return base.model_copy(update={
                "usable_bytes": int(memory_bytes), "custom": True,
                "note": f"memory given explicitly; other figures from {base.name}"})
        except UnknownGPU:
            pass
    return Hardware(name=name or "custom", usable_bytes=int(memory_bytes), custom=True,
                    note="memory given explicitly; no speed figures")
