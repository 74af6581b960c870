#!/usr/bin/env bash
# Runs every libFuzzer harness ($BUILD/fuzz/fuzz_*, from tests/fuzz/fuzz_*.c)
# for FUZZ_TIME seconds each (10 in `make test`; `make fuzz` sets its own),
# seeded with the kept corpus tests/fuzz/corpus/NAME. New inputs go to a
# temporary directory, never into the corpus: libFuzzer writes only into the
# first directory it is given. Fails on any crash, leak, timeout or
# sanitizer report, and says how to reproduce it; prints executions per
# second. FUZZ_KEEP=1 keeps the new inputs and prints how to merge them.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
FUZZ_TIME=${FUZZ_TIME:-10}
FUZZ_KEEP=${FUZZ_KEEP:-0}

harnesses=()
for src in tests/fuzz/fuzz_*.c; do
	harnesses+=("$(basename "$src" .c)")
done
[ ${#harnesses[@]} -gt 0 ] || { echo "FAIL: no harness in tests/fuzz/"; exit 1; }
make -s BUILD="$BUILD" "${harnesses[@]/#/$BUILD/fuzz/}" || { echo "FAIL: building the harnesses"; exit 1; }

out=$(mktemp -d /tmp/xroce-fuzz.XXXXXX)
[ "$FUZZ_KEEP" = 1 ] || trap 'rm -rf "$out"' EXIT
failed=0
for name in "${harnesses[@]}"; do
	corpus=tests/fuzz/corpus/$name
	mkdir -p "$out/$name"
	log=$out/$name.log
	dirs=("$out/$name")
	[ -d "$corpus" ] && dirs+=("$corpus")
	"$BUILD/fuzz/$name" -max_total_time="$FUZZ_TIME" -timeout=20 -print_final_stats=1 \
		-artifact_prefix="$out/$name-" "${dirs[@]}" >"$log" 2>&1
	status=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	if [ $status -ne 0 ] || grep -qE 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$log"; then
		failed=1
		echo "FAIL $name (exit $status) after ${execs:-?} executions:"
		grep -E 'ERROR|runtime error|invariant broken|disagreement|SUMMARY|Test unit written' "$log" | head -20 | sed 's/^/    /'
		artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | head -1)
		if [ -n "$artifact" ]; then
			mkdir -p "$BUILD/fuzz/crashes"
			cp "$artifact" "$BUILD/fuzz/crashes/"
			echo "    reproduce: $BUILD/fuzz/$name $BUILD/fuzz/crashes/$(basename "$artifact")"
		fi
	else
		echo "ok   $name: ${execs:-?} executions in ${FUZZ_TIME}s, ${rate:-?} exec/s," \
			"$(find "$out/$name" -type f | wc -l) new inputs"
	fi
done
if [ "$FUZZ_KEEP" = 1 ]; then
	echo "New inputs are in $out/NAME. To keep the interesting ones in the corpus:"
	for name in "${harnesses[@]}"; do
		echo "    $BUILD/fuzz/$name -merge=1 tests/fuzz/corpus/$name $out/$name"
	done
fi
[ $failed -eq 0 ] && echo PASS
exit $failed
