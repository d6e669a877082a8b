# A corpus of malformed job files (tests/jobs/fuzz/: cases kept from fuzzing the job-file reader
# by hand and by machine): each one, run and dry-run, exits 2 within seconds with one screen of
# errors naming what is wrong, starts nothing, and never crashes or trips a sanitizer.
. "$(dirname "$0")/lib.sh"
CORPUS=$SRC/tests/jobs/fuzz
n=0
for f in "$CORPUS"/*.ini; do
    n=$((n + 1))
    name=$(basename "$f")
    for cmd in run env; do
        t0=$(date +%s%N)
        if [ "$cmd" = run ]; then run timeout 20 "$SHARDRUN" "$f"; else run timeout 20 "$SHARDRUN" env "$f"; fi
        ms=$((($(date +%s%N) - t0) / 1000000))
        expect_rc 2 "$name ($cmd)"
        expect_in "$(head -1 <<<"$err")" "shardrun: error: " "$name ($cmd): the first line is an error"
        [ "$(wc -l <<<"$err")" -le 24 ] && pass || fail "$name ($cmd): more than one screen of errors ($(wc -l <<<"$err") lines)"
        expect_not_in "$err" "Sanitizer" "$name ($cmd): no sanitizer report"
        expect_not_in "$err" "runtime error" "$name ($cmd): no undefined behaviour"
        expect_eq "$out" "" "$name ($cmd): nothing on stdout"
        [ "$ms" -lt 5000 ] && pass || fail "$name ($cmd): took $ms ms"
    done
done
[ "$n" -ge 20 ] && pass || fail "the corpus has $n files, expected at least 20"
done_checks
