#!/usr/bin/env bash
# Packs kubectl-tfjob for krew. krew-manifest.yaml is the single source of truth: the archive holds
# exactly the `files` (`from`) of the platform matching the target, `bin` being the built binary.
# Writes, into the output directory:
#   kubectl-tfjob-<version>-<target>.tar.gz   (.zip for Windows targets, as the manifest publishes)
#   <archive>.sha256                          (sha256sum format, so `sha256sum -c` works there)
#   krew-manifest.yaml                        (the checked-in manifest with this platform's sha256
#                                              and a file:// uri; other platforms unchanged)
# and prints the archive path on stdout (progress goes to stderr).
# The release workflow (.github/workflows/release.yml) runs this same script, so local and release
# archives have the same layout. Entries are sorted, owned by 0:0, stamped with SOURCE_DATE_EPOCH
# (default: the HEAD commit time) and gzip carries no name or timestamp, so packing the same binary
# twice gives the same bytes.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: scripts/package.sh [options]
  --target TRIPLE          Rust target to build and name the archive for (default: rustc's host)
  --binary PATH            package this prebuilt binary instead of running `cargo build --release`
  --out-dir DIR            where to write the archive, its .sha256 and the manifest (default: dist/)
  --cargo CMD              build with CMD instead of cargo (e.g. cross)
  --expect-version VER     fail unless the crate version is VER (the release tag, e.g. v0.1.0)
EOF
}

die() {
	echo "package.sh: error: $*" >&2
	exit 1
}

root="$(cd "$(dirname "$0")/.." && pwd)"
manifest="$root/krew-manifest.yaml"
target=""
binary=""
out_dir="$root/dist"
cargo_cmd="cargo"
expect_version=""

need_value() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
	case "$1" in
	--target | --binary | --out-dir | --cargo | --expect-version)
		need_value "$@"
		case "$1" in
		--target) target="$2" ;;
		--binary) binary="$2" ;;
		--out-dir) out_dir="$2" ;;
		--cargo) cargo_cmd="$2" ;;
		--expect-version) expect_version="$2" ;;
		esac
		shift 2
		;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		usage >&2
		die "unknown argument '$1'"
		;;
	esac
done

# --- version: Cargo.toml's [package] version, which krew-manifest.yaml must carry as v<version>
crate_version="$(awk -F'"' '/^\[/ { p = ($0 == "[package]") } p && /^version *=/ { print $2; exit }' "$root/Cargo.toml")"
[ -n "$crate_version" ] || die "no version in the [package] table of $root/Cargo.toml"
version="v$crate_version"
manifest_version_line="$(grep -n -m1 '^  version:' "$manifest" || true)"
manifest_version="$(printf '%s' "${manifest_version_line#*version:}" | tr -d ' "'"'")"
[ "$manifest_version" = "$version" ] ||
	die "krew-manifest.yaml:${manifest_version_line%%:*}: spec.version is '$manifest_version' but Cargo.toml's version is $crate_version; set it to $version"
if [ -n "$expect_version" ] && [ "$expect_version" != "$version" ]; then
	die "expected version $expect_version (release tag) but Cargo.toml and krew-manifest.yaml say $version; bump them or tag $version"
fi

# --- target → krew's os/arch labels (Go's GOOS/GOARCH, what krew matches selectors against:
# kubernetes-sigs/krew internal/installation/platform.go)
explicit_target="$target"
if [ -z "$target" ]; then
	target="$("${RUSTC:-rustc}" -vV | sed -n 's/^host: //p')"
	[ -n "$target" ] || die "could not read the host target from '${RUSTC:-rustc} -vV'; pass --target"
fi
case "$target" in
x86_64-*) arch=amd64 ;;
aarch64-* | arm64-*) arch=arm64 ;;
*) die "target $target: no krew arch for it (known: x86_64 → amd64, aarch64 → arm64)" ;;
esac
case "$target" in
*-linux-*) os=linux ;;
*-apple-darwin) os=darwin ;;
*-windows-*) os=windows ;;
*) die "target $target: no krew os for it (known: *-linux-*, *-apple-darwin, *-windows-*)" ;;
esac
case "$os" in
windows) ext=zip ;;
*) ext=tar.gz ;;
esac

