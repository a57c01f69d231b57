#!/bin/sh
# Build the sandbox base image from Debian packages, with no Docker registry:
#   a minbase bookworm root file system + python3, python3-pytest, git, patch, ca-certificates,
#   a non-root user evalkit (uid/gid 1000) owning /work, then `docker import`.
# The root file system comes from mmdebstrap where it is installed (apt resolves the packages; about half
# debootstrap's time and CPU: 35 s against 63 s on a 2-core machine), else from debootstrap.
#
# Usage: from-debian.sh [--force] [TAG]      (default TAG evalkit/python-pytest:bookworm)
# Env:   DEBIAN_MIRROR (default http://deb.debian.org/debian)
#
# Idempotent: does nothing when TAG already exists, unless --force.
# The image's default user is evalkit (USER evalkit): the sandbox runner only writes under
# /work and /tmp, which that user owns, so nothing in a test run needs root. The engine also
# passes user=1000:1000 explicitly when it creates a container.
set -eu

FORCE=0
if [ "${1:-}" = "--force" ]; then FORCE=1; shift; fi
TAG="${1:-evalkit/python-pytest:bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if [ "$FORCE" = 0 ] && docker image inspect "$TAG" >/dev/null 2>&1; then
    echo "image $TAG exists (use --force to rebuild)"
    exit 0
fi

if command -v mmdebstrap >/dev/null 2>&1; then
    TOOL=mmdebstrap
elif command -v debootstrap >/dev/null 2>&1; then
    TOOL=debootstrap
else
    echo "neither mmdebstrap nor debootstrap is installed: install one (Debian and Ubuntu package mmdebstrap)" >&2
    exit 2
fi
if [ "$(id -u)" != 0 ]; then
    echo "$TOOL needs root: run this script as root (or with sudo)" >&2
    exit 2
fi

ROOTFS="$(mktemp -d /tmp/evalkit-rootfs.XXXXXX)"
cleanup() { rm -rf "$ROOTFS"; }
trap cleanup EXIT INT TERM

start=$(date +%s)
PACKAGES=python3,python3-pytest,git,patch,ca-certificates
if [ "$TOOL" = mmdebstrap ]; then
    # apt chooses among alternatives where debootstrap takes the first: python3-pytest's backports (tomli, ...) are
    # left out for bookworm's Python 3.11, and usrmerge is taken (with three small perl modules)
    mmdebstrap --quiet --variant=minbase --include="$PACKAGES" bookworm "$ROOTFS" "$MIRROR"
else
    debootstrap --variant=minbase --include="$PACKAGES" bookworm "$ROOTFS" "$MIRROR"
fi

chroot "$ROOTFS" /usr/sbin/groupadd --gid 1000 evalkit
chroot "$ROOTFS" /usr/sbin/useradd --uid 1000 --gid 1000 --create-home --shell /bin/sh evalkit
mkdir -p "$ROOTFS/work"
chown 1000:1000 "$ROOTFS/work"
# Keep the image small: no package caches or lists.
chroot "$ROOTFS" /usr/bin/apt-get clean
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/log/*.log \
       "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/locale/*

# The labels are evalkit.sandbox.image_store.build_labels("base", TAG): what the image store counts as evalkit's.
tar --numeric-owner -C "$ROOTFS" -c . | docker import \
    -c 'USER evalkit' \
    -c 'WORKDIR /work' \
    -c 'ENV HOME=/home/evalkit LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1' \
    -c 'CMD ["/bin/sh"]' \
    -c 'LABEL evalkit.image=base' \
    -c "LABEL evalkit.image.name=$TAG" \
    -m "evalkit sandbox base: $TOOL bookworm minbase + python3-pytest git patch" \
    - "$TAG"

echo "built $TAG with $TOOL in $(( $(date +%s) - start ))s: $(docker image inspect -f '{{.Id}}' "$TAG")"
