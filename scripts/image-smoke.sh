#!/usr/bin/env bash
# Build the image with podman and smoke-test it in its three roles (issue 22). Run as root on a
# Debian machine (CI: .ci/run); it installs what it needs from Debian.
#
#   sh scripts/image-smoke.sh            # env: NUMASCOPE_IMAGE (default localhost/numascope:smoke)
#
# * Base: the Dockerfile's BASE_IMAGE (python:3.11-slim pinned by digest) when it can be pulled;
#   otherwise a stand-in built from Debian bookworm with mmdebstrap (Debian's python3 3.11 as
#   /usr/local/bin/python, pip allowed to install system-wide as in python:3.11-slim), passed as
#   --build-arg BASE_IMAGE. The Dockerfile is built unmodified.
# * pip inside the build is configured as the host's pip is: its effective configuration
#   (`pip config list`: files and PIP_* variables) goes in as the build secret `pip.conf`, and the
#   local paths it names (file:// indexes, find-links, CA bundle, constraints) are mounted
#   read-only at the same place for the build. The build uses the host's network.
# * Dashboard (default CMD): /healthz, /nodes, /api/v1/nodes, /metrics; UID 10001; a node
#   created through the API is still there after a container restart (named volume); the
#   HEALTHCHECK is healthy, also for `serve --port N` as deploy/ runs it; a data directory the
#   user cannot write stops it with a message naming the directory and the UID.
# * Agent: `serve --observe --publish-nrt` as UID 0 with no capabilities and a read-only root,
#   on the test suite's fake machine (tests/fixtures/kubelet_host.py: kubelet root, sysfs,
#   PodResources socket) and fake API server (tests/fake_kube_api.py): it publishes the node's
#   NodeResourceTopology.
# * Hub: `serve --hub --demo-fleet 50`: 50 nodes in /api/v1/fleet, read-only root.
# Any failed check stops the script with a message and a non-zero exit. Prints the image size
# and the build time.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
IMAGE=${NUMASCOPE_IMAGE:-localhost/numascope:smoke}
STANDIN=localhost/numascope-standin/python:3.11-slim
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
WORK=$(mktemp -d /tmp/image-smoke.XXXXXX)
RUN_ID=$$
CONTAINERS=()
VOLUMES=()
FIXTURE_PID=

# Without systemd podman cannot arm its health-check timers and says so on every container
# start and removal; the checks below run the HEALTHCHECK themselves, so that line is dropped.
exec 2> >(grep --line-buffered -v 'unable to get systemd connection' >&2)

say() { printf '== %s\n' "$*"; }
fail() {
    printf 'image-smoke: FAILED: %s\n' "$*" >&2
    exit 1
}

cleanup() {
    local status=$?
    if [ "$status" -ne 0 ]; then
        for c in "${CONTAINERS[@]}"; do
            printf -- '--- logs of %s\n' "$c" >&2
            podman logs --tail 40 "$c" >&2 2>&1 || true
        done
        [ -f "$WORK/fixture.log" ] && { echo '--- fixture' >&2; tail -20 "$WORK/fixture.log" >&2; }
    fi
    for c in "${CONTAINERS[@]}"; do podman rm -f -t 2 "$c" >/dev/null 2>&1 || true; done
    for v in "${VOLUMES[@]}"; do podman volume rm -f "$v" >/dev/null 2>&1 || true; done
    if [ -n "$FIXTURE_PID" ]; then
        kill "$FIXTURE_PID" 2>/dev/null || true
        wait "$FIXTURE_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT

# -- tools -------------------------------------------------------------------------------------
need=()
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ "${#need[@]}" -gt 0 ]; then
    say "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}" uidmap fuse-overlayfs >/dev/null
fi
[ -x "$PYTHON" ] || make venv >/dev/null
# Limits the container may set in a nested or restricted host too (podman's defaults ask for
# 1048576 open files, which such a host refuses: "error setting rlimit ... not permitted").
nofile=$(ulimit -n)
[ "$nofile" = unlimited ] || [ "$nofile" -gt 65536 ] && nofile=65536
podman_run() {
    podman run --runtime runc --ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096 "$@"
}

# -- base image --------------------------------------------------------------------------------
BASE=$(sed -n 's/^ARG BASE_IMAGE=//p' Dockerfile)
[ -n "$BASE" ] || fail "no ARG BASE_IMAGE=… in the Dockerfile"
build_args=()
if podman image exists "$BASE" || timeout 120 podman pull -q "$BASE" >/dev/null 2>&1; then
    say "base: $BASE"
