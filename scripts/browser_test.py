#!/usr/bin/env python3
"""The geo link page (`GET /links/{hash}`) in headless Chromium, end to end.

Usage: scripts/browser_test.py PATH/TO/trackhouse
       scripts/browser_test.py --fake      (the page's files against a fake feed, no server)

With a binary: starts `trackhouse demo --days 0` on a fresh data directory
and a free port (map tiles pointed at an unreachable address, so it works
offline), adds with `trackhouse admin` three trackers of its own (the
demo keeps its trucks moving), a plan with the feature `weblocator` for
them and two places, sends each tracker four
minutes of driving around central Almaty through the intake, creates a link
over the three (`/v2/tracker/location/link/create`, then `read` for its
hash) with different fields allowed per tracker, a lifetime, the places and
10-minute trails, and opens the page in headless Chromium (Selenium,
/usr/bin/chromedriver; TRACKHOUSE_CHROMEDRIVER to move it). It checks:

- the page is ready (body[data-ready="1"]) and keeps polling;
- one marker per tracker at its last position, labelled with its alias
  (.th-label), one trail each (path.th-trail), the places' labels, and the
  status bar's "Updated HH:MM:SS" and "Shared until ...";
- the fields each tracker's link entry allows are shown in its panel entry
  ([data-object] [data-field]) and the others are not;
- a new message for one tracker moves its marker (data-lat/data-lng) to the
  new position;
- a link switched off while the page is open (`link/status/change`) shows
  its message in place of the map, and an unknown link says it is not found;
- the page logs no error (but the unreachable tiles' and the refused feed's);
- the server logs no error and stops cleanly on SIGTERM.

With --fake the same checks run against the page's files
(api/assets/links, api/assets/leaflet, a temporary copy) served with a fake
feed from this script: what the page does, without building the server
(the link there expires: 410).

TRACKHOUSE_SCREENSHOT=docs/link-page.png saves a screenshot of the page
(1280x800) once the marker has moved. Exits non-zero, saying why, on any
failure.
"""

import argparse
import html
import json
import math
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # no scripts/__pycache__ in the tree
from fuzz import lines_of, serving_addr, wait_for  # noqa: E402  (shared with the fuzzer)

CHROMEDRIVER = os.environ.get("TRACKHOUSE_CHROMEDRIVER", "/usr/bin/chromedriver")
UNREACHABLE_TILES = "http://127.0.0.1:9/{z}/{x}/{y}.png"
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
PREFIX = "browser_test"


class Failure(Exception):
    pass


def say(text: str) -> None:
    print(f"{PREFIX}: {text}", flush=True)


# --- a small fleet driving around central Almaty ---------------------------------

# (alias, waypoints (lat, lng), speed km/h, fields the link allows, stopped at the end)
FLEET = [
    ("Van 1", [(43.2380, 76.9050), (43.2380, 76.9220), (43.2460, 76.9222), (43.2463, 76.9330)], 42.0,
     ["speed", "address", "movement_status", "connection_status"], False),
    ("Van 2", [(43.2650, 76.9560), (43.2580, 76.9558), (43.2578, 76.9470), (43.2530, 76.9468)], 36.0,
     ["speed"], False),
    ("Courier 3", [(43.2565, 76.9000), (43.2567, 76.9130), (43.2515, 76.9133), (43.2513, 76.9185)], 30.0,
     ["movement_status", "connection_status"], True),
]
# The link's places: (label, "lat,lng[,radius m]").
PLACES = [("Central depot", "43.2500,76.9100,180"), ("Green Market", "43.2640,76.9520")]
STEP_S = 10
DRIVE_S = 240
ALL_FIELDS = ["speed", "address", "movement_status", "connection_status", "vehicle", "driver"]


def meters(a, b) -> float:
    dlat = (b[0] - a[0]) * 111_320.0
    dlng = (b[1] - a[1]) * 111_320.0 * math.cos(math.radians((a[0] + b[0]) / 2))
    return math.hypot(dlat, dlng)


