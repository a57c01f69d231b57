#!/bin/sh
# Build the sandbox base image from Debian packages, with no Docker registry (mmdebstrap or debootstrap + docker import).
# Usage: scripts/build-base-image.sh [--force] [TAG]      (default TAG evalkit/python-pytest:bookworm)
# The recipe ships with evalkit (evalkit/sandbox/base_image/from-debian.sh): `evalkit run` uses the
# same one when the image is absent and no registry is reachable.
exec sh "$(dirname "$0")/../evalkit/sandbox/base_image/from-debian.sh" "$@"
