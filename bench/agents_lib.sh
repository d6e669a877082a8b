# Shared by what starts many agents on this host (bench/loopback_agents.sh, watchdog_agents.sh, the
# elastic benchmarks, and the tests through tests/cli/lib.sh): a master port, the end of what they
# started, and the elastic benchmarks' command line.

# free_port_pair: a port P with P + 1 (the rendezvous store's) free too (a free port's neighbour
# may not be)
free_port_pair() {
    /usr/bin/python3 -c '
import random, socket
for _ in range(200):
    p = random.randint(20000, 60000)
    try:
        for q in (p, p + 1):
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("", q)); s.close()
        print(p); break
    except OSError:
        pass'
}

# kill_agents PID...: each agent still running, and its children's process groups (its workers),
# with SIGKILL
kill_agents() {
    local p c
    for p in "$@"; do
        kill -0 "$p" 2>/dev/null || continue
        for c in $(pgrep -P "$p"); do kill -KILL -- "-$c" "$c" 2>/dev/null; done
        kill -KILL "$p" 2>/dev/null
    done
}

# bench_args USAGE BUILD_DIR [-j JOB.ini] [-r RUNS] [-- MORE SHARDRUN ARGS]: the elastic benchmarks'
# command line (bench/elastic_latency.sh, elastic_etcd.sh) into build and job (absolute: the
# benchmarks work in a temporary folder; the job by default the GPT-2 demo's, examples/gpt2/fsdp_cpu.ini),
# runs (default 3) and the array extra; USAGE and exit 2 for anything else, or an unbuilt BUILD_DIR
bench_args() {
    local usage=$1
    shift
    [ $# -ge 1 ] || { echo "usage: $usage" >&2; exit 2; }
    build=$(cd "$1" 2>/dev/null && pwd) || { echo "$1: no such build folder; usage: $usage" >&2; exit 2; }
    shift
    job=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/examples/gpt2/fsdp_cpu.ini
    runs=3
    extra=()
    while [ $# -gt 0 ]; do
        case $1 in
        -j | -r)
            [ $# -ge 2 ] || { echo "$1 needs a value; usage: $usage" >&2; exit 2; }
            if [ "$1" = -j ]; then
                [ -f "$2" ] || { echo "-j $2: no such job file; usage: $usage" >&2; exit 2; }
                job=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
            else
                runs=$2
            fi
            shift 2
            ;;
        --) shift; extra=("$@"); break ;;
        *) echo "unknown argument $1; usage: $usage" >&2; exit 2 ;;
        esac
    done
    [[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "-r $runs: a number of runs, 1 or more; usage: $usage" >&2; exit 2; }
    [ -x "$build/shardrun" ] || { echo "build $build first (no $build/shardrun); usage: $usage" >&2; exit 2; }
}
