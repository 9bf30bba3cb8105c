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

In the query string and the form body, an array or object parameter is JSON
text (`contentMediaType: application/json`, its schema in `contentSchema`).
Schemathesis generates any string there; half of the time these hooks put
the JSON text of a value drawn from `contentSchema` instead, so the calls'
logic behind the parameter reading is reached in those forms too.

Environment: TRACKHOUSE_URL (the server) and TRACKHOUSE_DEMO_JSON (its demo.json).
"""

import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request

import schemathesis
from hypothesis import strategies as st

BASE = os.environ["TRACKHOUSE_URL"].rstrip("/")
with open(os.environ["TRACKHOUSE_DEMO_JSON"], encoding="utf-8") as demo_file:
    ACCOUNTS = json.load(demo_file)

_lock = threading.Lock()
_sessions: dict[str, str] = {}
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _login(path: str, login: str, password: str) -> str:
    body = urllib.parse.urlencode({"login": login, "password": password}).encode()
    try:
        with _opener.open(f"{BASE}{path}", data=body, timeout=30) as response:
            answer = json.load(response)
    except urllib.error.HTTPError as refused:
        answer = refused.read().decode("utf-8", "replace")
        raise RuntimeError(f"{path} refused the demo account {login!r}: HTTP {refused.code} {answer}") from None
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


def _values(schema: dict) -> st.SearchStrategy:
    """Values of a JSON schema of the kinds the document uses in `contentSchema`
    (types, enums, examples, bounds, items, properties): valid mostly, not always."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    types = schema.get("type", "string")
    if isinstance(types, list):
        return st.one_of([_values({**schema, "type": t}) for t in types])
    examples = list(schema.get("examples", [])) + ([schema["example"]] if "example" in schema else [])
    if types == "null":
        return st.none()
    if types == "boolean":
        return st.booleans()
    if types == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if types == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False)
    if types == "array":
        items = schema.get("items", {})
        # An array's example lends its items to the items' strategy (column names).
        samples = [x for e in examples if isinstance(e, list) for x in e]
        item = _values(items) if not samples else st.one_of(st.sampled_from(samples), _values(items))
        return st.lists(item, min_size=schema.get("minItems", 0), max_size=schema.get("maxItems", 6))
    if types == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {k: _values(v) for k, v in properties.items() if k in required},
            optional={k: _values(v) for k, v in properties.items() if k not in required},
        )
    if examples:
        return st.one_of(st.sampled_from([e for e in examples if isinstance(e, str)] or [""]), st.text())
    return st.text()


def _json_text(values, fields: dict) -> st.SearchStrategy:
    """`values` with each present field of `fields` (name: schema) replaced, half
    of the time, by the JSON text of a value of its schema."""
    present = {name: schema for name, schema in fields.items() if isinstance(values, dict) and name in values}
    if not present:
        return st.just(values)
    replacements = st.fixed_dictionaries(
        {name: st.one_of(st.none(), _values(schema).map(json.dumps)) for name, schema in present.items()}
    )
    return replacements.map(lambda new: {**values, **{k: v for k, v in new.items() if v is not None}})


def _json_text_fields(schemas) -> dict:
    return {
        name: schema["contentSchema"]
        for name, schema in schemas
        if isinstance(schema, dict) and schema.get("contentMediaType") == "application/json"
    }


# The panel's user calls (change_password, corrupt, update...) would change or
# remove the demo's own users, whose logins these hooks need for sessions: an
# id of one of them is replaced by an id no user has (the call answers 201).
# A list stands for a key repeated in the query string or the form, of which
# the server keeps the last value (decisions.md 3): each of its ids is checked.
_PROTECTED = {u.get("user_id") for u in ACCOUNTS.get("users", [])} | {ACCOUNTS.get("subuser", {}).get("user_id")}
_PROTECTED.discard(None)
_NOBODY = 2_000_000_000


def _protect(values):
    if not isinstance(values, dict):
        return values

    def named(value):
        try:
            return int(value) in _PROTECTED
        except (TypeError, ValueError):
            return False

    values = dict(values)
    user_id = values.get("user_id")
    if isinstance(user_id, list):
        values["user_id"] = [_NOBODY if named(v) else v for v in user_id]
    elif named(user_id):
        values["user_id"] = _NOBODY

    def user_of_nobody(user):
        if isinstance(user, dict) and named(user.get("id")):
            return {**user, "id": _NOBODY}
        if isinstance(user, str):
            try:
                parsed = json.loads(user)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict) and named(parsed.get("id")):
                return json.dumps({**parsed, "id": _NOBODY})
        return user

    if "user" in values:
        user = values["user"]
        values["user"] = [user_of_nobody(u) for u in user] if isinstance(user, list) else user_of_nobody(user)
    return values


@schemathesis.hook
def flatmap_query(ctx, query):
    if ctx.operation is None:
        return st.just(query)
    parameters = ctx.operation.definition.raw.get("parameters", [])
    fields = _json_text_fields((p.get("name"), p.get("schema")) for p in parameters if p.get("in") == "query")
    return _json_text(query, fields)


@schemathesis.hook
def flatmap_body(ctx, body):
    if ctx.operation is None:
        return st.just(body)
    content = ctx.operation.definition.raw.get("requestBody", {}).get("content", {})
    form = content.get("application/x-www-form-urlencoded", {}).get("schema", {})
    fields = _json_text_fields(form.get("properties", {}).items())
    # Only a form body holds these as text; a JSON body holds the values themselves.
    fields = {k: v for k, v in fields.items() if isinstance(body, dict) and isinstance(body.get(k), str)}
    return _json_text(body, fields)


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    """Every phase's cases pass here (the coverage phase's are not drawn
    through the `flatmap_*` hooks): the demo's users are protected here."""
    if case.operation.path.startswith("/v2/panel/user/"):
        case.query = _protect(case.query)
        case.body = _protect(case.body)


# The calls that can take a demo user's login away from these hooks (a new
# password, a deactivation, a corruption): after one of them succeeds, the
# demo user must still log in, else the case that did it is the failure.
_GUARDED = ("/v2/panel/user/change_password", "/v2/panel/user/corrupt", "/v2/panel/user/update")


@schemathesis.hook
def after_call(ctx, case, response):
    if case.operation.path not in _GUARDED or response.status_code != 200:
        return
    try:
        succeeded = response.json().get("success") is True
    except ValueError:
        succeeded = False
    if not succeeded:
        return
    user = ACCOUNTS["users"][0]
    try:
        _login("/v2/user/auth", user["login"], user["password"])
    except RuntimeError as lost:
        raise AssertionError(
            f"{case.method} {case.operation.path} took the demo user's login away "
            f"(query {case.query!r}, body {case.body!r}): {lost}"
        ) from None
