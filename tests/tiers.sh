#!/usr/bin/env bash
# Runs the test suite of one build tree tier by tier (cmake/testing.cmake: each test's tier is its
# ctest label), then prints the wall time of each tier and the 15 slowest tests.  Every tier runs
# even when an earlier one failed, so one run reports every failure; the exit status is ctest's
# worst (0: every test of every tier passed).
#   bash tests/tiers.sh BUILD [TIER...]      default: quick behaviour reference system
#   bash tests/tiers.sh build quick          the quick tier, after every change (CONTRIBUTING.md)
# Tests run two at a time (SR_TEST_JOBS, default 2); those registered SERIAL run alone.
set -u
if [ $# -lt 1 ] || [ ! -f "$1/CTestTestfile.cmake" ]; then
    echo "usage: bash tests/tiers.sh BUILD [TIER...]: BUILD must be a configured build tree (cmake -S . -B build)" >&2
    exit 2
fi
build=$1
shift
[ $# -gt 0 ] || set -- quick behaviour reference system
jobs=${SR_TEST_JOBS:-2}
# a fresh build tree gets the suite's measured costs (tests/test_costs.txt, its comments left out), so
# that ctest starts each pass's longest tests first; ctest updates them after each run
costs=$build/Testing/Temporary/CTestCostData.txt
if [ ! -s "$costs" ]; then
    mkdir -p "$(dirname "$costs")" && grep -v '^#' "$(dirname "$0")/test_costs.txt" >"$costs"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
summary=()
t_all=$(date +%s%N)
for tier in "$@"; do
    case $tier in quick | behaviour | reference | system) ;; *)
        echo "tests/tiers.sh: '$tier' is not a tier: quick, behaviour, reference or system" >&2
        exit 2
        ;;
    esac
    n=$(ctest --test-dir "$build" -N -L "^$tier\$" | sed -n 's/^Total Tests: //p')
    echo "==== tier $tier: $n tests ($build)"
    t0=$(date +%s%N)
    # first the tier's busy tests, then its deadline tests (cmake/testing.cmake, DEADLINE) in a pass
    # of their own, beside each other only
    rc=0
    for pass in "-LE ^deadline\$" "-L ^deadline\$"; do
        # shellcheck disable=SC2086 # the pass's two words
        [ "$(ctest --test-dir "$build" -N -L "^$tier\$" $pass | sed -n 's/^Total Tests: //p')" -gt 0 ] || continue
        # shellcheck disable=SC2086
        ctest --test-dir "$build" -j"$jobs" -L "^$tier\$" $pass --output-on-failure 2>&1 | tee -a "$log"
        r=${PIPESTATUS[0]}
        [ "$r" -eq 0 ] || rc=$r
    done
    wall=$((($(date +%s%N) - t0) / 1000000))
    [ "$rc" -eq 0 ] || status=$rc
    summary+=("$(printf '%-10s %3s tests  %7.1f s  %s' "$tier" "$n" "$(awk -v ms="$wall" 'BEGIN { print ms / 1000 }')" \
        "$([ "$rc" -eq 0 ] && echo passed || echo "FAILED (ctest exit $rc)")")")
done
total=$((($(date +%s%N) - t_all) / 1000000))
echo
echo "==== the 15 slowest tests ($build)"
# ctest's result lines: "  12/58 Test  #31: cluster ..........   Passed    0.89 sec"
sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) .* \([0-9.]*\) sec$/\2 \1/p' "$log" | sort -rn | head -15 |
    awk '{ printf "  %8.2f s  %s\n", $1, $2 }'
echo "==== wall time per tier ($build)"
printf '  %s\n' "${summary[@]}"
printf '  %-10s           %7.1f s\n' all "$(awk -v ms="$total" 'BEGIN { print ms / 1000 }')"
exit "$status"
