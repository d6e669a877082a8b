# Shared by what starts many agents on this host (bench/loopback_agents.sh, watchdog_agents.sh, and
# the tests through tests/cli/lib.sh): a master port, and the end of what they started.

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
