"""The device memory the process holds, as `nvidia-smi` shows it: the CUDA context, the
libraries' workspaces (cuBLAS, cuDNN), NCCL's buffers and the caching allocator's reserved
segments — more than `max_memory_reserved`, which counts only the last.

Read on CUDA only, by the first of these that answers:

1. `nvml_process`: NVML's list of compute processes on the device
   (`nvmlDeviceGetComputeRunningProcesses`), the entry whose pid is this process's;
2. `nvml_device_delta`: the device's used memory (`nvmlDeviceGetMemoryInfo`) minus what was
   used before this process initialised CUDA — what other processes allocate meanwhile is
   counted too (a container's own PID namespace hides the pid from NVML; MIG reports no
   memory per process);
3. `torch_device_delta`: the same difference through `torch.cuda.device_memory_used`.

`torch.cuda.mem_get_info` (device-wide: total − free) is recorded beside it as a
cross-check. No number is made up: where nothing answers, the reading is None and the
reason is kept (`unavailable`).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Optional

#: what each source means, for the report and the JSON
SOURCES = {
    "nvml_process": "NVML, this process's entry in the device's compute processes",
    "nvml_device_delta": "NVML, device-wide used memory minus the memory used before the "
                         "process initialised CUDA (other processes' changes included)",
    "torch_device_delta": "torch.cuda.device_memory_used (device-wide) minus the memory used "
                          "before the process initialised CUDA (other processes' changes "
                          "included)",
}

NO_CUDA = "no CUDA device"


def _torch_uuid(index: int) -> Optional[str]:
    """NVML's name of torch's device `index` ("GPU-…"), None when torch cannot say."""
    try:
        import torch    # here: only on CUDA, where the child has imported torch already
        u = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    except Exception:  # noqa: BLE001 - older builds, no device
        return None
    if u is None:
        return None
    s = str(u)
    return s if s.startswith(("GPU-", "MIG-")) else "GPU-" + s


def _visible_index(index: int) -> int:
    """NVML's index of torch's device `index`: CUDA_VISIBLE_DEVICES renumbers devices."""
    vis = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if index < len(vis) and vis[index].isdigit():
        return int(vis[index])
    return index


class ProcessMemory:
    """Reads the process's device memory; `start()` before CUDA is initialised, `read(i)`
    for torch's device index `i`. `nvml` and `uuid_of` replace pynvml and torch's device
    UUIDs (tests)."""

    def __init__(self, pid: Optional[int] = None, nvml: Any = None,
                 uuid_of: Optional[Callable[[int], Optional[str]]] = None):
        self.pid = os.getpid() if pid is None else pid
        self.nvml = nvml
        self.uuid_of = uuid_of or _torch_uuid
        self.sources: list[str] = []            # in the order first used
        self.unavailable: Optional[str] = None  # why nothing could be read
        self.baseline: dict[str, int] = {}      # NVML UUID → used before CUDA init
        self.torch_baseline: dict[int, int] = {}
        self._uuids: dict[int, Optional[str]] = {}

    # ------------------------------------------------------------ before CUDA is initialised
    def start(self, cuda_initialised: bool = False) -> None:
        why = []
        if self.nvml is None:
            try:
                # here, not at the top: NVML only serves a dry run on CUDA, and nvidia-ml-py
                # is an optional dependency (the `dryrun` extra)
                import pynvml
                self.nvml = pynvml
            except Exception as e:  # noqa: BLE001 - missing, or a broken install
                why.append(f"nvidia-ml-py (pynvml) cannot be imported: {e}")
        if self.nvml is not None:
            try:
                self.nvml.nvmlInit()
            except Exception as e:  # noqa: BLE001 - no driver, no library
                why.append(f"NVML cannot be initialised: {e}")
                self.nvml = None
        if cuda_initialised:
            why.append("CUDA was initialised before the dry run could note the device's "
                       "used memory")
        elif self.nvml is not None:
            try:
                for i in range(self.nvml.nvmlDeviceGetCount()):
                    h = self.nvml.nvmlDeviceGetHandleByIndex(i)
                    self.baseline[_text(self.nvml.nvmlDeviceGetUUID(h))] = \
                        int(self.nvml.nvmlDeviceGetMemoryInfo(h).used)
            except Exception as e:  # noqa: BLE001
                why.append(f"NVML cannot read the devices' used memory: {e}")
        else:
            self._torch_baseline(why)
        self.unavailable = "; ".join(why) or None

    def _torch_baseline(self, why: list) -> None:
        try:
            import torch    # here: only on CUDA, where the child has imported torch already
            if not hasattr(torch.cuda, "device_memory_used"):
                why.append("this torch has no torch.cuda.device_memory_used")
                return
            for i in range(torch.cuda.device_count()):
                self.torch_baseline[i] = int(torch.cuda.device_memory_used(i))
        except Exception as e:  # noqa: BLE001
            why.append(f"torch.cuda.device_memory_used fails: {e}")

    # ------------------------------------------------------------ readings
    def read(self, index: int) -> Optional[int]:
        """Bytes the process holds on torch's device `index`, or None (see `unavailable`)."""
        if self.nvml is not None:
            h, uuid = self._handle(index)
            if h is not None:
                own = self._own_entry(h)
                if own is not None:
                    return self._used("nvml_process", own)
                if uuid in self.baseline:
                    try:
                        used = int(self.nvml.nvmlDeviceGetMemoryInfo(h).used)
                    except Exception:  # noqa: BLE001
                        return None
                    return self._used("nvml_device_delta", max(0, used - self.baseline[uuid]))
            return None
        if index in self.torch_baseline:
            try:
                import torch    # here: only on CUDA, where the child has imported torch
                used = int(torch.cuda.device_memory_used(index))
            except Exception:  # noqa: BLE001
                return None
            return self._used("torch_device_delta", max(0, used - self.torch_baseline[index]))
        return None

    def _used(self, source: str, n: int) -> int:
        if source not in self.sources:
            self.sources.append(source)
        return n

    def baseline_of(self, index: int) -> Optional[int]:
        """The device's used bytes before CUDA was initialised (what the *_delta sources
        subtract), None when not noted."""
        if self.nvml is not None:
            return self.baseline.get(self._handle(index)[1])
        return self.torch_baseline.get(index)

    def _handle(self, index: int):
        if index not in self._uuids:
            self._uuids[index] = self.uuid_of(index)
        uuid = self._uuids[index]
        if uuid is not None:
            try:
                return self.nvml.nvmlDeviceGetHandleByUUID(uuid), uuid
            except Exception:  # noqa: BLE001 - fall back on the index
                pass
        try:
            h = self.nvml.nvmlDeviceGetHandleByIndex(_visible_index(index))
            return h, _text(self.nvml.nvmlDeviceGetUUID(h))
        except Exception:  # noqa: BLE001
            return None, None

    def _own_entry(self, handle) -> Optional[int]:
        try:
            procs = self.nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except Exception:  # noqa: BLE001 - not supported (MIG, some drivers)
            return None
        for p in procs or ():
            used = getattr(p, "usedGpuMemory", None)
            if getattr(p, "pid", None) == self.pid and used is not None:
                return int(used)
        return None

    @property
    def source(self) -> Optional[str]:
        return ", ".join(self.sources) or None


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class Sampler:
    """Polls `read()` in a daemon thread, so that a phase's peak is seen even when the
    process releases memory before the phase ends; `take()` returns the largest reading
    since the last `take()`."""

    def __init__(self, read: Callable[[], Optional[int]], interval: float = 0.005):
        self._read = read
        self.interval = interval
        self._high: Optional[int] = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.thread: Optional[threading.Thread] = None

    def start(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()

    def note(self, n: Optional[int]) -> None:
        if n is None:
            return
        with self._lock:
            self._high = n if self._high is None else max(self._high, n)

    def take(self) -> Optional[int]:
        with self._lock:
            high, self._high = self._high, None
        return high

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.note(self._read())
            except Exception:  # noqa: BLE001 - a reading never breaks the run
                return
