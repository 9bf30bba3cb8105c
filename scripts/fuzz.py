#!/usr/bin/env python3
"""Fuzz every call of a real `trackhouse` from its own OpenAPI document.

Usage: scripts/fuzz.py PATH/TO/trackhouse [--max-examples N] [--seed S]

Starts `trackhouse demo` on a fresh data directory (one day of telemetry) on
a free port of 127.0.0.1, then runs Schemathesis against `/openapi.json` as
the server serves it, authenticated per operation with the demo's API key,
user session, panel session and ingest token (scripts/fuzz/hooks.py). Every
operation, GET and POST alike, is fuzzed with a fixed seed and a bounded
number of examples. A run fails on:

- a 5xx answer (`not_a_server_error`);
- an HTTP status, content type, header or body the document does not give
  for that operation (`status_code_conformance`, `content_type_conformance`,
  `response_headers_conformance`, `response_schema_conformance`: an error
  must be the spec's error object, its code among those the call declares
  for that status);
- a request that takes longer than --request-timeout (a hang);
- the server logging an error or a panic, or not stopping cleanly on SIGTERM.

Left out, because the spec decides otherwise: `negative_data_rejection`
(parameters are read leniently, clarification 1: `"5"` is a good integer),
`positive_data_acceptance` (a valid-looking request may name a tracker that
is not there), `unsupported_method` and `allow_header_conformance` (other
methods are code 112, HTTP 400, not 405), `ignored_auth` (a missing or
wrong hash is code 3 or 4, HTTP 400, not 401).
"""

import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "missing_required_header",
]


def lines_of(pipe, sink: queue.Queue) -> None:
    for line in iter(pipe.readline, ""):
        sink.put(line.rstrip("\n"))
    sink.put(None)


def wait_for(lines: queue.Queue, seen: list, test, what: str, timeout: float):
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SystemExit(f"{Path(sys.argv[0]).stem}: timed out waiting for {what}")
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            continue
        if line is None:
            raise SystemExit(f"{Path(sys.argv[0]).stem}: the server exited before {what}:\n" + "\n".join(seen[-40:]))
        seen.append(line)
        found = test(line)
        if found:
            return found


def serving_addr(line: str):
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    fields = entry.get("fields", {})
    return fields.get("addr") if fields.get("message") == "serving" else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", type=Path)
    parser.add_argument("--max-examples", type=int, default=25)
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--request-timeout", type=float, default=30.0)
    # One worker: the run is then the same for the same seed, and
    # Schemathesis's examples phase, run in two threads, once failed inside
    # CPython ("SystemError: AST constructor recursion depth mismatch").
    parser.add_argument("--workers", default="1")
    args = parser.parse_args()

    schemathesis = shutil.which("schemathesis")
    if schemathesis is None:
        print("fuzz: schemathesis is not installed (pip install schemathesis); test.sh installs it", file=sys.stderr)
        return 2

    work = Path(tempfile.mkdtemp(prefix="trackhouse-fuzz-"))
    data = work / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACKHOUSE_", "CARGO_"))}
    server = subprocess.Popen(
        [
            str(args.binary), "demo", "--days", "1",
            "--data-dir", str(data), "--listen", "127.0.0.1:0", "--log-format", "json",
            # The fuzzer sends far more than any one client may: no 429 in the way.
            "--rate-user-session", "100000/s", "--rate-api-key", "100000/s",
            "--rate-panel-dealer", "100000/s", "--rate-anonymous-ip", "100000/s",
        ],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env,
    )
    log: queue.Queue = queue.Queue()
    out: queue.Queue = queue.Queue()
    threading.Thread(target=lines_of, args=(server.stderr, log), daemon=True).start()
    threading.Thread(target=lines_of, args=(server.stdout, out), daemon=True).start()
    log_seen: list = []
    try:
        addr = wait_for(log, log_seen, serving_addr, "the serving line", 120)
        wait_for(out, [], lambda l: l == "Stop with Ctrl-C.", "the demo's telemetry", 300)
        url = f"http://{addr}"
        print(f"fuzz: trackhouse demo serving on {url}", flush=True)
        fuzz_env = dict(env)
        fuzz_env.update({
            "TRACKHOUSE_URL": url,
            "TRACKHOUSE_DEMO_JSON": str(data / "demo.json"),
            "SCHEMATHESIS_HOOKS": "hooks",
            "PYTHONPATH": str(HERE / "fuzz"),
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        })
        command = [
            schemathesis, "run", f"{url}/openapi.json",
            "--url", url,
            "--checks", ",".join(CHECKS),
            "--phases", "examples,coverage,fuzzing",
            "--max-examples", str(args.max_examples),
            "--seed", str(args.seed),
            "--generation-database", "none",
            "--request-timeout", str(args.request_timeout),
            "--workers", args.workers,
            "--generation-with-security-parameters", "false",
            "--report", "junit",
            "--report-dir", str(work / "report"),
            "--no-color",
        ]
        print("fuzz: " + " ".join(command), flush=True)
        fuzzed = subprocess.run(command, env=fuzz_env, cwd=work, check=False)
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        try:
            status = server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            status = "killed after 60 s"
    while True:
        try:
            line = log.get(timeout=5)
        except queue.Empty:
            break
        if line is None:
            break
        log_seen.append(line)
    problems = []
    if fuzzed.returncode != 0:
        problems.append(f"schemathesis failed (exit status {fuzzed.returncode}; report in {work / 'report'})")
    if status != 0:
        problems.append(f"the server did not stop cleanly on SIGTERM: {status}")
    errors = [l for l in log_seen if '"level":"ERROR"' in l or "panicked" in l]
    if errors:
        problems.append("the server logged errors:\n" + "\n".join(errors[:20]))
    if problems:
        print("fuzz: FAILED\n" + "\n".join(problems), file=sys.stderr)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("fuzz: passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
