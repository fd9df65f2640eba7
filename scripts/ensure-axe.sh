#!/bin/sh
# The accessibility checks of the browser tests load axe-core (tests/browser/package.json,
# locked in package-lock.json) into the page; install it when it is missing. With npm: `npm ci`.
# Without npm (a fresh CI machine): the locked version's tarball from the npm registry, checked
# against the lock's sha512 integrity before it is unpacked (only axe.min.js is needed: it runs
# in the browser, not in node).
set -e
DIR=$(dirname "$0")/../tests/browser
if [ -f "$DIR/node_modules/axe-core/axe.min.js" ]; then
    exit 0
fi
if command -v npm >/dev/null 2>&1 && [ -z "${NUMASCOPE_AXE_NO_NPM:-}" ]; then
    echo "installing axe-core for the browser tests (npm ci)"
    (cd "$DIR" && npm ci --no-audit --no-fund --silent)
    exit 0
fi
echo "installing axe-core for the browser tests (npm registry tarball)"
python3 - "$DIR" <<'PY'
import base64, hashlib, io, json, sys, tarfile, urllib.request
from pathlib import Path

base = Path(sys.argv[1])
entry = json.loads((base / "package-lock.json").read_text())["packages"]["node_modules/axe-core"]
version = entry["version"]
algo, _, digest = entry["integrity"].partition("-")
url = entry.get("resolved") or f"https://registry.npmjs.org/axe-core/-/axe-core-{version}.tgz"
with urllib.request.urlopen(url, timeout=60) as answer:
    data = answer.read()
if base64.b64encode(hashlib.new(algo, data).digest()).decode() != digest:
    sys.exit(f"axe-core {version}: {url} does not match the lock's {algo} integrity")
target = base / "node_modules" / "axe-core"
target.mkdir(parents=True, exist_ok=True)
with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
    for name in ("package/axe.min.js", "package/package.json", "package/LICENSE"):
        member = tar.getmember(name)
        (target / name.removeprefix("package/")).write_bytes(tar.extractfile(member).read())
print(f"axe-core {version} in {target}")
PY
