#!/bin/sh
# The accessibility checks of the browser tests load axe-core (tests/browser/package.json,
# locked in package-lock.json) into the page; install it with npm when it is missing.
set -e
DIR=$(dirname "$0")/../tests/browser
if [ -f "$DIR/node_modules/axe-core/axe.min.js" ]; then
    exit 0
fi
if command -v npm >/dev/null 2>&1; then
    echo "installing axe-core for the browser tests"
    (cd "$DIR" && npm ci --no-audit --no-fund --silent)
else
    echo "note: npm is missing; the accessibility checks of the browser tests will be skipped" >&2
fi
