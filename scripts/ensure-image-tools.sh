#!/usr/bin/env bash
# ensure-image-tools.sh — make sure the tools `make image` needs are installed: podman (builds and runs
# the image without a daemon), runc (the runtime `make image-test` runs it with: crun, podman's
# default, refuses this machine's hybrid cgroups), musl-gcc (links the static stb binary the image
# holds) and the CA bundle the image copies (/etc/ssl/certs/ca-certificates.crt).
#
# Used by `make image` and `make image-test`. Whatever is missing is installed from Debian's packages
# with apt-get (sudo if not root): `podman`, `runc`, `musl-tools`, `ca-certificates`. A second run is
# a no-op.
set -euo pipefail

log() { printf 'ensure-image-tools: %s\n' "$*" >&2; }
die() {
	printf 'ensure-image-tools: ERROR: %s\n' "$*" >&2
	exit 1
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "not root and no sudo: install Debian's podman, runc and musl-tools packages"
	fi
}

missing=()
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v runc >/dev/null 2>&1 || missing+=(runc)
command -v musl-gcc >/dev/null 2>&1 || missing+=(musl-tools)
[ -s /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
command -v apt-get >/dev/null 2>&1 ||
	die "missing ${missing[*]} and no apt-get to install them: install podman, runc and musl-gcc"
log "installing ${missing[*]} (apt-get)"
as_root apt-get update >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
command -v podman >/dev/null 2>&1 || die "apt-get install podman finished, but podman is not on PATH"
command -v runc >/dev/null 2>&1 || die "apt-get install runc finished, but runc is not on PATH"
command -v musl-gcc >/dev/null 2>&1 || die "apt-get install musl-tools finished, but musl-gcc is not on PATH"
[ -s /etc/ssl/certs/ca-certificates.crt ] || die "apt-get install ca-certificates finished, but /etc/ssl/certs/ca-certificates.crt is missing"
log "installed $(podman --version), runc and musl-gcc"