def bearing(a, b) -> int:
    dlat = b[0] - a[0]
    dlng = (b[1] - a[1]) * math.cos(math.radians(a[0]))
    return int(round(math.degrees(math.atan2(dlng, dlat)))) % 360


def drive(waypoints, speed_kmh: float, end_ms: int, stopped: bool):
    """Points every STEP_S seconds along the waypoints up to end_ms: (time_ms, lat, lng, speed, heading)."""
    count = DRIVE_S // STEP_S + 1
    legs = list(zip(waypoints, waypoints[1:]))
    total = sum(meters(a, b) for a, b in legs)
    # Drive the whole route in the span (the speed shown is the nominal one);
    # a stopped vehicle arrives two steps early and waits.
    moving_steps = count - 1 - (3 if stopped else 0)
    points = []
    for i in range(count):
        t = end_ms - (count - 1 - i) * STEP_S * 1000
        along = total * min(1.0, i / moving_steps)
        lat, lng, heading = waypoints[-1][0], waypoints[-1][1], bearing(*legs[-1])
        for a, b in legs:
            length = meters(a, b)
            if along <= length:
                f = along / length if length else 0.0
                lat, lng, heading = a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, bearing(a, b)
                break
            along -= length
        speed = 0.0 if (stopped and i >= moving_steps) else speed_kmh + 4.0 * math.sin(i / 3.0)
        points.append((t, round(lat, 6), round(lng, 6), round(speed, 1), heading))
    return points


