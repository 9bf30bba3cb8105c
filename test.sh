#!/usr/bin/env bash
# Every test of Trackhouse, on a fresh machine with nothing but the clone.
#
# 1. Installs what the tests need and is missing: Debian's clickhouse-server,
#    zookeeper, curl, chromium and chromium-driver (with apt-get, as root or
#    through sudo), and, in a virtual environment of its own, Python's chdb,
#    schemathesis, openapi-spec-validator and selenium (pinned below). When
#    it cannot (not root, no network), it says what to install and stops.
# 2. cargo test --workspace: unit, property and integration tests, the HTTP
#    suite on Parquet, the real binary's tests.
# 3. The HTTP suite again on ClickHouse, then on a ClickHouse cluster
#    (two shards of two replicas and a ZooKeeper, all started by the tests).
# 4. docs/openapi.json checked by an independent validator.
# 5. Every call fuzzed from the OpenAPI document against the real binary
#    (scripts/fuzz.py: Schemathesis, fixed seed, bounded examples).
# 6. The geo link page (/links/<hash>) in headless Chromium against the real
#    binary (scripts/browser_test.py: Selenium, map tiles offline).
#
# TRACKHOUSE_VENV (default ~/.cache/trackhouse/venv) is where the Python
# packages go; CARGO_TARGET_DIR is honoured as cargo does.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON_PACKAGES=(
  "chdb==4.4.0" "chdb-core==26.9.0"   # ClickHouse 26 embedded: replays what 18.16 was sent
  "schemathesis==4.32.5"               # fuzzes every call from the OpenAPI document
  "openapi-spec-validator==0.9.0"      # validates the document
  "selenium==4.51.0"                   # drives headless Chromium through the geo link page
)
venv="${TRACKHOUSE_VENV:-$HOME/.cache/trackhouse/venv}"

step() { printf '\n== %s\n' "$*"; }
started=$SECONDS

step "what the tests need"
export PATH="$PATH:/usr/sbin:/sbin"
missing=()
command -v curl >/dev/null || missing+=(curl)
command -v clickhouse-server >/dev/null || missing+=(clickhouse-server)
[ -r /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
command -v java >/dev/null || missing+=(default-jre-headless)
command -v chromium >/dev/null || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
command -v python3 >/dev/null || missing+=(python3)
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then missing+=(python3-venv); fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo=(sudo)
  else
    echo "test.sh: these Debian packages are missing: ${missing[*]}" >&2
    echo "test.sh: install them (as root: apt-get install ${missing[*]}), then run ./test.sh again" >&2
    exit 1
  fi
  echo "installing Debian packages: ${missing[*]}"
  if ! { "${sudo[@]}" apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}"; }; then
    echo "test.sh: apt-get could not install ${missing[*]} (no network or no Debian mirror?);" >&2
    echo "test.sh: install them by hand, then run ./test.sh again" >&2
    exit 1
  fi
fi
# The ClickHouse tests start their own servers on free ports; the system service is not used.

if [ ! -x "$venv/bin/python3" ]; then
  echo "creating a Python environment in $venv"
  python3 -m venv "$venv"
fi
normalize() { tr 'A-Z_' 'a-z-' | sort; }
installed=$("$venv/bin/python3" -m pip freeze 2>/dev/null | normalize)
wanted=$(printf '%s\n' "${PYTHON_PACKAGES[@]}" | normalize)
if [ -n "$(comm -23 <(echo "$wanted") <(echo "$installed"))" ]; then
  echo "installing Python packages: ${PYTHON_PACKAGES[*]}"
  if ! "$venv/bin/python3" -m pip install -q --disable-pip-version-check "${PYTHON_PACKAGES[@]}"; then
    echo "test.sh: pip could not install ${PYTHON_PACKAGES[*]} into $venv (no network?)" >&2
    exit 1
  fi
fi
# The tests run `python3` (chdb) and the fuzzer runs `schemathesis`: both from the environment.
export PATH="$venv/bin:$PATH"

step "cargo test --workspace"
cargo test --workspace

# The HTTP suite's binary as `cargo test --workspace` just built it: a
# `cargo test -p api` would build it again with the features of api's
# dependencies alone (minutes on a fresh machine). Run as cargo runs it:
# from the package's directory.
api_suite=$(cargo test --workspace --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "it" \
            and m["manifest_path"].endswith("/api/Cargo.toml"):
        print(m["executable"])')
if [ -z "$api_suite" ]; then echo "test.sh: no HTTP suite binary found" >&2; exit 1; fi

step "the HTTP suite on ClickHouse"
(cd api && TRACKHOUSE_TEST_STORAGE=clickhouse "$api_suite")

step "the HTTP suite on a ClickHouse cluster"
(cd api && TRACKHOUSE_TEST_STORAGE=clickhouse-cluster "$api_suite")

step "docs/openapi.json, validated"
openapi-spec-validator docs/openapi.json

step "every call fuzzed from the OpenAPI document"
cargo build --bin trackhouse
target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
python3 scripts/fuzz.py "$target_dir/debug/trackhouse"

step "the geo link page in headless Chromium"
python3 scripts/browser_test.py "$target_dir/debug/trackhouse"

step "every test passed in $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s"
