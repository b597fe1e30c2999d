"""The GPU catalogue and the size/count parsing it relies on."""

import pytest

from preflight.hardware import KNOWN, Hardware, UnknownGPU, custom, lookup
from preflight.units import GB, GiB, fmt_bytes, parse_count, parse_size


@pytest.mark.parametrize("typed,name", [
    ("H100", "H100-SXM5-80GB"), ("h100-80gb", "H100-SXM5-80GB"), ("H100-80GB", "H100-SXM5-80GB"),
    ("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"), ("h100 pcie", "H100-PCIe-80GB"),
    ("A100-40GB", "A100-SXM4-40GB"), ("a100_80g", "A100-SXM4-80GB"),
    ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"), ("4090", "RTX-4090"),
    ("NVIDIA GeForce RTX 4090", "RTX-4090"), ("3090", "RTX-3090"), ("MI300X", "MI300X"),
    ("AMD Instinct MI300X", "MI300X"), ("H200", "H200-SXM-141GB"), ("A10G", "A10G"),
    ("L4", "L4"), ("L40S", "L40S"), ("V100-32GB", "V100-SXM2-32GB"),
    ("Tesla V100-SXM2-16GB", "V100-SXM2-16GB"), ("B200", "B200"), ("mi250x", "MI250X"),
])
def test_names_people_type(typed, name):
    assert lookup(typed).name == name


def test_ambiguous_family_names_take_the_smaller_card_and_say_so():
    a100 = lookup("A100")
    assert a100.name == "A100-SXM4-40GB" and "A100-SXM4-80GB" in a100.note
    assert lookup("V100").name == "V100-SXM2-16GB"


def test_a10g_is_not_a10():
    assert lookup("A10").name == "A10" and lookup("A10G").name == "A10G"
    assert lookup("A10").bf16_flops != lookup("A10G").bf16_flops


def test_catalogue_has_the_cards_people_train_on():
    want = {"T4": "T4", "A10": "A10", "A10G": "A10G", "A40": "A40", "RTX A6000": "RTX-A6000",
            "L4": "L4", "L40S": "L40S", "V100-16GB": "V100-SXM2-16GB",
            "V100-32GB": "V100-SXM2-32GB", "A100-40GB": "A100-SXM4-40GB",
            "A100-80GB": "A100-SXM4-80GB", "A100 PCIe 40GB": "A100-PCIe-40GB",
            "A100 PCIe 80GB": "A100-PCIe-80GB", "H100 SXM": "H100-SXM5-80GB",
            "H100 PCIe": "H100-PCIe-80GB", "H100 NVL": "H100-NVL-94GB", "H800": "H800-SXM5-80GB",
            "H200": "H200-SXM-141GB", "B200": "B200", "GB200": "GB200", "MI250X": "MI250X",
            "MI300X": "MI300X", "MI325X": "MI325X", "RTX 3090": "RTX-3090",
            "RTX 4080": "RTX-4080", "RTX 4090": "RTX-4090", "RTX 5090": "RTX-5090",
            "NVIDIA H100 80GB HBM3": "H100-SXM5-80GB", "NVIDIA A100-SXM4-80GB": "A100-SXM4-80GB"}
    assert {k: lookup(k).name for k in want} == want


def test_ambiguous_names_take_the_smaller_card_and_say_so():
    for name, card, other in (("a100", "A100-SXM4-40GB", "A100-SXM4-80GB"),
                              ("V100", "V100-SXM2-16GB", "V100-SXM2-32GB"),
                              ("H100", "H100-SXM5-80GB", "H100-NVL-94GB"),
                              ("a100 pcie", "A100-PCIe-40GB", "A100-PCIe-80GB")):
        hw = lookup(name)
        assert hw.name == card and "smaller memory size" in hw.note and other in hw.note


def test_ambiguous_name_is_said_in_the_text_output():
    from tests.conftest import run_cli
    r = run_cli("estimate", "--params", "1e9", "--optimizer", "adamw", "--gpu", "a100")
    assert "'a100' read as A100-SXM4-40GB (the smaller memory size)" in r.stdout


def test_unknown_gpu_lists_the_known_ones():
    with pytest.raises(UnknownGPU) as e:
        lookup("P100")
    assert isinstance(e.value, ValueError)
    for hw in KNOWN:
        assert hw.name in str(e.value)


def test_usable_bytes_are_nvidia_smi_mib():
    assert lookup("H100").usable_bytes == 81559 * 2**20
    assert lookup("H200").usable_bytes == 143771 * 2**20
    assert lookup("4090").usable_bytes == 24564 * 2**20
    # "80 GB" is neither 80 GB nor 80 GiB of room
    assert lookup("H100").usable_bytes < 80 * GiB


def test_catalogue_figures():
    h100 = lookup("H100")
    assert h100.bf16_flops == 989.4e12 and h100.fp32_flops == 67e12
    assert h100.hbm_bytes_per_s == 3350e9 and h100.intra_node_busbw == 370e9
    assert lookup("A100-80GB").intra_node_busbw == 230e9
    assert lookup("V100").bf16_flops is None and lookup("V100").fp16_flops == 125e12
    for hw in KNOWN:
        assert isinstance(hw, Hardware) and hw.usable_bytes > 0


def test_custom_memory():
    hw = custom(parse_size("80GiB"))
    assert hw.usable_bytes == 80 * GiB and hw.custom and hw.bf16_flops is None
    named = custom(40 * GB, name="H100")
    assert named.usable_bytes == 40 * GB and named.bf16_flops == 989.4e12


@pytest.mark.parametrize("text,n", [("80GiB", 80 * 2**30), ("40GB", 40 * 10**9),
                                    ("512MiB", 512 * 2**20), ("1.5TB", 15 * 10**11),
                                    ("24 GB", 24 * 10**9), ("1024B", 1024)])
def test_parse_size(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("bad", ["80G", "80", "-1GB", "lots", "0GB", "80gigs"])
def test_parse_size_refuses_ambiguous_or_bad(bad):
    with pytest.raises(ValueError):
        parse_size(bad)


@pytest.mark.parametrize("text,n", [("7e9", 7_000_000_000), ("7B", 7_000_000_000),
                                    ("1.5b", 1_500_000_000), ("125M", 125_000_000),
                                    ("6,738,415,616", 6_738_415_616), (7e9, 7_000_000_000)])
def test_parse_count(text, n):
    assert parse_count(text) == n


@pytest.mark.parametrize("bad", ["-1", "1.5", "x", 2.5])
def test_parse_count_refuses(bad):
    with pytest.raises(ValueError):
        parse_count(bad)


def test_bytes_shown_in_both_units():
    assert fmt_bytes(112 * 10**9) == "112.00 GB (104.31 GiB)"
    assert fmt_bytes(None) == "unknown"