def lifetime(zone: str) -> dict:
    """A link's lifetime from an hour ago to 8 hours from now, as the account's zone writes it."""
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo
    now = datetime.now(ZoneInfo(zone))
    return {"from": (now - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S"),
            "to": (now + timedelta(hours=8)).strftime("%Y-%m-%d %H:%M:%S")}


# --- HTTP helpers -----------------------------------------------------------------

def request(url: str, body=None, headers=None, method=None, timeout=30):
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    if isinstance(body, (dict, list)):
        req.add_header("Content-Type", "application/json")
    try:
        with OPENER.open(req, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read()


def call(base: str, path: str, body: dict) -> dict:
    status, raw = request(base + path, body)
    try:
        answer = json.loads(raw)
    except ValueError:
        raise Failure(f"{path}: HTTP {status}, not JSON: {raw[:300]!r}") from None
    if status != 200 or not answer.get("success"):
        raise Failure(f"{path} {json.dumps(body)}: HTTP {status} {json.dumps(answer)}")
    return answer


# --- the browser ------------------------------------------------------------------

def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        raise Failure("selenium is not installed (test.sh installs it: pip install selenium)") from None
    if not Path(CHROMEDRIVER).exists():
        raise Failure(f"{CHROMEDRIVER} is missing (Debian: apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,800", "--hide-scrollbars", "--no-proxy-server", "--lang=en-US",
                     "--force-device-scale-factor=1", "--disable-extensions", "--no-first-run"]:
        options.add_argument(argument)
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary:
        options.binary_location = binary
    env = dict(os.environ)
    env.setdefault("TZ", "Asia/Almaty")  # the fleet's time zone, for the times the page shows
    service = Service(executable_path=CHROMEDRIVER, env=env)
    driver = webdriver.Chrome(service=service, options=options)
    # The viewport itself 1280x800 (the window's size would include headless Chromium's frame).
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
    return driver


def js(driver, script: str, *args):
    return driver.execute_script(script, *args)


def wait_until(what: str, test, timeout: float = 20.0, every: float = 0.2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = test()
        if last:
            return last
        time.sleep(every)
    raise Failure(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


SNAPSHOT = """
const out = {ready: document.body.dataset.ready, updates: Number(document.body.dataset.updates || 0),
  connection: document.body.dataset.connection, state: document.body.dataset.state || null,
  message: null, markers: {}, labels: [], entries: {}, trails: document.querySelectorAll('path.th-trail').length,
  places: [...document.querySelectorAll('.th-place-name')].map(p => p.textContent),
  until: document.getElementById('th-until').hidden ? null : document.getElementById('th-until').textContent};
const message = document.getElementById('th-message');
if (message && !message.hidden) {
  out.message = {state: message.dataset.state, title: document.getElementById('th-message-title').textContent,
                 text: document.getElementById('th-message-text').textContent};
}
for (const m of document.querySelectorAll('.th-marker[data-key]')) {
  out.markers[m.dataset.key] = {lat: Number(m.dataset.lat), lng: Number(m.dataset.lng),
    label: (m.querySelector('.th-label') || {}).textContent, visible: (() => {
      const r = m.querySelector('.th-pin').getBoundingClientRect();
      return r.width > 0 && r.right > 0 && r.bottom > 0 && r.left < innerWidth && r.top < innerHeight; })()};
}
for (const l of document.querySelectorAll('.th-label')) out.labels.push(l.textContent);
for (const e of document.querySelectorAll('[data-object]')) {
  const fields = {};
  for (const f of e.querySelectorAll('[data-field]')) fields[f.dataset.field] = f.textContent;
  out.entries[e.dataset.object] = fields;
}
return out;
"""


def snapshot(driver) -> dict:
    return js(driver, SNAPSHOT)


def check_page(driver, world) -> None:
    """The checks of the module's doc, on a world (the real server or the fake)."""
    url = f"{world.base}/links/{world.hash}"
    say(f"opening {url}")
    driver.get(url)
    wait_until("body[data-ready=1]", lambda: snapshot(driver)["ready"] == "1", timeout=30)
    first = snapshot(driver)
    wait_until("a second poll", lambda: snapshot(driver)["updates"] > first["updates"], timeout=15)
    page = snapshot(driver)

    if page["message"]:
        raise Failure(f"the page shows a message instead of the map: {page['message']}")
    expected = {str(o["key"]): o for o in world.objects}
    if sorted(page["markers"]) != sorted(expected):
        raise Failure(f"markers {sorted(page['markers'])}, expected one per object {sorted(expected)}")
    if sorted(page["labels"]) != sorted(o["label"] for o in world.objects):
        raise Failure(f"labels {page['labels']}, expected {[o['label'] for o in world.objects]}")
    for key, obj in expected.items():
        marker = page["markers"][key]
        if not marker["visible"]:
            raise Failure(f"the marker of {obj['label']} is not displayed")
        if abs(marker["lat"] - obj["lat"]) > 1e-6 or abs(marker["lng"] - obj["lng"]) > 1e-6:
            raise Failure(f"the marker of {obj['label']} is at {marker['lat']},{marker['lng']}, "
                          f"expected {obj['lat']},{obj['lng']}")
        fields = page["entries"].get(key)
        if fields is None:
            raise Failure(f"no panel entry [data-object={key}] for {obj['label']}")
        for name in obj["fields"]:
            if not fields.get(name, "").strip():
                raise Failure(f"{obj['label']}: field {name} allowed but not shown (shown: {fields})")
        for name in set(ALL_FIELDS) - set(obj["fields"]):
            if name in fields:
                raise Failure(f"{obj['label']}: field {name} not allowed but shown: {fields[name]!r}")
        if "speed" in obj["fields"] and not re.fullmatch(r"\d+ km/h", fields["speed"]):
            raise Failure(f"{obj['label']}: speed shown as {fields['speed']!r}")
    if page["trails"] != len(expected):
        raise Failure(f"{page['trails']} trails drawn, expected one per object ({len(expected)})")
    if sorted(page["places"]) != sorted(label for label, _ in PLACES):
        raise Failure(f"places labelled {page['places']}, expected {[label for label, _ in PLACES]}")
    if not (page["until"] or "").startswith("Shared until "):
        raise Failure(f"the status bar does not say until when the link is shared: {page['until']!r}")
    say(f"{len(expected)} markers with their labels and trails, fields as allowed: "
        + "; ".join(f"{o['label']}: {', '.join(o['fields']) or 'none'}" for o in world.objects))

    mover = world.objects[0]
    lat, lng = world.move(mover)
    key = str(mover["key"])

    def moved():
        marker = snapshot(driver)["markers"].get(key)
        return marker and abs(marker["lat"] - lat) < 1e-6 and abs(marker["lng"] - lng) < 1e-6

    wait_until(f"the marker of {mover['label']} to move to {lat},{lng}", moved, timeout=30)
    say(f"the marker of {mover['label']} moved to {lat},{lng} after a new message")

    status = js(driver, "return document.getElementById('th-updated').textContent")
    if not re.fullmatch(r"Updated \d\d:\d\d:\d\d", status):
        raise Failure(f"status bar says {status!r}")

    shot = os.environ.get("TRACKHOUSE_SCREENSHOT")
    if shot:
        time.sleep(0.8)  # the marker's last move and the fit settle
        target = Path(shot)
        if not target.is_absolute():
            target = ROOT / target
        target.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(target))
        say(f"screenshot in {target}")

    state = world.end()
    def ended():
        m = snapshot(driver)["message"]
        return m if m and m["state"] == state else None
    shown = wait_until(f"the page to show the link {state}", ended, timeout=30)
    say(f"the link ended while open: the page shows {shown['title']!r} / {shown['text']!r}")

    # What the page logged (read before the unknown link, whose 404 is expected).
    errors = [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"
              and "127.0.0.1:9/" not in e.get("message", "")                    # the unreachable tiles
              and not re.search(r"/positions(\?since=\d+)? - Failed to load resource", e.get("message", ""))]  # the ended link's 403/410

    # An unknown link: the server answers a short notice page (404), or the
    # page itself, whose feed answers not_found; either way it says so.
    driver.get(f"{world.base}/links/{world.unknown}")
    def unknown():
        text = js(driver, "return document.body ? document.body.innerText : ''")
        return text if "not found" in text.lower() else None
    shown = wait_until("an unknown link's message", unknown, timeout=20)
    say(f"an unknown link shows {' '.join(shown.split()[:12])!r}")
    if errors:
        raise Failure("the page logged errors:\n" + "\n".join(errors[:10]))


# --- the real server ---------------------------------------------------------------

class RealWorld:
    def __init__(self, binary: Path, work: Path):
        self.binary = binary
        self.data = work / "data"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACKHOUSE_", "CARGO_"))}
        self.env.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
        self.server = subprocess.Popen(
            [str(binary), "demo", "--days", "0", "--data-dir", str(self.data),
             "--listen", "127.0.0.1:0", "--log-format", "json",
             "--map-tiles-url", UNREACHABLE_TILES],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env,
        )
        self.log: queue.Queue = queue.Queue()
        self.out: queue.Queue = queue.Queue()
        threading.Thread(target=lines_of, args=(self.server.stderr, self.log), daemon=True).start()
        threading.Thread(target=lines_of, args=(self.server.stdout, self.out), daemon=True).start()
        self.log_seen: list = []

    def prepare(self) -> None:
        addr = wait_for(self.log, self.log_seen, serving_addr, "the serving line", 120)
        wait_for(self.out, [], lambda l: l == "Stop with Ctrl-C.", "the demo's accounts", 120)
        self.base = f"http://{addr}"
        say(f"trackhouse demo serving on {self.base}")
        accounts = json.loads((self.data / "demo.json").read_text())
        self.api_key = accounts["api_key"]
        self.ingest_token = accounts["ingest_token"]
        owner = accounts["users"][0]["user_id"]
        # Trackers of the test's own: the demo keeps its trucks moving while it runs.
        # Links need the plan feature `weblocator` on every tracker they show.
        plan = self.admin("plan", "create", "--dealer-id", str(accounts["dealer"]["dealer_id"]),
                          "--name", "Geo links", "--store-period", "1m", "--features", "weblocator")
        plan_id = plan.get("plan_id", plan.get("id"))
        trackers = []
        for n, device_id in enumerate(["356307042441047", "356307042441054", "356307042441062"]):
            made = self.admin("tracker", "create", "--user-id", str(owner), "--label", f"Courier van {n + 1}",
                              "--device-id", device_id)
            trackers.append({"tracker_id": made["tracker_id"], "device_id": device_id})
        for tracker in trackers:
            self.admin("tracker", "plan", "--tracker-id", str(tracker["tracker_id"]), "--plan-id", str(plan_id))
        place_ids = [self.admin("place", "create", "--user-id", str(owner), "--label", label,
                                "--location", location)["place_id"] for label, location in PLACES]
        now_ms = int(time.time() * 1000) - 5_000
        self.objects = []
        lines = []
        for (alias, waypoints, speed, fields, stopped), tracker in zip(FLEET, trackers):
            points = drive(waypoints, speed, now_ms, stopped)
            for t, lat, lng, kmh, heading in points:
                lines.append(self.line(tracker["device_id"], t, lat, lng, kmh, heading))
            self.objects.append({"tracker_id": tracker["tracker_id"], "device_id": tracker["device_id"],
                                 "label": alias, "fields": fields, "lat": points[-1][1], "lng": points[-1][2],
                                 "heading": points[-1][4]})
        self.ingest(lines)
        link_id = call(self.base, "/v2/tracker/location/link/create", {
            "hash": self.api_key,
            "trackers": [{"tracker_id": o["tracker_id"], "alias": o["label"], "params": {"object_data": o["fields"]}}
                         for o in self.objects],
            "description": "Deliveries in Almaty today",
            # Shown from an hour ago to 8 hours from now, in the owner's zone.
            "lifetime": lifetime(accounts["users"][0]["time_zone"]),
            # Trails of the last 10 minutes (trace_duration is in seconds; 5 by default).
            "params": {"display_options": {"map": "osm", "trace_duration": 600}, "place_ids": place_ids},
        })["value"]
        self.link_id = link_id
        self.hash = call(self.base, "/v2/tracker/location/link/read",
                         {"hash": self.api_key, "id": link_id})["value"]["hash"]
        say(f"link {link_id} over {len(self.objects)} trackers: /links/{self.hash}")
        # The feed's keys are the link's trackers in order.
        for index, obj in enumerate(self.objects):
            obj["key"] = index
        status, raw = request(f"{self.base}/links/{self.hash}/positions")
        if status != 200:
            raise Failure(f"the feed answers HTTP {status}: {raw[:300]!r}")
        feed = json.loads(raw)
        keys = {o["label"]: o["key"] for o in feed.get("objects", [])}
        for obj in self.objects:
            if obj["label"] not in keys:
                raise Failure(f"the feed has no object labelled {obj['label']!r}: {raw[:500]!r}")
            obj["key"] = keys[obj["label"]]
        self.unknown = "0" * len(self.hash)

    def admin(self, *args) -> dict:
        done = subprocess.run([str(self.binary), "admin", "--data-dir", str(self.data), *args],
                              capture_output=True, text=True, env=self.env, check=False)
        if done.returncode != 0:
            raise Failure(f"trackhouse admin {' '.join(args)}: {done.stderr.strip()}")
        return json.loads(done.stdout)

    @staticmethod
    def line(device_id, t_ms, lat, lng, speed, heading) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t_ms / 1000)) + f".{t_ms % 1000:03d}Z"
        return json.dumps({"device_id": device_id, "msg_time": stamp, "lat": lat, "lng": lng,
                           "speed": speed, "heading": heading, "satellites": 12,
                           "states": {"ignition": speed > 0}})

    def ingest(self, lines) -> None:
        status, raw = request(f"{self.base}/ingest/v1/messages", ("\n".join(lines) + "\n").encode(),
                              {"Authorization": f"Bearer {self.ingest_token}",
                               "Content-Type": "application/x-ndjson"})
        answer = json.loads(raw) if raw else {}
        if status != 200 or answer.get("rejected_total"):
            raise Failure(f"the intake answered HTTP {status}: {raw[:500]!r}")

    def move(self, obj):
        lat, lng = round(obj["lat"] + 0.0009, 6), round(obj["lng"] + 0.0012, 6)
        self.ingest([self.line(obj["device_id"], int(time.time() * 1000), lat, lng, 44.0, 45)])
        obj["lat"], obj["lng"] = lat, lng
        return lat, lng

    def end(self) -> str:
        # The link ends while the page is open: switched off, its feed then answers 403.
        call(self.base, "/v2/tracker/location/link/status/change",
             {"hash": self.api_key, "id": self.link_id, "is_active": False})
        return "disabled"

    def stop(self) -> list:
        problems = []
        if self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)
        try:
            status = self.server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.server.kill()
            status = "killed after 60 s"
        while True:
            try:
                line = self.log.get(timeout=5)
            except queue.Empty:
                break
            if line is None:
                break
            self.log_seen.append(line)
        if status != 0:
            problems.append(f"the server did not stop cleanly on SIGTERM: {status}")
        errors = [l for l in self.log_seen if '"level":"ERROR"' in l or "panicked" in l]
        if errors:
            problems.append("the server logged errors:\n" + "\n".join(errors[:20]))
        return problems


