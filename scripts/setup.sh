#!/usr/bin/env bash
# Sets up a fresh Debian machine for cvtrain and builds it: Debian packages, a venv with the torch
# wheel (LibTorch) outside the clone, then CMake + Ninja into build/: the cvtrain binary alone, which
# is what training needs (scripts/test.sh builds the test programs). Idempotent: on a machine that
# has everything it downloads nothing and returns in seconds.
#   CVTRAIN_HOME   where the venv lives (default ~/.cache/cvtrain), shared by every clone and CI run
#   BUILD_DIR      build folder (default build)
set -euo pipefail
cd "$(dirname "$0")/.."

CVTRAIN_HOME=${CVTRAIN_HOME:-$HOME/.cache/cvtrain}
BUILD_DIR=${BUILD_DIR:-build}
TORCH_VERSION=2.11.0
TORCHVISION_VERSION=0.26.0  # the release built against TORCH_VERSION; used by benchmarks and reference tests
TIMM_VERSION=1.0.31         # the reference for the ViT/ConvNeXt parity tests
TRANSFORMERS_VERSION=5.25.0 # the reference for the SegFormer parity test
APT_PACKAGES=(g++ cmake ninja-build ccache pkg-config zlib1g-dev libyaml-cpp-dev libcli11-dev libfmt-dev catch2
  libopencv-imgproc-dev libopencv-imgcodecs-dev libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev libgloo-dev dataset-fashion-mnist
  chromium procps libcurl4-openssl-dev)
# chromium: the report's test opens it in a real (headless) browser; procps: tests count leftover ranks
# with pgrep; libcurl: the MLflow tracking client's HTTP
PIP_PACKAGES=("torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION" "timm==$TIMM_VERSION" "transformers==$TRANSFORMERS_VERSION" safetensors numpy pyyaml
  pillow==13.0.0 scikit-image==0.26.0 tensorboard==2.21.0 mlflow==3.17.2
  "nvidia-nvjpeg==13.0.*")  # mlflow: the tracking tests' real server and client; nvjpeg.h for the GPU JPEG decoder, and the libnvjpeg.so.13 gpu_check.sh carries

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

missing_apt_packages() {
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

install_apt_packages() {
  local missing
  missing=$(missing_apt_packages)
  [ -z "$missing" ] && return
  # shellcheck disable=SC2086
  echo "setup: installing Debian packages:" $missing
  # dpkg prints hundreds of lines even with -qq: they go to a log, shown only when apt fails.
  local log="${TMPDIR:-/tmp}/cvtrain-setup-apt.log"
  # shellcheck disable=SC2086
  if ! { $SUDO apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing; } > "$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "setup: apt-get failed (the whole output is in $log)" >&2
    exit 1
  fi
}

install_torch_venv() {
  local python="$CVTRAIN_HOME/venv/bin/python"
  # Reads the installed version without importing torch (which takes seconds).
  if [ -x "$python" ] && "$python" - <<PY 2>/dev/null; then return; fi
from importlib.metadata import version
import numpy, yaml
assert version("torch").split("+")[0] == "$TORCH_VERSION"
assert version("torchvision").split("+")[0] == "$TORCHVISION_VERSION"
assert version("timm") == "$TIMM_VERSION"
assert version("transformers") == "$TRANSFORMERS_VERSION"
version("safetensors")
version("pillow"), version("scikit-image")
assert version("tensorboard") == "2.21.0"
assert version("mlflow") == "3.17.2"
assert version("nvidia-nvjpeg").startswith("13.0.")
PY
  echo "setup: installing ${PIP_PACKAGES[*]} into $CVTRAIN_HOME/venv (a few GB, once per machine)"
  mkdir -p "$CVTRAIN_HOME"
  if [ ! -x "$python" ]; then
    python3 -m venv "$CVTRAIN_HOME/venv" || { $SUDO apt-get install -y -qq python3-venv && python3 -m venv "$CVTRAIN_HOME/venv"; }
  fi
  "$python" -m pip install -q --disable-pip-version-check "${PIP_PACKAGES[@]}"
}

build() {
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    CVTRAIN_HOME="$CVTRAIN_HOME" cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTORCH_CUDA_ARCH_LIST=9.0 \
      > "$BUILD_DIR.configure.log" 2>&1 || { cat "$BUILD_DIR.configure.log"; exit 1; }
  fi
  # Two jobs: a unity batch of torch-heavy sources needs about 1.5 GB. Only ninja's progress lines
  # are dropped; a failed build fails setup (pipefail), even where an older binary is still there.
  ninja -C "$BUILD_DIR" -j "${CVTRAIN_JOBS:-2}" cvtrain | { grep -v "^\[" || true; }
}

install_apt_packages
install_torch_venv
build
echo "setup: ready — $BUILD_DIR/apps/cvtrain"
