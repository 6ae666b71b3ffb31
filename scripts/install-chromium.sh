#!/usr/bin/env bash
# Debian's Chromium, for the test that opens report.html in a headless browser
# (tests/report_in_browser.rs). Prints the browser's path. Idempotent; uses sudo when not root.
set -euo pipefail
if ! command -v chromium >/dev/null; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "install-chromium: installing Debian's chromium" >&2
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
command -v chromium
