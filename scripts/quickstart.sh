#!/usr/bin/env bash
# Builds MegaGraph and trains on its embedded synthetic graph. On a machine without a Vulkan
# adapter (no GPU), installs Mesa's software Vulkan driver (lavapipe) first.
# Extra arguments go to `megagraph train` (e.g. --data ../shared/data/cora.npz --json).
set -euo pipefail
cd "$(dirname "$0")/.."

have_vulkan_adapter() {
  command -v vulkaninfo >/dev/null 2>&1 && vulkaninfo --summary 2>/dev/null | grep -q "deviceName"
}

if ! have_vulkan_adapter; then
  echo "quickstart: no Vulkan adapter found; installing Mesa's software driver (lavapipe)" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq mesa-vulkan-drivers libvulkan1 vulkan-tools
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "quickstart: cargo not found; install Rust 1.95 or newer (https://rustup.rs), then rerun" >&2
  exit 1
fi

cargo build -p megagraph-cli --bin megagraph
./target/debug/megagraph devices
exec ./target/debug/megagraph train "$@"
