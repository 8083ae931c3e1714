#!/usr/bin/env bash
# The demo (README): build flowsec and show what the IPsec core does today:
# ESP/AH suites sealed and opened through the real core, next to the raw
# cipher, on one core, like `openssl speed`. (The namespace-gateway demo
# arrives with `flowsec up`.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --locked -p flowsec
exec target/release/flowsec speed aes128gcm16 chacha20poly1305 aes128-sha1 3des-md5 ah-sha1 \
    --sizes 64,512,1420,8192 --seconds 0.2 "$@"
