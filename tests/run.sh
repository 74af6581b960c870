#!/usr/bin/env bash
# Runs every test: the compiled unit tests ($BUILD/tests/test_*) and the
# shell tests (tests/*/test_*.sh), each under a time limit. Ends with the
# line "N passed, N failed"; exits non-zero when anything failed.
# TESTS='pattern' runs only the tests whose name matches the pattern.
set -u
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
# The golden captures lie in shared/ next to the repository; a clone made
# elsewhere (CI clones into a temporary directory) finds them next to the
# repository it was cloned from.
if [ -z "${XROCE_VECTORS:-}" ] && [ ! -d ../shared/vectors/rxe ]; then
	origin=$(git config --get remote.origin.url 2>/dev/null || true)
	if [ -n "$origin" ] && [ -d "$origin/../shared/vectors/rxe" ]; then
		export XROCE_VECTORS
		XROCE_VECTORS=$(cd "$origin/../shared/vectors/rxe" && pwd)
	fi
fi
pattern=${TESTS:-.}
limit=${TEST_TIMEOUT:-600}
passed=0 failed=0 failures=()
logdir=$(mktemp -d /tmp/xroce-tests.XXXXXX)

run_one() {
	local name=$1; shift
	local log="$logdir/$name.log" start=$SECONDS
	if timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1; then
		passed=$((passed + 1))
		printf 'PASS %-40s %3ds\n' "$name" $((SECONDS - start))
	else
		failed=$((failed + 1)); failures+=("$name")
		printf 'FAIL %-40s %3ds\n' "$name" $((SECONDS - start))
		tail -n 30 "$log" | sed 's/^/    | /'
	fi
}

for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	[[ $name =~ $pattern ]] || continue
	run_one "$name" "$t"
done
for t in tests/*/test_*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	[[ $name =~ $pattern ]] || continue
	run_one "$name" bash "$t"
done

[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]} (logs in $logdir)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
