#!/usr/bin/env bash
# Every program of Debian's perftest, ibverbs-utils and rdmacm-utils, and
# every module of python3-pyverbs, loads on xroce's libibverbs.so.1 with all
# its symbols bound at load time:
#   - each ELF object it loads (the program and its whole DT_NEEDED closure
#     as the loader resolves it under xroce-run: librdmacm, libmlx5, libefa,
#     ...) finds every IBVERBS_* symbol it imports exported by xroce's
#     library at that version, and libibverbs.so.1 resolves to xroce's;
#   - LD_BIND_NOW=1 xroce-run PROGRAM --help gets past the dynamic loader
#     (no "symbol lookup error", not its exit status 127), in a network
#     namespace of its own so that nothing it might start reaches a network;
#   - every pyverbs module imports under xroce-run with LD_BIND_NOW=1, and
#     the process has xroce's libibverbs.so.1 mapped, not Debian's.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
shim=$(readlink -f "$BUILD/ibverbs/libibverbs.so.1")
run=$BUILD/xroce-run
python=/usr/bin/python3

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_ibverbs_resolve "$shim" "$run" "$python"

elf_files() {
	local f
	dpkg -L "$@" | while read -r f; do
		[ -f "$f" ] && [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && echo "$f"
	done
}
programs=$(elf_files perftest ibverbs-utils rdmacm-utils | grep '/bin/') ||
	fail "perftest, ibverbs-utils or rdmacm-utils is not installed"
modules=$(elf_files python3-pyverbs | grep '\.so$') || fail "python3-pyverbs is not installed"
[ "$(wc -l <<<"$programs")" -ge 20 ] || fail "only $(wc -l <<<"$programs") programs found"
[ "$(wc -l <<<"$modules")" -ge 20 ] || fail "only $(wc -l <<<"$modules") pyverbs modules found"

nm -D --defined-only "$shim" | awk '$2 != "A" && $3 ~ /@/ { sub(/@@?/, "@", $3); print $3 }' |
	sort -u >"$logdir/exported"

# NAME@VERSION of each IBVERBS_* symbol an object imports.
ibverbs_imports() {
	objdump -T "$1" | awk '$3 == "*UND*" && $(NF-1) ~ /^\(IBVERBS_/ {
		v = $(NF-1); gsub(/[()]/, "", v); print $NF "@" v }'
}

objects=0 imports=0
for file in $programs $modules; do
	deps=$(LD_LIBRARY_PATH=$(dirname "$shim") ldd "$file" 2>&1) || fail "ldd $file: $deps"
	! grep -q 'not found' <<<"$deps" || fail "$file: a library is missing:"$'\n'"$deps"
	if grep -q 'libibverbs\.so\.1 =>' <<<"$deps"; then
		grep -q "libibverbs\.so\.1 => $shim " <<<"$deps" ||
			grep -q "libibverbs\.so\.1 => $(dirname "$shim")/libibverbs.so.1 " <<<"$deps" ||
			fail "$file: libibverbs.so.1 is not xroce's:"$'\n'"$deps"
	fi
	for obj in "$file" $(awk '$2 == "=>" && $3 ~ /^\// { print $3 }' <<<"$deps"); do
		ibverbs_imports "$obj"
	done | sort -u >"$logdir/imports"
	missing=$(comm -23 "$logdir/imports" "$logdir/exported")
	[ -z "$missing" ] || fail "$file (or a library it loads) needs what is not exported:"$'\n'"$missing"
	objects=$((objects + 1)) imports=$((imports + $(wc -l <"$logdir/imports")))
done
echo "ok   $objects programs and modules: all $imports IBVERBS_* imports of their load closures resolve"

# A symbol the loader cannot bind ends the process before main, with this.
loader_failed() {
	grep -qE 'symbol lookup error|undefined symbol|version `[^`]*'"'"' not found|cannot open shared object' "$1"
}

for prog in $programs; do
	LD_BIND_NOW=1 unshare -n timeout 10 "$run" "$prog" --help </dev/null >"$logdir/out" 2>&1
	status=$?
	if [ "$status" -eq 127 ] || loader_failed "$logdir/out"; then
		fail "$prog --help: the loader stopped it (status $status):"$'\n'"$(head -n 5 "$logdir/out")"
	fi
done
echo "ok   $(wc -l <<<"$programs") programs start under LD_BIND_NOW=1 xroce-run"

# Import every module by its dotted name; print the libibverbs the process mapped.
cat >"$logdir/import.py" <<'PY'
import importlib, sys
names = sys.argv[1:]
for name in names:
    importlib.import_module(name)
with open("/proc/self/maps") as maps:
    mapped = sorted({line.split()[-1] for line in maps if "libibverbs.so" in line})
print("imported", len(names))
print("mapped", " ".join(mapped))
PY
dist=$(dirname "$(dirname "$(grep -m1 '/pyverbs/' <<<"$modules")")")
names=$(sed -e "s|^$dist/||" -e 's|\.cpython-[^/]*\.so$||' -e 's|/|.|g' <<<"$modules")
LD_BIND_NOW=1 unshare -n timeout 60 "$run" "$python" "$logdir/import.py" $names >"$logdir/py" 2>&1 ||
	fail "importing pyverbs failed:"$'\n'"$(tail -n 5 "$logdir/py")"
grep -qx "imported $(wc -w <<<"$names")" "$logdir/py" || fail "not every module imported: $(cat "$logdir/py")"
grep -qx "mapped $shim" "$logdir/py" || fail "the modules did not run on xroce's library: $(cat "$logdir/py")"
echo "ok   $(wc -w <<<"$names") pyverbs modules import under LD_BIND_NOW=1 xroce-run, on $shim"
echo "test_ibverbs_resolve: PASS"
