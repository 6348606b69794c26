#!/usr/bin/env bash
# Prints the plain closing line of a `swift test` run, "tests: N passed, N failed", from its log
# (Swift Testing reports the total and each failed test; XCTest's lines are counted too).
log="$1"
total=$(grep -Eo 'Test run with [0-9]+ tests?' "$log" | tail -n1 | grep -Eo '[0-9]+' || true)
failed=$(grep -Ec '^✘ Test [^ ]+\(.*\) failed' "$log" || true)
xc_total=$(grep -Eo 'Executed [0-9]+ tests?, with [0-9]+ failures?' "$log" | tail -n1 | grep -Eo '[0-9]+' | head -n1 || true)
xc_failed=$(grep -Eo 'Executed [0-9]+ tests?, with [0-9]+ failures?' "$log" | tail -n1 | grep -Eo '[0-9]+' | tail -n1 || true)
total=$(( ${total:-0} + ${xc_total:-0} ))
failed=$(( ${failed:-0} + ${xc_failed:-0} ))
echo "tests: $(( total - failed )) passed, $failed failed"
