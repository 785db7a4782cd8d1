#!/usr/bin/env bash
# ensure-chromium.sh — make a headless Chromium available for the console's browser test
# (test/console_browser_test.go). Used by `make test`: the test must run, never be skipped, so this
# script either leaves a browser behind or fails loudly.
#
# If chromium (or $STB_CHROMIUM) is already there, it does nothing; else it installs Debian's
# `chromium` package with apt-get (sudo if not root).
set -euo pipefail

log() { printf 'ensure-chromium: %s\n' "$*" >&2; }
die() {
	printf 'ensure-chromium: ERROR: %s\n' "$*" >&2
	exit 1
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "not root and no sudo: install Debian's chromium package, or set STB_CHROMIUM to a Chromium binary"
	fi
}

if [ -n "${STB_CHROMIUM:-}" ]; then
	[ -x "$STB_CHROMIUM" ] || die "STB_CHROMIUM=$STB_CHROMIUM is not an executable"
	exit 0
fi
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		exit 0
	fi
done
command -v apt-get >/dev/null 2>&1 ||
	die "no Chromium and no apt-get: install Chromium, or set STB_CHROMIUM to its binary"
log "no Chromium; installing Debian's chromium package (apt-get)"
as_root apt-get update >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >&2
command -v chromium >/dev/null 2>&1 || die "apt-get install chromium finished, but chromium is not on PATH"
log "installed $(chromium --version 2>/dev/null || echo chromium)"
