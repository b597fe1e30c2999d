"""The process's device memory (nvidia-smi's figure) in the dry run: read through NVML for
this pid, else device-wide used minus what was used before CUDA was initialised; None with
the reason where nothing answers. NVML is a fake module put in sys.modules (no GPU here);
the bytes it reports go through the recorder to the JSON and the text report unchanged."""
import os
import sys
import types

import torch

from preflight.dryrun import DryrunResult, format_text
from preflight.dryrun.devmem import NO_CUDA, ProcessMemory, Sampler
from preflight.dryrun.instrument import Recorder
from preflight.dryrun.result import PhaseMemory

OWN = 1_234_567_890          # what NVML says this pid holds
OTHER = 987_654_321          # another process on the same GPU
BEFORE = 600_000_000         # device used before this process initialised CUDA


def fake_nvml(procs, used):
    """A pynvml with one GPU "GPU-fake": its compute processes and its used memory (a
    list: each call to nvmlDeviceGetMemoryInfo takes the next, the last one stays)."""
    m = types.ModuleType("pynvml")
    m.calls = []
    m.nvmlInit = lambda: m.calls.append("init")
    m.nvmlDeviceGetCount = lambda: 1
    m.nvmlDeviceGetHandleByIndex = lambda i: f"handle{i}"
    m.nvmlDeviceGetHandleByUUID = lambda u: "handle0" if u == "GPU-fake" else 1 / 0
    m.nvmlDeviceGetUUID = lambda h: b"GPU-fake"
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: procs

    def info(h):
        return types.SimpleNamespace(used=used.pop(0) if len(used) > 1 else used[0],
                                     total=141 * 2**30)
    m.nvmlDeviceGetMemoryInfo = info
    return m


def proc(pid, used):
    return types.SimpleNamespace(pid=pid, usedGpuMemory=used)


def test_per_process_entry_of_this_pid(monkeypatch):
    nvml = fake_nvml([proc(os.getpid() + 1, OTHER), proc(os.getpid(), OWN)], [BEFORE])
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    pm = ProcessMemory(uuid_of=lambda i: "GPU-fake")
    pm.start()
    assert nvml.calls == ["init"] and pm.unavailable is None
    assert pm.baseline == {"GPU-fake": BEFORE}
    assert pm.read(0) == OWN
    assert pm.source == "nvml_process"


def test_pid_hidden_falls_back_on_device_used_minus_before(monkeypatch):
    # a container's PID namespace: NVML lists the host's pid, never ours
    nvml = fake_nvml([proc(4242, OTHER)], [BEFORE, BEFORE + 777_000_000])
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    pm = ProcessMemory(pid=1, uuid_of=lambda i: None)     # no torch UUID: by index
    pm.start()
    assert pm.read(0) == 777_000_000
    assert pm.source == "nvml_device_delta"
    assert pm.baseline_of(0) == BEFORE


def test_no_nvml_module_says_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)      # import raises ImportError
    pm = ProcessMemory()
    pm.start()
    assert pm.read(0) is None and pm.source is None
    assert pm.unavailable.startswith("nvidia-ml-py (pynvml) cannot be imported")


def test_cuda_initialised_before_start_has_no_baseline(monkeypatch):
    nvml = fake_nvml([], [BEFORE])
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    pm = ProcessMemory(pid=1, uuid_of=lambda i: None)
    pm.start(cuda_initialised=True)
    assert pm.read(0) is None
    assert "CUDA was initialised before" in pm.unavailable


def test_sampler_keeps_the_largest_reading_until_taken():
    s = Sampler(lambda: None)
    for n in (5, 9, None, 7):
        s.note(n)
    assert s.take() == 9
    assert s.take() is None
    s.note(3)
    assert s.take() == 3


def test_recorder_on_cpu_says_no_cuda_device(tmp_path):
    rec = Recorder(str(tmp_path / "r.json"), "cpu")
    assert rec.devmem is None
    assert rec.ledger.process_peak is None
    assert rec.ledger.process_unavailable == NO_CUDA == "no CUDA device"
    fake = Recorder(str(tmp_path / "f.json"), "fake")
    assert fake.ledger.process_unavailable == "fake mode: nothing is allocated on a device"


