#!/usr/bin/env bash
# Regenerate the docs' explorer pages and their screenshots (needs a C compiler and
# Debian's chromium): bash docs/make_pictures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
W1="f32[784,512], f32[512], f32[512,512], f32[512], f32[512,10], f32[10], f32[128,784], f32[128,10]"
python -m plait explore docs/examples/w1.py:loss --grad --args "$W1" -o docs/explorer/w1_grad.html
python -m plait explore docs/examples/stages.py:f --args "f32[4,3], f32[3,2]" -o docs/explorer/stages.html
for page in w1_grad stages; do
    profile="$(mktemp -d)"
    chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$profile" --window-size=1400,1000 \
        --screenshot="docs/images/explorer-$page.png" "file://$PWD/docs/explorer/$page.html" \
        2> /dev/null
    rm -rf "$profile"
done
