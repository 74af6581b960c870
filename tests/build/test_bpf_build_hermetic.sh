#!/usr/bin/env bash
# The XDP program builds from kernel UAPI, libbpf and clang's own headers
# only. A fresh Debian machine has no 32-bit glibc stubs (gnu/stubs-32.h,
# from libc6-dev-i386), and glibc's headers ask for them under
# `clang -target bpf`: any glibc header reaching a BPF object breaks the
# first build there. So: build the BPF objects in a private mount namespace
# where that file is hidden, and check the compiler's dependency list names
# no header outside the allowed folders.
set -u
cd "$(dirname "$0")/../.."
repo=$(pwd)
multiarch_gnu=/usr/include/$(uname -m)-linux-gnu/gnu

fail() {
	echo "FAIL: $*"
	exit 1
}

[ "$(id -u)" -eq 0 ] || fail "needs root (unshare -m, bind mount)"
[ -d "$multiarch_gnu" ] || fail "$multiarch_gnu is missing (libc6-dev)"

tmp=$(mktemp -d /tmp/xroce-bpf-hermetic.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/gnu" "$tmp/build"
cp -a "$multiarch_gnu/." "$tmp/gnu/"
rm -f "$tmp/gnu/stubs-32.h"

objs=()
for src in bpf/*.bpf.c; do
	name=$(basename "$src" .bpf.c)
	objs+=("$tmp/build/bpf/$name.bpf.o")
done

# The build runs in its own mount namespace: the bind mount dies with it.
if ! unshare -m --propagation private bash -c '
	mount --bind "$1" "$2" || exit 90
	[ ! -e "$2/stubs-32.h" ] || exit 91
	shift 2
	make -s -C "$0" "$@"
' "$repo" "$tmp/gnu" "$multiarch_gnu" BUILD="$tmp/build" "${objs[@]}" >"$tmp/make.log" 2>&1; then
	cat "$tmp/make.log"
	fail "BPF build with gnu/stubs-32.h hidden"
fi
echo "ok: ${#objs[@]} BPF object(s) built with gnu/stubs-32.h hidden"

clang_inc=$(clang -print-resource-dir)/include
allowed="^($repo/)?(bpf|include/xroce)/|^/usr/include/(linux|asm-generic|bpf|xdp)/|^/usr/include/$(uname -m)-linux-gnu/asm/|^$clang_inc/"
for obj in "${objs[@]}"; do
	[ -f "$obj.d" ] || fail "no dependency file $obj.d"
	bad=$(sed 's/^[^:]*://; s/\\$//' "$obj.d" | tr ' ' '\n' | sed '/^$/d' |
		while read -r dep; do
			path=$(realpath -m "$dep")
			[[ $dep =~ $allowed || $path =~ $allowed ]] || echo "$dep"
		done)
	[ -z "$bad" ] || fail "$(basename "$obj") includes headers outside kernel UAPI/libbpf/clang: $bad"
	echo "ok: $(basename "$obj") depends on $(wc -w <"$obj.d") files, none from glibc"
done
echo "PASS"