# --- the first platform whose selector matches os/arch, as krew picks it (platform.go):
# prints "first last" line numbers of that item of spec.platforms.
range="$(awk -v os="$os" -v arch="$arch" '
	function label(line) { sub(/^[^:]*:[ \t]*/, "", line); gsub(/["'\'' \t]/, "", line); return line }
	function close_item(end) {
		if (start && o == os && a == arch && !found) { print start, end; found = 1 }
		start = 0
	}
	/^  platforms:/ { in_platforms = 1; next }
	in_platforms && /^  - / { close_item(NR - 1); start = NR; o = ""; a = ""; next }
	in_platforms && /^ ? ?[^ -]/ && !/^#/ { close_item(NR - 1); in_platforms = 0 }
	start && /^ +os:/ { o = label($0) }
	start && /^ +arch:/ { a = label($0) }
	END { close_item(NR) }
' "$manifest")"
[ -n "$range" ] || die "krew-manifest.yaml has no platform with selector os: $os, arch: $arch (target $target); add one or pass another --target"
first="${range% *}"
last="${range#* }"
block="$(sed -n "${first},${last}p" "$manifest")"

value_of() { printf '%s' "${1#*:}" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e 's/^"\(.*\)"$/\1/' -e "s/^'\(.*\)'\$/\1/"; }
bin_line="$(printf '%s\n' "$block" | grep -m1 '^ *bin:' || true)"
[ -n "$bin_line" ] || die "krew-manifest.yaml lines $first-$last ($os/$arch): no 'bin:'"
bin="$(value_of "$bin_line")"
froms=()
while IFS= read -r line; do
	froms+=("$(value_of "${line#*- }")")
done < <(printf '%s\n' "$block" | grep -E '^ *(- )?from:' || true)
[ ${#froms[@]} -gt 0 ] || die "krew-manifest.yaml lines $first-$last ($os/$arch): no 'files:' entries with 'from:'; list the binary and LICENSE"
bin_listed=""
for f in "${froms[@]}"; do
	case "$f" in
	*[*?[]* | */* | . | ..) die "krew-manifest.yaml ($os/$arch): files.from '$f' is a glob or a path; package.sh packs plain top-level file names only" ;;
	esac
	[ "$f" = "$bin" ] && bin_listed=1
done
[ -n "$bin_listed" ] || die "krew-manifest.yaml ($os/$arch): bin '$bin' is not among files.from (${froms[*]}); krew would not install it"

# --- the binary
if [ -z "$binary" ]; then
	target_dir="${CARGO_TARGET_DIR:-$root/target}"
	if [ -n "$explicit_target" ]; then
		(cd "$root" && "$cargo_cmd" build --release --locked -p kubectl-tfjob --target "$target") >&2
		binary="$target_dir/$target/release/$bin"
	else
		(cd "$root" && "$cargo_cmd" build --release --locked -p kubectl-tfjob) >&2
		binary="$target_dir/release/$bin"
	fi
fi
[ -f "$binary" ] || die "binary $binary does not exist (build it, or pass --binary)"

# --- stage, sorted, fixed modes and mtime
epoch="${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}"
case "$epoch" in '' | *[!0-9]*) die "SOURCE_DATE_EPOCH '$epoch' is not a number of seconds" ;; esac
stamp="$(date -u -d "@$epoch" +%Y%m%d%H%M.%S 2>/dev/null || date -u -r "$epoch" +%Y%m%d%H%M.%S)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
names=()
while IFS= read -r f; do names+=("$f"); done < <(printf '%s\n' "${froms[@]}" | LC_ALL=C sort -u)
for f in "${names[@]}"; do
	if [ "$f" = "$bin" ]; then src="$binary"; else src="$root/$f"; fi
	[ -f "$src" ] || die "krew-manifest.yaml ($os/$arch) lists files.from '$f' but $src does not exist"
	cp "$src" "$stage/$f"
	if [ "$f" = "$bin" ] || [ -x "$src" ]; then chmod 0755 "$stage/$f"; else chmod 0644 "$stage/$f"; fi
	TZ=UTC touch -t "$stamp" "$stage/$f"
done

mkdir -p "$out_dir"
out_dir="$(cd "$out_dir" && pwd -P)"
archive_name="kubectl-tfjob-$version-$target.$ext"
archive="$out_dir/$archive_name"
rm -f "$archive" "$archive.tmp"
if [ "$ext" = zip ]; then
	if command -v zip >/dev/null; then
		(cd "$stage" && zip -X -D -q -9 "$archive.tmp" "${names[@]}")
	elif command -v 7z >/dev/null; then
		(cd "$stage" && 7z a -tzip -bd "$archive.tmp" "${names[@]}" >/dev/null)
	else
		die "neither zip nor 7z is installed; one is needed for the $target archive"
	fi
else
	# krew's extractor takes regular files and directories only
	# (kubernetes-sigs/krew internal/download/downloader.go): ustar, no links, no pax headers.
	if tar --version 2>/dev/null | grep -q 'GNU tar'; then
		owner=(--owner=root:0 --group=root:0 --mtime="@$epoch")
	else
		owner=(--uid 0 --gid 0 --uname root --gname root)
	fi
	(cd "$stage" && COPYFILE_DISABLE=1 tar --format=ustar "${owner[@]}" -cf - "${names[@]}") | gzip -n -9 >"$archive.tmp"
fi
mv "$archive.tmp" "$archive"

if command -v sha256sum >/dev/null; then
	sum="$(sha256sum "$archive")"
else
	sum="$(shasum -a 256 "$archive")"
fi
sum="${sum%% *}"
printf '%s  %s\n' "$sum" "$archive_name" >"$archive.sha256"

# --- the manifest for this archive: only this platform's uri and sha256 lines change.
uri="file://$(printf '%s' "$archive" | sed -e 's/%/%25/g' -e 's/ /%20/g' -e 's/#/%23/g' -e 's/?/%3F/g' -e 's/"/%22/g')"
published_uri="$(value_of "$(printf '%s\n' "$block" | grep -m1 '^ *uri:' || true)")"
[ -n "$published_uri" ] || die "krew-manifest.yaml lines $first-$last ($os/$arch): no 'uri:'"
printf '%s\n' "$block" | grep -q '^ *sha256:' || die "krew-manifest.yaml lines $first-$last ($os/$arch): no 'sha256:'"
awk -v first="$first" -v last="$last" -v uri="$uri" -v sum="$sum" '
	NR >= first && NR <= last && /^ +uri:/ { match($0, /^ +/); print substr($0, 1, RLENGTH) "uri: \"" uri "\""; next }
	NR >= first && NR <= last && /^ +sha256:/ { match($0, /^ +/); print substr($0, 1, RLENGTH) "sha256: \"" sum "\""; next }
	{ print }
' "$manifest" >"$out_dir/krew-manifest.yaml.tmp"
mv "$out_dir/krew-manifest.yaml.tmp" "$out_dir/krew-manifest.yaml"

if [ "${published_uri##*/}" != "$archive_name" ]; then
	echo "note: releases publish ${published_uri##*/} for $os/$arch; this $target archive is for local installs" >&2
fi
size="$(wc -c <"$archive" | tr -d ' ')"
echo "packaged $archive ($size bytes, sha256 $sum)" >&2
echo "install:  kubectl krew install --manifest=$out_dir/krew-manifest.yaml --archive=$archive" >&2
printf '%s\n' "$archive"
