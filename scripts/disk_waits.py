#!/usr/bin/env python3
"""Which server thread waits on the disk, in which kernel call, while the
slow bodies of an `ingest_load` point are in flight.

    scripts/disk_waits.py sample OUT        # beside ingest_load, as root
    scripts/disk_waits.py report OUT BODIES_DIR [--over MS]

`sample` waits for a `trackhouse ... serve` process, then every 20 ms
writes to OUT the machine's CPU counters (/proc/stat) and, for each of the
server's threads in state D (uninterruptible: waiting on I/O), its name
and kernel stack (/proc/<pid>/task/<tid>/stack, which needs root), until
the server exits. One pass takes well under a millisecond of CPU.

`report` lines those samples up with the bodies CSV that
`ingest_load --bodies-dir` writes: the latency percentiles, then each
window of overlapping bodies slower than --over ms (default 100) with the
CPU's split (user, system, idle, iowait) in it and the stacks seen then,
and last the stacks of the whole run by thread.

Used for docs/benchmarks/ingest-experiments.md, "Where the WAL's
fdatasync waits" (2026-12-07).
"""

import collections
import glob
import os
import sys
import time


def find_server():
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if len(args) > 1 and b"trackhouse" in os.path.basename(args[0]) and b"serve" in args:
            return pid
    return None


def kernel_stack(path):
    try:
        with open(path) as f:
            frames = [line.split()[1].split("+")[0] for line in f if line.strip()]
    except (OSError, IndexError):
        return "?"
    return "<".join(frames[:12])


def sample(out_path):
    pid = None
    while pid is None:
        pid = find_server()
        time.sleep(0.05)
    with open(out_path, "w") as out:
        print(f"# pid {pid}", file=out, flush=True)
        while os.path.exists(f"/proc/{pid}"):
            now = time.time()
            ms = int(now * 1000)
            try:
                with open("/proc/stat") as f:
                    cpu = f.readline().split()
                print(f"{ms} cpu {' '.join(cpu[1:8])}", file=out)
                for tid in os.listdir(f"/proc/{pid}/task"):
                    try:
                        with open(f"/proc/{pid}/task/{tid}/stat") as f:
                            stat = f.read()
                    except OSError:
                        continue
                    name = stat[stat.index("(") + 1 : stat.rindex(")")].replace(" ", "_")
                    if stat[stat.rindex(")") + 2] == "D":
                        stack = kernel_stack(f"/proc/{pid}/task/{tid}/stack")
                        print(f"{ms} D {tid} {name} {stack}", file=out)
            except (OSError, ValueError):
                pass
            out.flush()
            time.sleep(max(0.0, 0.02 - (time.time() - now)))


def read_bodies(bodies_dir):
    bodies = []
    for path in glob.glob(os.path.join(bodies_dir, "*.csv")):
        with open(path) as f:
            lines = f.read().splitlines()
        started = int(lines[0].split("started_unix_ms=")[1].split()[0])
        for line in lines[2:]:
            fields = line.split(",")
            due, answered, latency = float(fields[4]), float(fields[5]), float(fields[6])
            bodies.append((started + due, started + answered, latency))
    return sorted(bodies)


def read_samples(path):
    cpu, waits = [], collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            parts = line.rstrip("\n").split(" ", 4)
            if parts[1] == "cpu":
                cpu.append((int(parts[0]), [int(x) for x in line.split()[2:9]]))
            elif parts[1] == "D" and len(parts) == 5:
                waits[int(parts[0])].append((parts[3], parts[4]))
    return cpu, waits


def cpu_split(cpu, start, end):
    inside = [c for c in cpu if start <= c[0] <= end]
    if len(inside) < 2:
        return None
    delta = [b - a for a, b in zip(inside[0][1], inside[-1][1])]
    total = sum(delta) or 1
    return (delta[0] + delta[1]) / total, delta[2] / total, delta[3] / total, delta[4] / total


def report(samples_path, bodies_dir, over):
    bodies = read_bodies(bodies_dir)
    cpu, waits = read_samples(samples_path)
    latencies = sorted(b[2] for b in bodies)

    def pct(p):
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))]

    print(
        f"{len(latencies)} bodies: p50 {pct(0.5):.1f} ms, p99 {pct(0.99):.1f}, "
        f"p99.9 {pct(0.999):.1f}, max {latencies[-1]:.1f}"
    )
    windows = []
    for due, answered, _ in (b for b in bodies if b[2] > over):
        if windows and due <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], answered)
            windows[-1][2] += 1
        else:
            windows.append([due, answered, 1])
    print(f"{sum(w[2] for w in windows)} bodies over {over:g} ms, in {len(windows)} windows")
    for start, end, count in windows:
        split = cpu_split(cpu, start, end)
        shown = "" if split is None else "user %.2f system %.2f idle %.2f iowait %.2f" % split
        print(f"-- {end - start:.0f} ms, {count} bodies; {shown}")
        seen = collections.Counter(
            (name, stack) for ms, entries in waits.items() if start <= ms <= end for name, stack in entries
        )
        for (name, stack), n in seen.most_common(5):
            print(f"   {n:4d} × 20 ms {name}: {stack[:180]}")
    print("== the whole run, samples in state D by thread and stack")
    seen = collections.Counter((name, stack) for entries in waits.values() for name, stack in entries)
    for (name, stack), n in seen.most_common(15):
        print(f"{n:5d} {name}: {stack[:180]}")


def main(argv):
    if len(argv) >= 2 and argv[0] == "sample":
        sample(argv[1])
    elif len(argv) >= 3 and argv[0] == "report":
        over = float(argv[argv.index("--over") + 1]) if "--over" in argv else 100.0
        report(argv[1], argv[2], over)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
