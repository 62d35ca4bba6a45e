# analyzer.awk: gcc -fanalyzer's plain output (LC_ALL=C) as one line per
# report, "FILE FUNCTION: MESSAGE [OPTION]", without line numbers, so that
# tests/lib/analyzer-known survives edits elsewhere in a file.  The
# "In function" line comes once before a function's reports.
/: In function '/ { split($0, q, "'"); fn = q[2]; next }
/: warning: / {
	file = $0
	sub(/:.*/, "", file)
	msg = $0
	sub(/^[^ ]*: warning: /, "", msg)
	print file " " fn ": " msg
}
