# Shared helpers of the integration tests: each test drives the real shardrun binary.
# Environment (set by ctest): SHARDRUN (the binary), BUILD (build dir), SRC (source dir).
set -u
: "${SHARDRUN:?}" "${BUILD:?}" "${SRC:?}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
checks=0
failed=0
# shardrun's own variables and launcher variables from the calling shell must not leak in
for v in $(env | sed -n 's/^\(SHARDRUN_[A-Z0-9_]*\|FSDP_[A-Z0-9_]*\|ACCELERATE_[A-Z0-9_]*\|SLURM_[A-Z0-9_]*\|OMPI_[A-Z0-9_]*\|PMI_[A-Z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK MASTER_ADDR MASTER_PORT OMP_NUM_THREADS

pass() { checks=$((checks + 1)); }
fail() { checks=$((checks + 1)); failed=$((failed + 1)); printf 'FAIL: %s\n' "$*"; }

# run CMD...: sets $out, $err, $rc
run() {
    "$@" >"$T/.out" 2>"$T/.err"
    rc=$?
    out=$(cat "$T/.out")
    err=$(cat "$T/.err")
}
expect_rc() { [ "$rc" -eq "$1" ] && pass || fail "$2: exit code $rc, expected $1; stderr: $err"; }
expect_eq() { [ "$1" == "$2" ] && pass || fail "$3: got [$1], expected [$2]"; }
# expect_in HAYSTACK NEEDLE WHAT
expect_in() { grep -qF -- "$2" <<<"$1" && pass || fail "$3: [$2] not found in: $1"; }
expect_not_in() { grep -qF -- "$2" <<<"$1" && fail "$3: [$2] unexpectedly in: $1" || pass; }
# expect_same_file GOT EXPECTED WHAT: byte-for-byte, with a diff on failure
expect_same_file() {
    if cmp -s "$1" "$2"; then pass; else fail "$3 differs (< got, > expected):"; diff "$1" "$2" | head -20; fi
}
job() { cat >"$T/$1"; }
done_checks() {
    echo "$(basename "$0"): $checks checks, $failed failed"
    [ "$failed" -eq 0 ]
}
# A port P such that P and P+1 (the rendezvous store's default across nodes) are free now.
free_port_pair() {
    /usr/bin/python3 - <<'PY'
import random, socket
for _ in range(200):
    p = random.randint(20000, 60000)
    try:
        for q in (p, p + 1):
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("", q)); s.close()
        print(p); break
    except OSError:
        pass
PY
}
