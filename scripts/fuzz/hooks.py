"""Schemathesis hooks for fuzzing a running Trackhouse demo from its OpenAPI document.

Each operation names the credential it takes in `x-trackhouse-credential`;
this module sets it, from the demo's accounts (`demo.json`):

- `api_key`: the demo API key, `Authorization: NVX <key>`;
- `user_session` / `panel_session`: a session logged in with the demo's
  master user or dealer panel account (a fresh one for each logout, which
  ends the session it is given);
- `ingest_token`: the demo ingest token, `Authorization: Bearer <token>`;
- `none`: nothing.

The intake's body is NDJSON: its schema is an array of line objects, sent
one JSON object per line.

Environment: TRACKHOUSE_URL (the server) and TRACKHOUSE_DEMO_JSON (its demo.json).
"""

import json
import os
import threading
import urllib.parse
import urllib.request

import schemathesis

BASE = os.environ["TRACKHOUSE_URL"].rstrip("/")
with open(os.environ["TRACKHOUSE_DEMO_JSON"], encoding="utf-8") as demo_file:
    ACCOUNTS = json.load(demo_file)

_lock = threading.Lock()
_sessions: dict[str, str] = {}
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _login(path: str, login: str, password: str) -> str:
    body = urllib.parse.urlencode({"login": login, "password": password}).encode()
    with _opener.open(f"{BASE}{path}", data=body, timeout=30) as response:
        answer = json.load(response)
    if not answer.get("success"):
        raise RuntimeError(f"{path} refused the demo account: {answer}")
    return answer["hash"]


def _new_session(kind: str) -> str:
    if kind == "user_session":
        user = ACCOUNTS["users"][0]
        return _login("/v2/user/auth", user["login"], user["password"])
    dealer = ACCOUNTS["dealer"]
    return _login("/v2/panel/account/auth", dealer["panel_login"], dealer["panel_password"])


def _session(kind: str, ends_it: bool) -> str:
    if ends_it:
        return _new_session(kind)
    with _lock:
        if kind not in _sessions:
            _sessions[kind] = _new_session(kind)
        return _sessions[kind]


@schemathesis.auth(refresh_interval=None)
class DemoCredentials:
    """The credential each operation declares."""

    def get(self, case, ctx):
        operation = case.operation
        kind = operation.definition.raw.get("x-trackhouse-credential", "none")
        if kind == "api_key":
            return f"NVX {ACCOUNTS['api_key']}"
        if kind in ("user_session", "panel_session"):
            return f"NVX {_session(kind, operation.path.endswith('/logout'))}"
        if kind == "ingest_token":
            return f"Bearer {ACCOUNTS['ingest_token']}"
        return None

    def set(self, case, data, ctx):
        if data is None:
            return
        case.headers = case.headers or {}
        case.headers["Authorization"] = data


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    """An array of line objects as NDJSON; anything else as its JSON text."""
    if isinstance(value, bytes):
        return {"data": value}
    if isinstance(value, list):
        lines = [json.dumps(line, ensure_ascii=False) for line in value]
        return {"data": "\n".join(lines).encode("utf-8")}
    return {"data": json.dumps(value, ensure_ascii=False).encode("utf-8")}
