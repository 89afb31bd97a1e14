"""Start the two-process run of mp_worker.py and collect its reports."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys

WORKER = pathlib.Path(__file__).with_name("mp_worker.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_two_processes(out_dir: pathlib.Path, timeout: float = 120) -> list[dict]:
    """Run both processes to completion (killed past ``timeout``); return their reports."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    logs = [(out_dir / f"process-{pid}.log").open("w") for pid in (0, 1)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-X", "faulthandler", str(WORKER), str(pid), str(port), str(out_dir)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        for pid, log in zip((0, 1), logs)
    ]
    try:
        for p in procs:
            p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGABRT)  # faulthandler prints where it hung
        raise
    finally:
        for p in procs:
            if p.poll() is None:
                p.wait(timeout=10)
        for log in logs:
            log.close()
    for pid, p in zip((0, 1), procs):
        if p.returncode != 0:
            tail = (out_dir / f"process-{pid}.log").read_text()[-4000:]
            raise RuntimeError(f"process {pid} exited with {p.returncode}:\n{tail}")
    return [json.loads((out_dir / f"process-{pid}.json").read_text()) for pid in (0, 1)]