else
    if ! podman image exists "$STANDIN"; then
        say "base: $BASE cannot be pulled; building a stand-in from Debian bookworm (mmdebstrap)"
        mirror=()
        # The host's own Debian sources when it is bookworm (its mirror or proxy), else the default.
        if grep -qs 'bookworm' /etc/apt/sources.list.d/debian.sources; then
            mirror=(/etc/apt/sources.list.d/debian.sources)
        fi
        mmdebstrap --quiet --variant=minbase \
            --include=python3,python3-venv,python3-pip,ca-certificates \
            --aptopt='Acquire::Check-Valid-Until "false"' \
            --customize-hook='ln -sf /usr/bin/python3 "$1/usr/local/bin/python"' \
            --customize-hook='ln -sf /usr/bin/python3 "$1/usr/local/bin/python3"' \
            --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
            --customize-hook='rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED' \
            bookworm "$WORK/base.tar" "${mirror[@]}"
        podman import -q \
            --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'CMD ["python3"]' "$WORK/base.tar" "$STANDIN" >/dev/null
        rm -f "$WORK/base.tar"
    fi
    say "base: stand-in $STANDIN"
    build_args+=(--build-arg "BASE_IMAGE=$STANDIN")
fi

# -- the host's pip configuration -----------------------------------------------------------------
: >"$WORK/pip.conf"
if python3 -m pip --version >/dev/null 2>&1; then
    python3 - "$WORK/pip.conf" "$WORK/pip.mounts" <<'PY'
import ast, os, subprocess, sys
from urllib.parse import urlsplit, unquote

listed = subprocess.run(
    [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
).stdout
rank = {"global": 0, "wheel": 1, "install": 1, ":env:": 2}
# Options about where pip installs (not where it downloads from) stay the host's own.
skip = {"user", "target", "prefix", "root", "python", "require-virtualenv", "break-system-packages"}
chosen: dict[str, tuple[int, str]] = {}
for line in listed.splitlines():
    key, sep, raw = line.partition("=")
    section, _, name = key.rpartition(".")
    if not sep or section not in rank or name in skip:
        continue
    value = ast.literal_eval(raw)
    if name not in chosen or rank[section] >= chosen[name][0]:
        chosen[name] = (rank[section], value)
paths = set()
for name, (_, value) in chosen.items():
    for word in value.split():
        path = unquote(urlsplit(word).path) if word.startswith("file:") else word
        if not (path.startswith("/") and os.path.exists(path)):
            continue
        path = path.rstrip("/")
        if name.endswith("index-url") and os.path.isdir(path):
            # A local simple index links to its files beside it (../../files/x.whl).
            path = os.path.dirname(path)
        paths.add(path)
with open(sys.argv[1], "w") as conf:
    conf.write("[global]\n")
    for name, (_, value) in sorted(chosen.items()):
        conf.write(f"{name} = {value}\n")
with open(sys.argv[2], "w") as mounts:
    mounts.writelines(f"{p}\n" for p in sorted(paths))
PY
    while IFS= read -r path; do
        build_args+=(--volume "$path:$path:ro")
    done <"$WORK/pip.mounts"
fi
say "pip configuration for the build: $(grep -c = "$WORK/pip.conf" || true) settings, $(grep -c . "$WORK/pip.mounts" 2>/dev/null || echo 0) local paths"

# -- build -------------------------------------------------------------------------------------
say "building $IMAGE"
# Docker's image format: the OCI format has no HEALTHCHECK (buildah would drop it).
start=$(date +%s)
podman build --runtime runc --network host --layers --format docker \
    --secret "id=pip.conf,src=$WORK/pip.conf" "${build_args[@]}" \
    -t "$IMAGE" -f Dockerfile . >"$WORK/build.log" 2>&1 || {
    tail -40 "$WORK/build.log" >&2
    fail "podman build"
}
build_seconds=$(($(date +%s) - start))
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
say "built in ${build_seconds}s; image size $((size / 1000000)) MB ($size bytes)"

# -- helpers -----------------------------------------------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

wait_http() { # URL [seconds]: until it answers 200
    local deadline=$(($(date +%s) + ${2:-90}))
    until curl -fsS -o /dev/null --max-time 3 "$1" 2>/dev/null; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "$1 did not answer 200 in ${2:-90}s"
        sleep 1
    done
}

expect_200() { # URL WHAT
    local code
    code=$(curl -sS -o "$WORK/body" -w '%{http_code}' --max-time 20 "$1") || fail "$2: $1 unreachable"
    [ "$code" = 200 ] || fail "$2: $1 answered $code: $(head -c 300 "$WORK/body")"
    echo "   ok $2"
}

json_check() { # WHAT PYTHON-EXPRESSION-ON-doc (the last response body)
    python3 -c "import json,sys; doc=json.load(open('$WORK/body')); sys.exit(0 if ($2) else 1)" ||
        fail "$1: $(head -c 300 "$WORK/body")"
    echo "   ok $1"
}

healthy() { # CONTAINER WHAT
    local deadline=$(($(date +%s) + 60))
    until podman healthcheck run "$1" >"$WORK/health" 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] ||
            fail "$2: the HEALTHCHECK is not healthy: $(tail -2 "$WORK/health")"
        sleep 2
    done
    echo "   ok $2: HEALTHCHECK healthy"
}

