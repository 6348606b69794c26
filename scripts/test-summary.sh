#!/usr/bin/env bash
# Prints the end of a `swift test` run from its log: each failed test with the issues it recorded
# (so a CI log's tail says what failed), then one plain line, "tests: N passed, N failed".
# Swift Testing reports the total and each failed test; XCTest's lines are counted too.
log="$1"
total=$(grep -Eo 'Test run with [0-9]+ tests?' "$log" | tail -n1 | grep -Eo '[0-9]+' || true)
# A parameterized test's line reads "✘ Test name(_:) with 3 test cases failed after …".
failed=$(grep -Ec '^✘ Test [^ ]+\(.*\)( with [0-9]+ test cases?)? failed' "$log" || true)
xc_total=$(grep -Eo 'Executed [0-9]+ tests?, with [0-9]+ failures?' "$log" | tail -n1 | grep -Eo '[0-9]+' | head -n1 || true)
xc_failed=$(grep -Eo 'Executed [0-9]+ tests?, with [0-9]+ failures?' "$log" | tail -n1 | grep -Eo '[0-9]+' | tail -n1 || true)
total=$(( ${total:-0} + ${xc_total:-0} ))
failed=$(( ${failed:-0} + ${xc_failed:-0} ))
if (( failed > 0 )); then
  echo "failures:"
  # The issue lines (with file, line and message) and the lines that follow them up to the next
  # event, then the failed tests themselves; cut so that a long dump cannot hide the count.
  awk '/^✘ Test .* recorded an issue/ { show = 1; print; next }
       /^[◇✔✘↳􀟈􁁛]/ && !/^↳/ { show = 0 }
       show { print }' "$log" | head -n 150
  grep -E '^✘ Test [^ ]+\(.*\)( with [0-9]+ test cases?)? failed|error: .*: (failed|XCTAssert)' "$log" | head -n 40
fi
echo "tests: $(( total - failed )) passed, $failed failed"
