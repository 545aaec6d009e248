"""How long a fresh process takes to touch memory for the first time, one after another, as
an engine start does with its KV cache (issue 35, item 9: vLLM's start-up spent ~40 s at
85% system time here, most of it after "Explicitly set 4.0 GiB for KV cache").

On a VM whose balloon device reports free pages to the hypervisor (virtio-balloon free page
reporting), memory a process frees is handed back to the host, and the next process to
touch it waits for the host to fault it in again. The guest's setting is
/sys/module/page_reporting/parameters/page_reporting_order: free blocks of at least 2^order
pages are reported. This prints the setting and each fresh process's time to fill
``--mib`` MiB, ``--pause`` seconds apart (time for the reporting to run).

    PYTHONPATH=. .venv/bin/python experiments/verdicts/first_touch.py --mib 1024 --runs 4
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

PARAMS = Path("/sys/module/page_reporting/parameters")
CHILD = ("import time, numpy as np; t = time.perf_counter(); a = np.ones({n}, dtype=np.uint8);"
         " print(time.perf_counter() - t)")


def reporting() -> str:
    """The guest's free page reporting settings, as ``name=value`` pairs."""
    if not PARAMS.is_dir():
        return "no free page reporting in this kernel"
    return " ".join(f"{p.name}={p.read_text().strip()}" for p in sorted(PARAMS.iterdir()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--pause", type=float, default=5.0)
    args = ap.parse_args()
    print(f"free page reporting: {reporting()}")
    n = args.mib << 20
    for i in range(args.runs):
        out = subprocess.run([sys.executable, "-c", CHILD.format(n=n)], capture_output=True,
                             text=True, check=True).stdout
        s = float(out)
        print(f"  process {i}: {args.mib} MiB touched in {s:.2f} s "
              f"({s / (n >> 12) * 1e6:.2f} µs a 4-KiB page)", flush=True)
        time.sleep(args.pause)


if __name__ == "__main__":
    main()
