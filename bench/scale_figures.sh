#!/bin/bash
# Real agents on loopback at scale, two builds in the same run (docs/benchmarks.md, "Thousands of
# agents: before and after"): for each size the build BEFORE, then AFTER, each run capped.
#   rendezvous: N agents, one rank each running exec:/bin/sleep 1, the hang watchdog on
#               (hang_timeout = 300): bench/watchdog_agents.sh
#   shm, tcp:   N agents, one rank each of examples/hello over the shared-memory world or Gloo TCP:
#               bench/loopback_agents.sh
# Prints one line per run (wall time or "not ended", the load average when it started), then a
# table.  Run it on a quiet machine (uptime first).
#   bench/scale_figures.sh BEFORE_BUILD AFTER_BUILD [rdzv|shm|tcp ...]
set -u
A=${1:?usage: scale_figures.sh BEFORE_BUILD AFTER_BUILD [rdzv|shm|tcp ...]}
B=${2:?usage: scale_figures.sh BEFORE_BUILD AFTER_BUILD [rdzv|shm|tcp ...]}
shift 2
[ $# -gt 0 ] || set -- rdzv shm tcp
here=$(dirname "$0")
CAP_RDZV=${CAP_RDZV:-150}
CAP_HELLO=${CAP_HELLO:-150}
rows=()
# one SIZE KIND BUILD: prints the seconds, or ">CAP" / "failed"
one() {
    local kind=$1 n=$2 build=$3 out t load
    load=$(cut -d' ' -f1 /proc/loadavg)
    case $kind in
        rdzv) out=$(bash "$here/watchdog_agents.sh" "$build" "$n" 300 1 "$CAP_RDZV" 2>&1) ;;
        *) out=$(bash "$here/loopback_agents.sh" "$build" "$n" "$kind" "$CAP_HELLO" 2>&1) ;;
    esac
    local rc=$?
    echo "$out" | sed "s|^|  [$kind $n $(basename "$(dirname "$build")")] |" >&2
    if echo "$out" | grep -q 'not ended'; then
        t=">$([ "$kind" = rdzv ] && echo "$CAP_RDZV" || echo "$CAP_HELLO") s"
    elif [ "$rc" != 0 ]; then
        t="failed"
    else
        t=$(echo "$out" | grep -oE ': [0-9.]+ s' | tail -1 | grep -oE '[0-9.]+')
        t=$(printf '%.1f s' "$t")
    fi
    echo "$t (load $load)"
}
for kind in "$@"; do
    case $kind in
        rdzv) sizes="64 128 256 512 1024" ;;
        shm) sizes="64 128 256 512" ;;
        tcp) sizes="64 128 256" ;;
        *) echo "scale_figures.sh: '$kind' is not rdzv, shm or tcp" >&2; exit 2 ;;
    esac
    for n in $sizes; do
        before=$(one "$kind" "$n" "$A")
        sleep 3
        after=$(one "$kind" "$n" "$B")
        sleep 3
        rows+=("| $kind | $n | $before | $after |")
    done
done
echo "| what | agents | before | after |"
echo "|---|---:|---|---|"
printf '%s\n' "${rows[@]}"