uid_of() { podman exec "$1" sh -c 'sed -n "s/^Uid:[[:space:]]*\([0-9]*\).*/\1/p" /proc/1/status'; }

# -- dashboard ---------------------------------------------------------------------------------
say "dashboard (default CMD)"
port=$(free_port)
volume="numascope-smoke-$RUN_ID"
VOLUMES+=("$volume")
dash="numascope-smoke-dash-$RUN_ID"
CONTAINERS+=("$dash")
podman_run -d --name "$dash" --network host -e "NUMASCOPE_PORT=$port" \
    -v "$volume:/var/lib/numascope" "$IMAGE" >/dev/null
url="http://127.0.0.1:$port"
wait_http "$url/healthz"
# Pages (templates), a static file and the API (the migrated database), from the installed
# package: templates, static files and migrations are its package data.
for path in /healthz /nodes /api/v1/nodes /metrics /static/css/numascope.css; do
    expect_200 "$url$path" "dashboard $path"
done
[ "$(uid_of "$dash")" = 10001 ] || fail "the dashboard runs as UID $(uid_of "$dash"), not 10001"
echo "   ok runs as UID 10001"
healthy "$dash" "dashboard"
body='{"name": "smoke-kept", "topology": "topoDualSocketHT", "release": "1.37", "kubeletConfig": "cpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n"}'
code=$(curl -sS -o "$WORK/body" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data "$body" "$url/api/v1/nodes")
[ "$code" = 201 ] || fail "creating a node answered $code: $(head -c 300 "$WORK/body")"
podman restart -t 10 "$dash" >/dev/null
wait_http "$url/healthz"
expect_200 "$url/api/v1/nodes/smoke-kept" "the node created before the restart"
podman rm -f -t 5 "$dash" >/dev/null

say "dashboard as deploy/ runs it (serve --port N; NUMASCOPE_PORT left at 8000)"
port=$(free_port)
ported="numascope-smoke-port-$RUN_ID"
CONTAINERS+=("$ported")
podman_run -d --name "$ported" --network host "$IMAGE" \
    numascope serve --host 127.0.0.1 --port "$port" --no-demo >/dev/null
wait_http "http://127.0.0.1:$port/healthz"
healthy "$ported" "serve --port $port"
podman rm -f -t 5 "$ported" >/dev/null

say "a data directory the image's user cannot write"
mkdir -m 0755 "$WORK/root-owned"
if podman_run --rm -v "$WORK/root-owned:/var/lib/numascope" "$IMAGE" >"$WORK/refused" 2>&1; then
    fail "serve started on a data directory UID 10001 cannot write"
fi
grep -q '/var/lib/numascope is not writable by UID 10001' "$WORK/refused" ||
    fail "no clear message: $(tail -3 "$WORK/refused")"
grep -q 'Traceback' "$WORK/refused" && fail "a traceback: $(tail -5 "$WORK/refused")"
echo "   ok $(grep -o 'the database folder.*UID 10001' "$WORK/refused")"

# -- agent -------------------------------------------------------------------------------------
say "agent (serve --observe --publish-nrt; UID 0, no capabilities, read-only root)"
node=smoke-node
(cd "$REPO" && exec "$PYTHON" - "$WORK/fixture.json" "$node" >"$WORK/fixture.log" 2>&1) <<'PY' &
import json, os, signal, sys, time
from tests.fake_kube_api import kubeconfig, namespace, running
from tests.fixtures.kubelet_host import KubeletHost
from app.adapters.nrt_publisher import GROUP, PLURAL, VERSION

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # leave through the finally below
out, node = sys.argv[1], sys.argv[2]
host = KubeletHost(node)
try:
    with running(GROUP, VERSION, PLURAL) as api:
        api.others["/api/v1/namespaces/numascope"] = namespace("numascope", "smoke-ns-uid")
        (host.base / "kubeconfig").write_text(kubeconfig(api.url, token="smoke-token"))
        info = {"api": api.url, "base": str(host.base), "root": str(host.root),
                "sysfs": str(host.sysfs), "socket": str(host.socket)}
        with open(out + ".tmp", "w") as f:
            json.dump(info, f)
        os.rename(out + ".tmp", out)
        while True:
            time.sleep(1)
