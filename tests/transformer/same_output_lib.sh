# Comparing a C tool's output with a Python reference's, line for line (tests/gpt2/tokenizer.sh,
# tests/bloom/tokenizer.sh), sourced after they set T (a scratch folder) and the counters `failed`,
# `files` and one per UNIT they count.

# same LABEL UNIT C-COMMAND... -- PYTHON-COMMAND...: both outputs identical, counted in UNITs
same() {
    local label=$1 unit=$2 n
    shift 2
    local c=() py=()
    while [ "$1" != -- ]; do c+=("$1"); shift; done
    shift
    py=("$@")
    files=$((files + 1))
    if ! "${c[@]}" >"$T/c.out" 2>"$T/c.err"; then
        failed=$((failed + 1)); echo "FAIL: $label: ${c[0]} failed: $(cat "$T/c.err")"; return
    fi
    if ! "${py[@]}" >"$T/py.out"; then
        failed=$((failed + 1)); echo "FAIL: $label: the reference failed"; return
    fi
    n=$(wc -l <"$T/py.out")
    if cmp -s "$T/c.out" "$T/py.out"; then
        eval "$unit=\$((\$$unit + n))"
        printf '  %-34s %7d %s, identical\n' "$label" "$n" "$unit"
    else
        failed=$((failed + 1))
        echo "FAIL: $label: the $unit differ (< C, > Python), first differences:"
        diff "$T/c.out" "$T/py.out" | head -10
    fi
}