def test_exact_bytes_through_recorder_to_json_and_text(monkeypatch, tmp_path):
    readings = [OWN - 1000, OWN]          # model init, then the step
    procs = [proc(os.getpid(), readings[0])]
    nvml = fake_nvml(procs, [BEFORE])
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    rec = Recorder(str(tmp_path / "r.json"), "cpu")
    rec.devmem = ProcessMemory(uuid_of=lambda i: "GPU-fake")
    rec.devmem.start()
    dev = torch.device("cuda", 0)
    for phase, n in zip(("model_init", "step"), readings):
        procs[0] = proc(os.getpid(), n)
        m = PhaseMemory(phase=phase, allocated=1, peak=2, reserved=3)
        rec.record_process(m, dev)        # mem_get_info fails on a CPU build: no cross-check
        rec.ledger.memory.append(m)
    # the first phase with a device started the polling thread (its readings are the
    # phase's own here: NVML's answer changes only between phases)
    assert rec.sampler.thread.daemon and rec.sampler.thread.is_alive()
    rec.close_process()
    rec.sampler.thread.join(5)
    assert not rec.sampler.thread.is_alive()
    L = rec.ledger
    assert [(m.process, m.process_peak, m.device_used) for m in L.memory] == \
        [(OWN - 1000, OWN - 1000, None), (OWN, OWN, None)]
    assert (L.process_peak, L.process_source, L.process_unavailable, L.process_baseline) == \
        (OWN, "nvml_process", None, None)
    res = DryrunResult(script="train.py", device="cuda", ranks=[L])
    j = res.to_json()["ranks"][0]
    assert j["process_peak"] == OWN and j["memory"][1]["process"] == OWN
    text = format_text(res)
    assert f"peak 1.1 GiB ({OWN:,} B), read by nvml_process" in text
    lines = text.splitlines()
    assert lines[-4].split() == ["phase", "allocated", "peak", "reserved", "process",
                                 "process", "peak"]
    assert lines[-2].split() == ["step", "1", "B", "2", "B", "3", "B", "1.1", "GiB",
                                 "1.1", "GiB"]


def test_device_delta_reported_with_its_baseline(monkeypatch, tmp_path):
    nvml = fake_nvml([], [BEFORE, BEFORE + 5_000_000])
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    rec = Recorder(str(tmp_path / "r.json"), "cpu")
    rec.devmem = ProcessMemory(pid=1, uuid_of=lambda i: None)
    rec.devmem.start()
    rec.sampler = Sampler(lambda: None)
    m = PhaseMemory(phase="step", allocated=1, peak=2, reserved=3)
    rec.record_process(m, torch.device("cuda", 0))
    rec.ledger.memory.append(m)
    rec.close_process()
    L = rec.ledger
    assert (L.process_peak, L.process_source, L.process_baseline) == \
        (5_000_000, "nvml_device_delta", BEFORE)
    text = format_text(DryrunResult(script="t.py", device="cuda", ranks=[L]))
    assert (f"read by nvml_device_delta (device used before CUDA was initialised: "
            f"{BEFORE:,} B)") in text


def test_cuda_run_without_reading_says_why():
    from preflight.dryrun.result import RankLedger
    r = RankLedger(device="cuda", process_unavailable="NVML cannot be initialised: x")
    text = format_text(DryrunResult(script="t.py", device="cuda", ranks=[r]))
    assert "device memory of the process: not measured — NVML cannot be initialised: x" in text


def test_compare_sets_the_process_tier_beside_the_reading():
    from preflight.dryrun import compare
    from preflight.dryrun.result import RankLedger
    led = types.SimpleNamespace(bytes_of=lambda k: 0, states_bytes=0, tensors_peak=None,
                                process_peak=OWN + OWN // 4)
    r = RankLedger(device="cuda", process_peak=OWN, process_source="nvml_process")
    row, = [x for x in compare(DryrunResult(script="t.py", device="cuda", ranks=[r]), led)
            if x.item == "process"]
    assert (row.predicted, row.measured, row.ratio) == (OWN + OWN // 4, OWN, 0.8)
    cpu = RankLedger(process_unavailable=NO_CUDA)
    assert "process" not in {x.item for x in compare(
        DryrunResult(script="t.py", ranks=[cpu]), led)}
