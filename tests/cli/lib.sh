# Shared helpers of the integration tests: each test drives the real shardrun binary.
# Environment (ctest sets all three; by hand they default as shown):
#   SRC       the source tree          default: the repository this script lives in
#   BUILD     the build tree           default: $SRC/build
#   SHARDRUN  the shardrun executable  default: $BUILD/shardrun
# so `bash tests/fsdp/parity.sh` runs from a checkout with build/, and
# `BUILD=/tmp/b bash tests/cli/errors.sh` against another build tree (CONTRIBUTING.md).
set -u
SRC=${SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${BUILD:-$SRC/build}
SHARDRUN=${SHARDRUN:-$BUILD/shardrun}
# absolute: the tests write job files into a temporary folder, and a relative task path in a job
# file is read relative to that file
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
case $SHARDRUN in /*) ;; *) SHARDRUN=$PWD/$SHARDRUN ;; esac
if [ ! -x "$SHARDRUN" ]; then
    echo "FAIL: no shardrun executable at $SHARDRUN; build first (cmake -S . -B build && cmake --build build)," \
         "or set BUILD (the build folder) or SHARDRUN (the executable)" >&2
    exit 1
fi
# The sanitizer build (SHARDRUN_SANITIZE=ON in the build's cache) gets what ctest gives it there,
# unless the caller set it: SANITIZED=1 and ASAN_OPTIONS (a crashing test task must die by its
# own signal, which the crash tests check).
if [ -z "${SANITIZED:-}" ]; then
    SANITIZED=0
    grep -qs '^SHARDRUN_SANITIZE:BOOL=ON$' "$BUILD/CMakeCache.txt" && SANITIZED=1
fi
[ "$SANITIZED" = 1 ] && [ -z "${ASAN_OPTIONS:-}" ] && export ASAN_OPTIONS=handle_segv=0:handle_abort=0:detect_leaks=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
checks=0
failed=0
# shardrun's own variables and launcher variables from the calling shell must not leak in
for v in $(env | sed -n 's/^\(SHARDRUN_[A-Z0-9_]*\|FSDP_[A-Z0-9_]*\|ACCELERATE_[A-Z0-9_]*\|SLURM_[A-Z0-9_]*\|OMPI_[A-Z0-9_]*\|PMI_[A-Z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK MASTER_ADDR MASTER_PORT OMP_NUM_THREADS
# OpenMP threads that wait by sleeping, not spinning: two tests run side by side on 2 cores, and two
# ranks' spinning threads there made a step take seconds (two single-rank GPT-2 runs started together
# took 9 s each instead of 0.3 s); alone, the GPT-2 demo takes the same time either way (6.5 s)
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# TEST_TORCH_TRANSPORT=shm|tcp runs every test's gloo groups over that transport ([torch] transport),
# unless a test sets it itself: `TEST_TORCH_TRANSPORT=tcp ctest --test-dir build` checks the suite on Gloo's TCP
[ -n "${TEST_TORCH_TRANSPORT:-}" ] && export SHARDRUN_TORCH_TRANSPORT=$TEST_TORCH_TRANSPORT

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
# wait_for FILE TEXT [SECONDS]: until FILE holds TEXT (0), or the time is up (1)
wait_for() {
    local i
    for i in $(seq 1 $((${3:-60} * 50))); do
        grep -qF -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.02
    done
    return 1
}
done_checks() {
    echo "$(basename "$0"): $checks checks, $failed failed"
    [ "$failed" -eq 0 ]
}
# worker_of AGENT LOCAL_RANK: the pid of the agent's worker of that local rank: the agent forks them
# in local-rank order, each the leader of its own process group (its guardian, forked first, is none)
worker_of() {
    local c
    for c in $(pgrep -P "$1"); do
        awk -v p="$c" '{ sub(/.*\) /, ""); if ($3 == p) print $20, p }' "/proc/$c/stat" 2>/dev/null
    done | sort -k1,1n -k2,2n | awk -v i="$2" 'NR == i + 1 { print $2 }'
}
# free_port_pair (a port P with P+1, the rendezvous store's default across nodes, free too) and
# kill_agents PID... (each agent still running and its workers' process groups, with SIGKILL)
. "$SRC/bench/agents_lib.sh"
