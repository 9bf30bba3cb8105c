#!/usr/bin/env python3
"""Fuel resampling in Polars: the peer of `benches/src/bin/resampling.rs`.

Does what `POST /eco_fleet/v1/trackers/{id}/resampling` does for one tracker
(clarifications 21-28, decisions 51-58), from the same Parquet files:

- reads the tracker's readings with message time in [from, to), sorted;
- FUEL: the raw input calibrated per reading (`np.interp`, linear between
  points, clamped outside them), then the median over [T-delta, T+delta];
- SPEED: the mean over [T-delta, T+delta];
- MOVEMENT per reading (1 when speed >= the idle threshold, 2 below it with
  the ignition on, else 0), then FOLLOWING: the reading at T, else the first
  after T, after the last reading the last one;
- LNG, LAT PREVIOUS: the reading at T, else the last before T, before the
  first reading the first one;

for T over the multiples of the step since the epoch inside [from, to), a
null reading skipped per column, an empty window null; then the CSV text
(`Time` as `%Y-%m-%dT%H:%M` in UTC, `\\N` for null) in memory.

Input: one JSON object, as the first argument or the first line of stdin:
  {"files": [...], "tracker": 1, "from_ms": ..., "to_ms": ..., "step_ms": 60000,
   "delta_ms": 30000, "sensor_name": "Tank", "fuel_column": "inputs.lls_level_1",
   "calibration": [[raw, litres], ...], "ignition_column": "states.ignition",
   "idle_speed_threshold_kmh": 3.0, "runs": 5, "warmup": 1,
   "csv_out": "/path/polars.csv"}

Output (stdout): JSON with the versions, the thread pool size, per timed run
(after `warmup` untimed ones) the seconds of each phase and in total (scan to
CSV text; the interpreter start and the imports are not timed), the readings
and rows, and the peak RSS. The last run's CSV is written to `csv_out`. A
missing `polars` or `numpy` answers {"skip": ...} instead.

With "interactive": true the script warms up, answers one line with the
versions and "ready", then reads commands from stdin, one a line: `run` times
one run and answers its JSON line; `done` writes the CSV and answers the peak
RSS. The Rust side uses this to interleave Polars' runs with the server's, so
that both see the same load on a shared machine.

Ties (several readings at one message time) do not occur in the simulated
data; the server's rule for them (the last in read order wins a point pick)
is not reproduced here.
"""

import json
import sys
import time
from datetime import datetime, timezone

INSTALL = "python3 -m pip install polars numpy"


def vm_hwm():
    """The process's peak resident set, bytes (not ru_maxrss: it keeps the parent's peak)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def ignition_text_on(text):
    """A state's JSON text as the server reads ignition: `true`/`false` or a non-zero number."""
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    try:
        return float(text) != 0
    except ValueError:
        return False  # unknown ignition counts as off


