"""How long `lodviz serve` takes to exit after SIGTERM, as the parent process sees it.

    python benchmarks/sigterm.py --store COPY_OF_A_STORE [--runs 3]

Starts `lodviz serve` on the store, waits for its banner, opens a keep-alive
HTTP connection (as a browser would), sends SIGTERM and waits for the exit
(waitpid, so a zombie does not count). Prints one line per run. Use a copy:
the server owns the store while it runs.
"""

from __future__ import annotations

import argparse
import http.client
import signal
import subprocess
import time
import urllib.parse


def one_run(store: str) -> tuple[int, float]:
    process = subprocess.Popen(
        ["lodviz", "--store", store, "serve", "--no-open", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    url = ""
    for line in process.stdout:
        if line.startswith("lodviz is serving"):
            url = line.split(" at ", 1)[1].split(" ", 1)[0]
            break
    if not url:
        raise SystemExit("lodviz serve did not start")
    where = urllib.parse.urlparse(url)
    connection = http.client.HTTPConnection(where.hostname, where.port)
    connection.request("GET", "/")
    connection.getresponse().read()
    start = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    code = process.wait(60)
    return code, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for _ in range(args.runs):
        code, seconds = one_run(args.store)
        print(f"exit code {code} after {seconds:.2f} s")


if __name__ == "__main__":
    main()
