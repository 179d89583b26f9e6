#!/bin/sh
# Put Prometheus's promtool at $1 (the tests' rule checks run it): the one on PATH, else the
# binary from Debian's `prometheus` package, downloaded and unpacked without installing it.
set -eu
target="$1"
if found="$(command -v promtool)"; then
	ln -sf "$found" "$target"
	exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download prometheus >/dev/null 2>&1) || {
	echo "promtool: not on PATH and 'apt-get download prometheus' failed; install Debian's prometheus package" >&2
	exit 1
}
dpkg-deb -x "$work"/prometheus_*.deb "$work/x"
cp "$work/x/usr/bin/promtool" "$target"
"$target" --version >/dev/null
