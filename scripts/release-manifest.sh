#!/usr/bin/env bash
# Writes the krew manifest of a release: krew-manifest.yaml with every platform's sha256 taken from
# the archive its uri names, as scripts/package.sh left it in DIST (<archive>.sha256 beside each
# archive). The uris stay the published https ones. Refuses when an archive or its checksum is
# missing or does not match, so a manifest is never published with a placeholder or a stale sum.
#   usage: scripts/release-manifest.sh DIST_DIR    (writes DIST_DIR/krew-manifest.yaml)
set -euo pipefail

die() {
	echo "release-manifest.sh: error: $*" >&2
	exit 1
}

[ $# -eq 1 ] || die "usage: scripts/release-manifest.sh DIST_DIR"
root="$(cd "$(dirname "$0")/.." && pwd)"
manifest="$root/krew-manifest.yaml"
dist="$1"
[ -d "$dist" ] || die "$dist is not a directory"

sha() {
	if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1
}

# Every uri line, in order: its line number and the archive name (the uri's last segment).
sums=()
while IFS=: read -r line uri; do
	name="${uri##*/}"
	name="${name%\"}"
	archive="$dist/$name"
	[ -f "$archive" ] || die "krew-manifest.yaml:$line: $name is not in $dist (did every platform build?)"
	[ -f "$archive.sha256" ] || die "$archive.sha256 is missing (scripts/package.sh writes it)"
	recorded="$(cut -d' ' -f1 "$archive.sha256")"
	actual="$(sha "$archive")"
	[ "$recorded" = "$actual" ] || die "$archive.sha256 says $recorded but the archive's sha256 is $actual"
	sums+=("$actual")
done < <(grep -n '^ *uri:' "$manifest" | sed -e 's/^\([0-9]*\): *uri: */\1:/')
[ ${#sums[@]} -gt 0 ] || die "krew-manifest.yaml has no platform uri"

# The n-th sha256 line after the n-th uri gets the n-th sum; everything else is kept as it is.
awk -v list="${sums[*]}" '
	BEGIN { n = split(list, s, " ") }
	/^ +uri:/ { i++ }
	/^ +sha256:/ { if (i < 1 || i > n) { exit 3 } match($0, /^ +/); print substr($0, 1, RLENGTH) "sha256: \"" s[i] "\""; next }
	{ print }
' "$manifest" >"$dist/krew-manifest.yaml.tmp" || die "krew-manifest.yaml: a sha256 line comes before any uri"
mv "$dist/krew-manifest.yaml.tmp" "$dist/krew-manifest.yaml"
echo "wrote $dist/krew-manifest.yaml (${#sums[@]} platforms)" >&2