finally:
    host.close()
PY
FIXTURE_PID=$!
for _ in $(seq 60); do [ -f "$WORK/fixture.json" ] && break; sleep 1; done
[ -f "$WORK/fixture.json" ] || fail "the fake machine and API server did not start"
get() { python3 -c "import json; print(json.load(open('$WORK/fixture.json'))['$1'])"; }
api=$(get api) base=$(get base)
port=$(free_port)
agent="numascope-smoke-agent-$RUN_ID"
CONTAINERS+=("$agent")
podman_run -d --name "$agent" --network host --user 0:0 --cap-drop ALL --read-only \
    --security-opt no-new-privileges --tmpfs /var/lib/numascope \
    -v "$base:$base:ro" \
    -e NODE_NAME="$node" -e POD_NAMESPACE=numascope -e KUBECONFIG="$base/kubeconfig" \
    -e NUMASCOPE_KUBELET_ROOT="$(get root)" -e NUMASCOPE_SYSFS_ROOT="$(get sysfs)" \
    -e NUMASCOPE_PODRESOURCES_SOCKET="unix://$(get socket)" -e NUMASCOPE_NRT_INTERVAL=1 \
    "$IMAGE" numascope serve --host 0.0.0.0 --port "$port" --no-demo --observe --publish-nrt \
    >/dev/null
url="http://127.0.0.1:$port"
wait_http "$url/healthz"
expect_200 "$url/api/v1/nodes/$node" "the agent serves its observed node"
deadline=$(($(date +%s) + 60))
until curl -fsS -o "$WORK/body" "$api/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/$node"; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "the agent published no NodeResourceTopology"
    sleep 1
done
json_check "NodeResourceTopology published, owned by the namespace" \
    "doc['metadata']['ownerReferences'][0]['uid'] == 'smoke-ns-uid' and len(doc['zones']) == 4"
expect_200 "$url/metrics" "agent /metrics"
grep -q 'numascope_nrt_publish_total{outcome="created"} 1.0' "$WORK/body" ||
    fail "the publish metric is missing"
echo "   ok publish counted in /metrics"
[ "$(uid_of "$agent")" = 0 ] || fail "the agent runs as UID $(uid_of "$agent")"
caps=$(podman exec "$agent" sh -c 'sed -n "s/^CapEff:[[:space:]]*//p" /proc/1/status')
[ "$caps" = 0000000000000000 ] || fail "the agent has capabilities $caps"
if podman exec "$agent" sh -c ': >/opt/numascope/x' 2>/dev/null; then fail "the root is writable"; fi
echo "   ok UID 0, CapEff 0, read-only root"
healthy "$agent" "agent"
podman rm -f -t 5 "$agent" >/dev/null

# -- hub ---------------------------------------------------------------------------------------
say "hub (serve --hub --demo-fleet 50)"
port=$(free_port)
hub="numascope-smoke-hub-$RUN_ID"
CONTAINERS+=("$hub")
# A fresh volume is a copy of the image's data directory, owned by UID 10001 (podman 4.3 does
# not apply a tmpfs mode, so a tmpfs would be root's 0755).
VOLUMES+=("$hub")
podman_run -d --name "$hub" --network host --read-only -v "$hub:/var/lib/numascope" \
    "$IMAGE" numascope serve --host 0.0.0.0 --port "$port" --no-demo --no-observe \
    --hub --demo-fleet 50 >/dev/null
url="http://127.0.0.1:$port"
wait_http "$url/healthz" 120
deadline=$(($(date +%s) + 120))
until curl -fsS -o "$WORK/body" "$url/api/v1/fleet" &&
    python3 -c "import json,sys; d=json.load(open('$WORK/body')); sys.exit(0 if len(d.get('nodes', [])) == 50 else 1)"; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "the hub does not list 50 nodes: $(head -c 300 "$WORK/body")"
    sleep 2
done
echo "   ok /api/v1/fleet lists the 50 nodes of the demo fleet"
expect_200 "$url/fleet" "hub /fleet"
healthy "$hub" "hub"

say "image-smoke: all checks passed (image $IMAGE, $((size / 1000000)) MB, built in ${build_seconds}s)"
