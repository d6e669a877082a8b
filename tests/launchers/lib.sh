# Shared helpers of the launcher tests: shardrun started by real launchers (Open MPI's mpirun,
# MPICH's mpiexec.hydra, Slurm's srun and sbatch, torchrun), as a user would start it.
# Everything of tests/cli/lib.sh (SRC, BUILD, SHARDRUN, $T, run, expect_*, pass, fail, done_checks),
# plus:
#   at_exit CMD           run CMD (a string) at exit, before $T is removed; last registered runs first
#   count_lines PATTERN [FILE]   lines matching the extended regex PATTERN in FILE (default: $out)
#   results_lists [FILE]  how many JSON results lists FILE (default: $out) holds: lines that are
#                         exactly "["
#   results_ranks FILE    the "rank" values of every results list in FILE, sorted, as JSON
#                         ([0, 1]); FILE is a JSON file, or a run's output holding lists
#   results_field FILE RANK KEY   KEY of RANK's entry in FILE's results ("" when absent)
#   expect_world OUT WHAT N       OUT (a run's stdout) is one world of N ranks: exactly N hello
#                         lines "hello from rank R of N", each rank once, one results list with
#                         ranks 0..N-1 once each
#   free_port             a TCP port free now
#   ompi N CMD...         Open MPI: mpirun --allow-run-as-root --oversubscribe -np N CMD...
#   mpich N CMD...        MPICH: mpiexec.hydra -n N CMD...
#                         (OMPI_MPIRUN, MPICH_MPIEXEC: the executables, mpirun.openmpi and
#                         mpiexec.hydra by default: Debian's mpirun may point at either MPI)
#   need_command CMD PKG  fails the test, naming the Debian package, when CMD is missing
#   now_ns, elapsed_ms START_NS   a clock for time limits
#   LAUNCH_TIMEOUT        seconds a launcher call may take before it is killed (default 60): a hang
#                         is a failure, never a stuck CI; 124 is then the exit code
. "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"
LAUNCH_TIMEOUT=${LAUNCH_TIMEOUT:-60}
# The launchers write their session folders under TMPDIR: keep them in $T
export TMPDIR=$T

_at_exit_cmds=()
at_exit() { _at_exit_cmds=("$1" "${_at_exit_cmds[@]}"); }
_launchers_exit() {
    local c
    for c in "${_at_exit_cmds[@]}"; do eval "$c"; done
    rm -rf "$T"
}
trap _launchers_exit EXIT
# interrupted (ctest's timeout sends SIGTERM): clean up too
trap 'exit 143' TERM
trap 'exit 130' INT

count_lines() {
    if [ $# -ge 2 ]; then grep -cE -- "$1" "$2"; else grep -cE -- "$1" <<<"$out"; fi
}
results_lists() {
    if [ $# -ge 1 ]; then grep -cx '\[' "$1"; else grep -cx '\[' <<<"$out"; fi
}
# Every list in FILE: the file itself when it is JSON, else each block from a line "[" to the
# next line "]".
_results_py='
import json, sys
def lists(path):
    text = open(path).read()
    try:
        v = json.loads(text)
        return [v] if isinstance(v, list) else []
    except ValueError:
        pass
    out, cur = [], None
    for line in text.splitlines():
        if line == "[":
            cur = [line]
        elif cur is not None:
            cur.append(line)
            if line == "]":
                try:
                    out.append(json.loads("\n".join(cur)))
                except ValueError:
                    out.append(["unparsable list"])
                cur = None
    return out
'
results_ranks() {
    /usr/bin/python3 -c "$_results_py"'
entries = [e for l in lists(sys.argv[1]) for e in l]
print(json.dumps(sorted((e.get("rank") if isinstance(e, dict) else e) for e in entries) if all(isinstance(e, dict) for e in entries) else [str(e) for e in entries]))
' "$1" 2>&1
}
results_field() {
    /usr/bin/python3 -c "$_results_py"'
for l in lists(sys.argv[1]):
    for e in l:
        if isinstance(e, dict) and e.get("rank") == int(sys.argv[2]) and sys.argv[3] in e:
            print(repr(e[sys.argv[3]]) if isinstance(e[sys.argv[3]], float) else e[sys.argv[3]])
            sys.exit(0)
' "$1" "$2" "$3" 2>&1
}
expect_world() {
    local o=$1 what=$2 n=$3 r want
    printf '%s\n' "$o" >"$T/.world"
    expect_eq "$(count_lines "hello from rank [0-9]+ of [0-9]+" "$T/.world")" "$n" "$what: hello lines (one per rank)"
    expect_eq "$(count_lines "hello from rank [0-9]+ of $n " "$T/.world")" "$n" "$what: every rank is in a world of $n"
    for r in $(seq 0 $((n - 1))); do
        expect_eq "$(count_lines "hello from rank $r of " "$T/.world")" 1 "$what: rank $r says hello exactly once"
    done
    expect_eq "$(results_lists "$T/.world")" 1 "$what: one results list on stdout"
    want=$(/usr/bin/python3 -c "import json,sys; print(json.dumps(list(range(int(sys.argv[1])))))" "$n")
    expect_eq "$(results_ranks "$T/.world")" "$want" "$what: the results list holds ranks 0-$((n - 1)) once each"
}
free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1]); s.close()'
}

# The launchers, by their own names (mpirun and mpiexec may point at either MPI: Debian's
# alternatives)
OMPI_MPIRUN=${OMPI_MPIRUN:-$(command -v mpirun.openmpi || command -v orterun || echo mpirun.openmpi)}
MPICH_MPIEXEC=${MPICH_MPIEXEC:-$(command -v mpiexec.hydra || echo mpiexec.hydra)}
# Open MPI refuses root unless told (the flag; the variables for the versions that want them)
ompi() {
    local n=$1
    shift
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        timeout -k 5 "$LAUNCH_TIMEOUT" "$OMPI_MPIRUN" --allow-run-as-root --oversubscribe -np "$n" "$@"
}
mpich() {
    local n=$1
    shift
    timeout -k 5 "$LAUNCH_TIMEOUT" "$MPICH_MPIEXEC" -n "$n" "$@"
}
# need_command CMD PACKAGE: fails the test (never skips) when CMD is missing
need_command() {
    command -v "$1" >/dev/null 2>&1 && return 0
    fail "$1 not found: install the Debian package $2 (apt-get install -y $2)"
    done_checks
    exit 1
}
# elapsed_ms START_NS
now_ns() { date +%s%N; }
elapsed_ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