# --- the fake: the page's files and a feed from this script ---------------------------

STATIC = {
    "leaflet.js": ROOT / "api/assets/leaflet/leaflet.js",
    "leaflet.css": ROOT / "api/assets/leaflet/leaflet.css",
    "page.js": ROOT / "api/assets/links/page.js",
    "page.css": ROOT / "api/assets/links/page.css",
    **{f"images/{p.name}": p for p in sorted((ROOT / "api/assets/leaflet/images").glob("*.png"))},
}
TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".png": "image/png"}


class FakeWorld:
    """What the server's page and feed answer, from memory: for the page's files alone."""

    def __init__(self, work: Path):
        # A temporary copy of the page's files, so the page is tested as it is on disk now.
        self.root = work / "static"
        self.root.mkdir()
        for name, source in STATIC.items():
            (self.root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, self.root / name)
        self.template = (ROOT / "api/assets/links/page.html").read_text()
        self.hash = "f4c3" + "a" * 28
        self.unknown = "0" * 32
        self.lock = threading.Lock()
        self.ended = None
        now_ms = int(time.time() * 1000) - 5_000
        self.objects = []
        self.feed_objects = []
        addresses = ["Abay Ave 52, Almaty", "Dostyk Ave 9, Almaty", "Tole Bi St 71, Almaty"]
        for index, (alias, waypoints, speed, fields, stopped) in enumerate(FLEET):
            points = drive(waypoints, speed, now_ms, stopped)
            t, lat, lng, kmh, heading = points[-1]
            fields = list(fields) + (["vehicle", "driver"] if index == 0 else [])
            entry = {"key": index, "label": alias,
                     "position": {"lat": lat, "lng": lng, "heading": heading, "time": t},
                     "trail": [[p[1], p[2], p[0]] for p in points]}
            extra = {"speed": kmh, "address": addresses[index],
                     "movement_status": "stopped" if kmh == 0 else "moving",
                     "connection_status": "active",
                     "vehicle": {"label": "Ford Transit", "reg_number": "123 ABC 02"},
                     "driver": {"name": "Daniyar K.", "phone": "+7 701 555 0101"}}
            entry.update({k: v for k, v in extra.items() if k in fields})
            self.feed_objects.append(entry)
            self.objects.append({"key": index, "label": alias, "fields": fields, "lat": lat, "lng": lng})
        world = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def send(self, status, body: bytes, content_type: str):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                path = self.path.split("?")[0]
                if path.startswith("/links/static/"):
                    name = path[len("/links/static/"):]
                    if name in STATIC:
                        self.send(200, (world.root / name).read_bytes(), TYPES[Path(name).suffix])
                        return
                    self.send(404, b"not found", "text/plain")
                    return
                match = re.fullmatch(r"/links/([0-9a-f]+)(/positions)?", path)
                if not match:
                    self.send(404, b"not found", "text/plain")
                    return
                link, feed = match.groups()
                if not feed:
                    self.send(200, world.page(link).encode(), "text/html; charset=utf-8")
                    return
                status, answer = world.answer(link)
                self.send(status, json.dumps(answer).encode(), "application/json")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        say(f"fake feed on {self.base}, the page's files copied to {self.root}")

    def page(self, link: str) -> str:
        config = {"feed": f"/links/{link}/positions", "tiles": UNREACHABLE_TILES, "poll_ms": 1000}
        text = json.dumps(config).replace("</", "<\\/")
        return self.template.replace("{{TITLE}}", html.escape("Deliveries in Almaty today")) \
                            .replace("{{CONFIG_JSON}}", text)

    def answer(self, link: str):
        with self.lock:
            if link != self.hash:
                return 404, {"state": "not_found", "message": "There is no such link."}
            if self.ended:
                return 410, {"state": "expired", "message": "This link expired at 18:00."}
            return 200, {"state": "enabled", "description": "Deliveries in Almaty today",
                         "server_time": int(time.time() * 1000), "until": int(time.time() * 1000) + 8 * 3_600_000,
                         "display": {"map": "osm", "autoscale": True, "show_icons": False,
                                     "show_driver_info": True, "show_vehicle_info": True, "trace_duration": 600},
                         "objects": json.loads(json.dumps(self.feed_objects)),
                         "places": [{"label": label, "lat": float(where.split(",")[0]), "lng": float(where.split(",")[1]),
                                     "radius": float(where.split(",")[2]) if where.count(",") == 2 else None}
                                    for label, where in PLACES]}

    def move(self, obj):
        lat, lng = round(obj["lat"] + 0.0009, 6), round(obj["lng"] + 0.0012, 6)
        with self.lock:
            entry = self.feed_objects[obj["key"]]
            entry["position"] = {"lat": lat, "lng": lng, "heading": 45, "time": int(time.time() * 1000)}
            entry["trail"].append([lat, lng, entry["position"]["time"]])
        obj["lat"], obj["lng"] = lat, lng
        return lat, lng

    def end(self) -> str:
        with self.lock:
            self.ended = True
        return "expired"

    def stop(self) -> list:
        self.httpd.shutdown()
        return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", type=Path, nargs="?")
    parser.add_argument("--fake", action="store_true", help="the page's files against a fake feed, no server")
    args = parser.parse_args()
    if not args.fake and args.binary is None:
        parser.error("give the trackhouse binary, or --fake")

    work = Path(tempfile.mkdtemp(prefix="trackhouse-browser-"))
    world = None
    driver = None
    problems = []
    try:
        world = FakeWorld(work) if args.fake else RealWorld(args.binary, work)
        if not args.fake:
            world.prepare()
        driver = browser()
        check_page(driver, world)
    except Failure as failure:
        problems.append(str(failure))
    except SystemExit as exit_:
        problems.append(str(exit_))
    except Exception as error:  # selenium's, urllib's: say what broke
        problems.append(f"{type(error).__name__}: {error}")
    finally:
        if driver is not None:
            driver.quit()
        if world is not None:
            problems.extend(world.stop())
    if problems:
        print(f"{PREFIX}: FAILED (files in {work})\n" + "\n".join(problems), file=sys.stderr)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    say("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
