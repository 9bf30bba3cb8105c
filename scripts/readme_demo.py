#!/usr/bin/env python3
"""Run README.md's first command, the demo, and every command it prints.

Usage: scripts/readme_demo.py [--debug]

Run from the root of a clone. Reads the first command of README.md's
"Two commands" block (`cargo run --release -- demo`) and runs it as written,
in the clone with its default data directory (`./trackhouse-data`, which
must not exist yet). With --debug, `--release` is dropped and `--days 1`
added: the same program from the debug build the tests use, with one day of
telemetry instead of seven, so CI needs no release build.

Then: waits for the printed calls and for `/healthz`, waits until the
telemetry has been flushed to Parquet (`trackhouse_parquet_files` on
`/metrics`), runs every printed command in one bash with `set -euo
pipefail` (the `curl` calls and the `cargo run ... admin/import` lines), and
checks each answer: a JSON answer must say `"success":true` (`false` under
the comment that announces an error), the session lines must print a hash,
the CSV calls a header and rows, `admin --help` its usage, `import` a
summary with no rejected line. Finally stops the demo with Ctrl-C (SIGINT)
and expects exit status 0.
"""

import argparse
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

LAST_LINE = "Stop with Ctrl-C."
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def first_command(readme: str) -> str:
    block = re.search(r"## Two commands\s+```sh\n(.*?)```", readme, re.S)
    if not block:
        raise SystemExit("readme_demo: README.md has no '## Two commands' block")
    line = block.group(1).splitlines()[0]
    return re.sub(r"\s+#.*$", "", line).strip()


def reader(pipe, sink: queue.Queue) -> None:
    for line in iter(pipe.readline, ""):
        sink.put(line.rstrip("\n"))
    sink.put(None)


def http(url: str, timeout: float = 10) -> str:
    with NO_PROXY.open(url, timeout=timeout) as response:
        return response.read().decode("utf-8", "replace")


def wait(what: str, test, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = test()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit(f"readme_demo: timed out waiting for {what}")


def parquet_files(base: str) -> float:
    for line in http(f"{base}/metrics").splitlines():
        if line.startswith("trackhouse_parquet_files "):
            return float(line.split()[1])
    return 0.0


def blocks(printed: list[str]) -> list[tuple[str, str]]:
    """(comment above, command) for every command line after the serving line."""
    start = next(i for i, l in enumerate(printed) if l.startswith("Trackhouse demo is serving on"))
    out, comment = [], ""
    for line in printed[start + 1:]:
        if line.startswith("#"):
            comment = line
        elif line and not line.startswith(("Accounts, passwords and keys:", "Demo telemetry")) and line != LAST_LINE:
            out.append((comment, line))
    return out


def run_commands(commands: list[str], env: dict) -> list[str]:
    script = ["set -euo pipefail"]
    for i, command in enumerate(commands):
        script += [command, "echo", f"echo '@@end {i}@@'"]
    done = subprocess.run(["bash", "-c", "\n".join(script)], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(
            f"readme_demo: the printed commands failed (exit status {done.returncode})\n"
            f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        )
    outputs, rest = [], done.stdout
    for i in range(len(commands)):
        output, rest = rest.split(f"\n@@end {i}@@\n", 1)
        outputs.append(output.strip())
    return outputs


def check(comment: str, command: str, output: str) -> str | None:
    """What is wrong with a command's output, if anything."""
    if command.startswith(("HASH=", "PANEL=", "FILE=")):
        return None if re.fullmatch(r"[0-9a-f]{32}", output) else "no session hash or file id"
    if " admin " in command:
        return None if "Usage:" in output else "no usage text"
    try:
        answer = json.loads(output)
    except ValueError:
        answer = None
    if " import " in command:
        if not isinstance(answer, dict) or answer.get("rejected") != 0 or not answer.get("lines"):
            return "no import summary with every line stored"
        return None
    if "/links/" in command:
        # A geo link's feed: the link is live and shows the moving trucks.
        if not isinstance(answer, dict) or answer.get("state") != "enabled":
            return "the link's feed is not live"
        placed = [o for o in answer.get("objects", []) if o.get("position")]
        return None if placed else "the link's feed places no tracker"
    if isinstance(answer, dict):
        expected = not comment.startswith("# Errors")
        return None if answer.get("success") is expected else f"success is not {str(expected).lower()}"
    if "/metrics" in command:
        return None if output.startswith("#") else "no metrics"
    lines = output.splitlines()
    if len(lines) < 2:
        return "fewer than two lines (a CSV header and a row)"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="the debug build and one day of telemetry")
    args = parser.parse_args()

    command = first_command(Path("README.md").read_text(encoding="utf-8"))
    if args.debug:
        command = command.replace(" --release", "") + " --days 1"
    if Path("trackhouse-data").exists():
        raise SystemExit("readme_demo: ./trackhouse-data exists; the check needs a clone without it")
    print(f"readme_demo: {command}", flush=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKHOUSE_")}
    for proxy in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(proxy, None)
    started = time.monotonic()
    demo = subprocess.Popen(
        ["bash", "-c", f"exec {command}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, env=env, start_new_session=True,
    )
    out: queue.Queue = queue.Queue()
    log: queue.Queue = queue.Queue()
    threading.Thread(target=reader, args=(demo.stdout, out), daemon=True).start()
    threading.Thread(target=reader, args=(demo.stderr, log), daemon=True).start()
    printed: list[str] = []
    log_lines: list[str] = []
    status = None
    try:
        deadline = time.monotonic() + 3600  # a first release build takes about 20 minutes
        while not printed or printed[-1] != LAST_LINE:
            try:
                line = out.get(timeout=max(deadline - time.monotonic(), 0.1))
            except queue.Empty:
                raise SystemExit("readme_demo: the demo printed no calls within an hour")
            if line is None:
                while not log.empty():
                    log_lines.append(log.get() or "")
                raise SystemExit("readme_demo: the demo stopped:\n" + "\n".join(log_lines[-40:]))
            printed.append(line)
        print(f"readme_demo: the demo printed its calls after {time.monotonic() - started:.0f} s", flush=True)
        base = next(l for l in printed if l.startswith("Trackhouse demo is serving on")).split()[-1]
        wait("/healthz", lambda: json.loads(http(f"{base}/healthz")).get("success"), 60)
        wait("the first flush to Parquet", lambda: parquet_files(base) > 0, 120)
        pairs = blocks(printed)
        outputs = run_commands([c for _, c in pairs], env)
        failures = []
        for (comment, command), output in zip(pairs, outputs):
            problem = check(comment, command, output)
            mark = "ok  " if problem is None else "FAIL"
            print(f"readme_demo: {mark} {command[:110]}", flush=True)
            if problem:
                failures.append(f"{command}\n  -> {problem}; output:\n{output[:2000]}")
        if failures:
            raise SystemExit("readme_demo: printed commands that did not work:\n" + "\n".join(failures))
        print(f"readme_demo: {len(pairs)} printed commands work", flush=True)
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGINT)
        try:
            status = demo.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)
            status = "killed: no exit within 60 s of Ctrl-C"
    if status != 0:
        raise SystemExit(f"readme_demo: the demo did not stop cleanly on Ctrl-C: {status}")
    print(f"readme_demo: passed in {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
