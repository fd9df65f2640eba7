#!/bin/sh
# Browser tests drive Debian's chromium; install it when we can (root with apt), else say why.
set -e
CHROMIUM=${NUMASCOPE_CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ]; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian chromium for the browser tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
    echo "note: $CHROMIUM is missing and cannot be installed here; browser tests will be skipped" >&2
fi
