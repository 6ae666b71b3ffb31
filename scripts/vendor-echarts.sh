#!/usr/bin/env bash
# Where crates/engine/assets/report/echarts-6.1.0.min.js comes from: Apache ECharts 6.1.0 as
# published on the npm registry, its dist/echarts.min.js unchanged (with its LICENSE, NOTICE and
# the d3 licence it names). report.html inlines it, so that a report opens without a network.
# Run this to check the vendored file, or, with another VERSION, to replace it (then update the
# file name in crates/engine/src/report_html/mod.rs and the checksum here).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${VERSION:-6.1.0}
SHA256=b66b25aeb4df84e33199dc21694014d336d222cbd9deb0e5a7c14bd6aa0d0fd0
dest=crates/engine/assets/report
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "echarts@$VERSION" >/dev/null && tar xzf "echarts-$VERSION.tgz")
got=$(sha256sum "$tmp/package/dist/echarts.min.js" | cut -d' ' -f1)
if [ "$VERSION" = 6.1.0 ] && [ "$got" != "$SHA256" ]; then
    echo "vendor-echarts: echarts $VERSION's echarts.min.js has sha256 $got, not $SHA256" >&2
    exit 1
fi
cp "$tmp/package/dist/echarts.min.js" "$dest/echarts-$VERSION.min.js"
{ cat "$tmp/package/NOTICE"; printf '\n\n'; cat "$tmp/package/LICENSE"; } >"$dest/ECHARTS-LICENSE"
cp "$tmp/package/licenses/LICENSE-d3" "$dest/ECHARTS-LICENSE-d3"
echo "vendor-echarts: $dest/echarts-$VERSION.min.js (sha256 $got)"
