#!/bin/sh
# report.sh SECONDS HARNESS...: fuzzes each harness for SECONDS from its
# committed corpus with a build instrumented for coverage (no sanitizers:
# `make fuzz` runs those), and prints a line each: executions, the
# corpus it ended with, and the line coverage llvm-cov measures of the
# lib files the harness links (every input it ran, the corpus's and the
# ones it made): of the parser's own file (the first it links) and of all
# of them.  Run by `make fuzz-report` from the project's root.
set -eu
secs=$1
shift
out=${BUILD:-build}/fuzz-cov
mkdir -p "$out"
printf '%-10s %12s %8s %14s %8s\n' harness executions corpus "own file" linked
for h in "$@"; do
	libs=$(make -s --no-print-directory print-fuzz-lib NAME="$h")
	ldlibs=$(make -s --no-print-directory print-fuzz-ldlibs NAME="$h")
	# shellcheck disable=SC2086 # lists of files and flags
	clang -std=c17 -D_GNU_SOURCE -Ilib -g -O1 -fsanitize=fuzzer \
		-fprofile-instr-generate -fcoverage-mapping \
		-o "$out/$h" "tests/fuzz/$h.c" $libs $ldlibs -lz
	rm -rf "$out/$h.corpus" "$out/$h".prof*
	mkdir -p "$out/$h.corpus"
	LLVM_PROFILE_FILE="$out/$h.profraw" "$out/$h" -seed=1 \
		-max_total_time="$secs" -artifact_prefix="$out/$h-" \
		"$out/$h.corpus" "tests/fuzz/corpus/$h" >"$out/$h.log" 2>&1
	runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$out/$h.log")
	n=$(find "$out/$h.corpus" "tests/fuzz/corpus/$h" -type f | wc -l)
	llvm-profdata merge -o "$out/$h.profdata" "$out/$h.profraw"
	# shellcheck disable=SC2086
	all=$(llvm-cov report "$out/$h" -instr-profile="$out/$h.profdata" \
		$libs | awk '$1 == "TOTAL" { print $(NF - 3) }')
	own=${libs%% *}
	mine=$(llvm-cov report "$out/$h" -instr-profile="$out/$h.profdata" \
		"$own" | awk '$1 == "TOTAL" { print $(NF - 3) }')
	printf '%-10s %12s %8s %14s %8s\n' "$h" "$runs" "$n" \
		"${own#lib/} $mine" "$all"
done