def resample(cfg, pl, np):
    """One full run; answers the CSV text, the readings count and the phase times."""
    t = "msg_time"
    fuel_column = cfg["fuel_column"]
    ignition_column = cfg["ignition_column"]
    sensor = cfg["sensor_name"]
    step_ms = cfg["step_ms"]
    delta_ms = cfg["delta_ms"]
    from_ms, to_ms = cfg["from_ms"], cfg["to_ms"]
    start = datetime.fromtimestamp(from_ms / 1000, tz=timezone.utc)
    end = datetime.fromtimestamp(to_ms / 1000, tz=timezone.utc)
    xp = np.array([p[0] for p in cfg["calibration"]], dtype=np.float64)
    fp = np.array([p[1] for p in cfg["calibration"]], dtype=np.float64)

    started = time.perf_counter()
    readings = (
        pl.scan_parquet(cfg["files"], missing_columns="insert", extra_columns="ignore")
        .select(["tracker_id", t, "lat", "lng", "speed", fuel_column, ignition_column])
        .filter(
            (pl.col("tracker_id") == cfg["tracker"])
            & (pl.col(t) >= start)
            & (pl.col(t) < end)
        )
        .sort(t, maintain_order=True)
        .collect()
    )
    read_done = time.perf_counter()

    # Per reading, in numpy: litres through the calibration table (clamped
    # outside it) and the movement code; a null becomes NaN here and null again
    # in `series` (NaN readings are skipped like nulls, as the server does).
    raw = readings[fuel_column].cast(pl.Float64).to_numpy()
    speed = readings["speed"].cast(pl.Float64).to_numpy()
    # Ignition texts are `true`/`false`; anything else (numbers, spaces) is
    # decided per distinct text, as the server reads it.
    ignition = readings[ignition_column].cast(pl.Utf8)
    if ignition.is_in(["true", "false"]).fill_null(True).all():
        ignition_on = (ignition == "true").fill_null(False).to_numpy()
    else:
        texts = ignition.unique().drop_nulls().to_list()
        on_texts = [text for text in texts if ignition_text_on(text)]
        ignition_on = ignition.is_in(on_texts).fill_null(False).to_numpy()
    with np.errstate(invalid="ignore"):
        movement = np.where(
            np.isnan(speed),
            np.nan,
            np.where(
                speed >= cfg["idle_speed_threshold_kmh"],
                1.0,
                np.where(ignition_on, 2.0, 0.0),
            ),
        )
    series = pl.DataFrame(
        {
            t: readings[t],
            "fuel": np.interp(raw, xp, fp),
            "speed": speed,
            "movement": movement,
            "lat": readings["lat"].cast(pl.Float64).to_numpy(),
            "lng": readings["lng"].cast(pl.Float64).to_numpy(),
        },
        nan_to_null=True,
    )

    first = -(-from_ms // step_ms) * step_ms
    grid = pl.DataFrame(
        {"T": pl.int_range(first, to_ms, step_ms, eager=True, dtype=pl.Int64)}
    ).with_columns(pl.col("T").cast(pl.Datetime("ms", "UTC"))).lazy()

    # Windows [T-delta, T+delta], both ends included, one per grid instant
    # that has readings (labelled by their lower bound); the rest null after
    # the join onto the grid.
    windows = (
        series.lazy()
        .select(t, "fuel", "speed")
        .group_by_dynamic(
            t,
            every=f"{step_ms}ms",
            period=f"{2 * delta_ms}ms",
            offset=f"-{delta_ms}ms",
            closed="both",
            label="left",
            start_by="window",
        )
        .agg(pl.col("fuel").median().alias(sensor), pl.col("speed").mean().alias("SPEED"))
        .select((pl.col(t) + pl.duration(milliseconds=delta_ms)).alias("T"), sensor, "SPEED")
    )

    def point(column, strategy, edge):
        """FOLLOWING (forward) or PREVIOUS (backward) without delta, the open end filled."""
        present = series.lazy().select(t, column).filter(pl.col(column).is_not_null())
        picked = grid.join_asof(present, left_on="T", right_on=t, strategy=strategy)
        values = series[column].drop_nulls()
        if len(values) == 0:
            return picked.select("T", column)
        fill = values[-1] if edge == "last" else values[0]
        return picked.select("T", pl.col(column).fill_null(fill))

    following = point("movement", "forward", "last").rename({"movement": "MOVEMENT"})
    lng = point("lng", "backward", "first").rename({"lng": "LNG"})
    lat = point("lat", "backward", "first").rename({"lat": "LAT"})

    out = (
        grid.join(windows, on="T", how="left", maintain_order="left")
        .join(following, on="T", how="left", maintain_order="left")
        .join(lng, on="T", how="left", maintain_order="left")
        .join(lat, on="T", how="left", maintain_order="left")
        .select(
            pl.col("T").dt.strftime("%Y-%m-%dT%H:%M").alias("Time"),
            sensor,
            "SPEED",
            "MOVEMENT",
            "LNG",
            "LAT",
        )
        .collect()
    )
    compute_done = time.perf_counter()
    text = out.write_csv(null_value="\\N")
    finished = time.perf_counter()
    return text, readings.height, out.height, {
        "total_s": finished - started,
        "read_s": read_done - started,
        "compute_s": compute_done - read_done,
        "csv_s": finished - compute_done,
    }


def emit(value):
    print(json.dumps(value), flush=True)


def timed_run(cfg, pl, np):
    """One run: its phase times, readings, rows and bytes, and its CSV text."""
    text, readings, rows, times = resample(cfg, pl, np)
    times.update({"readings": readings, "rows": rows, "bytes": len(text.encode())})
    return times, text


def main():
    # The configuration is the first argument or the first line of stdin, so
    # that in the interactive mode the rest of stdin carries the commands.
    cfg = json.loads(sys.argv[1]) if len(sys.argv) > 1 else json.loads(sys.stdin.readline())
    try:
        import numpy as np
        import polars as pl
    except Exception as e:  # noqa: BLE001 - any import failure is a skip
        emit({"skip": "import failed (%s); install with `%s`" % (e, INSTALL)})
        return 0
    versions = {"polars": pl.__version__, "numpy": np.__version__, "threads": pl.thread_pool_size()}
    for _ in range(cfg.get("warmup", 0)):
        resample(cfg, pl, np)
    text = ""
    if cfg.get("interactive"):
        # One line per command: `run` times one run and answers it; `done`
        # (or the end of stdin) writes the last CSV and answers the peak RSS.
        emit(dict(versions, ready=True))
        for line in sys.stdin:
            command = line.strip()
            if command == "run":
                times, text = timed_run(cfg, pl, np)
                emit(times)
            elif command == "done":
                break
            else:
                emit({"error": "unknown command %r" % command})
        with open(cfg["csv_out"], "w") as out:
            out.write(text)
        emit({"peak_rss": vm_hwm()})
        return 0
    runs = []
    for _ in range(cfg["runs"]):
        times, text = timed_run(cfg, pl, np)
        runs.append(times)
    with open(cfg["csv_out"], "w") as out:
        out.write(text)
    emit(dict(versions, runs=runs, peak_rss=vm_hwm()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
