"""The dry run's process handling: the job's output is kept as a bounded tail, every process
the job started is ended (also one in a session of its own, as torchrun starts workers),
and how a job ended is said truthfully (SIGKILL, a CPU allocator's failure)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

from preflight.dryrun import procs
from preflight.dryrun.runner import _signal_of, run_dryrun


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_tail_buffer_keeps_the_last_bytes_and_counts_all():
    b = procs.TailBuffer(limit=10)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"q"):
        b.write(chunk)
    assert b.getvalue() == b"hijklmnopq" and b.total == 17
    b.write(b"0123456789ABCDEF")
    assert b.getvalue() == b"6789ABCDEF" and b.total == 33


def test_a_chatty_job_costs_the_parent_its_tail_only(tmp_path):
    script = tmp_path / "chatty.py"
    script.write_text("import sys\nline = 'x' * 999_999 + '\\n'\n"
                      "for _ in range(400):\n    sys.stdout.write(line)\nprint('LAST LINE')\n")
    code = textwrap.dedent(f"""
        import resource
        from preflight.dryrun.runner import run_dryrun
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        r = run_dryrun({str(script)!r}, device="cpu", timeout=300)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(r.status, len(r.stderr_tail), (after - before) // 1024)
        print(r.stderr_tail.strip()[-9:])
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cp = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        timeout=400, env={**os.environ, "PYTHONPATH": root})
    *_, head, last = cp.stdout.strip().splitlines()
    status, tail, grew_mib = head.split()
    assert status == "no_step", cp.stdout + cp.stderr
    assert int(tail) <= 4000
    assert int(grew_mib) < 64           # 400 MB went through; the parent kept 64 KiB of it
    assert last == "LAST LINE"


def test_a_process_in_its_own_session_is_ended_with_the_job(tmp_path):
    pidfile = tmp_path / "orphan.pid"
    script = tmp_path / "spawn.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal, time
        if os.fork() == 0:
            os.setsid()                                  # a group and session of its own
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            open({str(pidfile)!r}, "w").write(str(os.getpid()))
            while True:
                time.sleep(0.2)
        while not os.path.exists({str(pidfile)!r}):
            time.sleep(0.05)
        # the script returns at once: the worker it left behind is an orphan
    """))
    r = run_dryrun(str(script), device="cpu", timeout=300)
    assert r.status == "no_step"
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the orphaned worker survived the dry run"
    assert "could not be ended" not in r.message


def test_end_tree_kills_sigterm_ignoring_members_of_other_groups():
    token = "t%d" % os.getpid()
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import os, signal, subprocess, sys, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            p = subprocess.Popen([sys.executable, "-c",
                 "import signal, time\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
                 "print(flush=True)\\ntime.sleep(600)"],
                 start_new_session=True, stdout=subprocess.PIPE)
            p.stdout.readline()
            print(p.pid, flush=True)
            time.sleep(600)
        """)], stdout=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, procs.TOKEN_VAR: token})
    grandchild = int(child.stdout.readline())
    assert grandchild in procs.tree(child.pid, token)
    t = time.monotonic()
    assert procs.end_tree(child, token, grace=0.5, hard=5) == []
    assert time.monotonic() - t < 6
    assert not _alive(grandchild) and child.returncode == -signal.SIGKILL


def test_status_words_say_how_the_job_ended():
    assert "SIGKILL" in _signal_of(-9, "") and "out-of-memory killer" in _signal_of(-9, "")
    assert _signal_of(-11, "") == "ended by SIGSEGV before it reported"
    # torchrun's agent exits 1 and prints the worker's end
    assert "SIGKILL" in _signal_of(1, "  exitcode  : -9 (pid: 1234)\n")
    assert _signal_of(1, "Traceback ...") is None


def test_a_sigkilled_job_is_not_reported_as_never_started(tmp_path):
    script = tmp_path / "killed.py"
    script.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    r = run_dryrun(str(script), device="cpu", timeout=300)
    assert r.status == "killed"
    assert r.message.startswith("ended by SIGKILL before it reported")


def test_a_cpu_allocation_failure_is_an_oom(tmp_path):
    script = tmp_path / "cpu_oom.py"
    script.write_text("import torch\nx = torch.empty(1 << 62, dtype=torch.uint8)\n")
    r = run_dryrun(str(script), device="cpu", timeout=300)
    assert r.status == "oom", (r.status, r.message)
