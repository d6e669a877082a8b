# A single-node Slurm cluster on loopback, entirely inside a temporary folder, for the launcher
# tests. Source this file, then:
#   slurm_start    starts munged, slurmctld and slurmd (each its own process, pids recorded), exports
#                  SLURM_CONF (srun, sbatch, sinfo, scontrol then talk to this cluster only) and
#                  waits until the node is idle; returns non-zero, with the daemons' logs on stderr,
#                  when the cluster does not come up within TEST_SLURM_TIMEOUT seconds (default 30)
#   slurm_stop     cancels this cluster's jobs, stops exactly the recorded pids and removes the folder
#   slurm_logs     prints the daemons' logs (for a failure message)
# Nothing outside the folder is written or used: its own munge key, munged socket, pid, log and
# seed files; its own slurm.conf, plugstack.conf, state, spool, pid and log files; free ports. Not
# /etc/slurm, /etc/munge, /run/munge, systemd, nor any process this file did not start. Works from a
# freshly installed, unconfigured Debian (slurm-wlm, munge), as root (SlurmUser=root).
# Call slurm_start in the test's own shell (not in $(...)): slurm_stop waits for its children.
# Variables it sets: SLURM_DIR (the folder), SLURM_NODE (this host's short name, the node's name),
# SLURM_PIDS (munged slurmctld slurmd), SLURM_CONF (exported).

# _slurm_free_port: a TCP port free on every address now
_slurm_free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1]); s.close()'
}

slurm_logs() {
    local f
    for f in munged slurmctld slurmd; do
        # the daemon's log file; what it wrote to stdout/stderr when it never got that far
        f=$f.log
        [ -s "$SLURM_DIR/log/$f" ] || f=${f%.log}.out
        [ -s "$SLURM_DIR/log/$f" ] || continue
        echo "----- $SLURM_DIR/log/$f (last 40 lines) -----"
        tail -n 40 "$SLURM_DIR/log/$f"
    done
}

# _slurm_alive PID: the process exists and is not a zombie
_slurm_alive() {
    [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

slurm_start() {
    local deadline state ctl_port d_port munge_sock bin cpus
    SLURM_PIDS=""
    for bin in munged slurmctld slurmd srun sbatch sinfo scontrol scancel squeue; do
        if ! command -v "$bin" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$bin" ]; then
            echo "slurm_start: $bin not found: install the Debian packages slurm-wlm and munge" >&2
            return 1
        fi
    done
    SLURM_DIR=$(mktemp -d /tmp/shardrun-slurm.XXXXXX) || return 1
    # munged wants its socket's folders searchable by all and writable only by their owner
    chmod 755 "$SLURM_DIR"
    mkdir -m 755 "$SLURM_DIR/munge" "$SLURM_DIR/log" "$SLURM_DIR/run" "$SLURM_DIR/state" "$SLURM_DIR/spool"
    SLURM_NODE=$(hostname -s)

    # munge: a fresh key, a daemon of our own on its own socket
    munge_sock=$SLURM_DIR/munge/munge.socket
    head -c 1024 /dev/urandom >"$SLURM_DIR/munge/munge.key"
    chmod 400 "$SLURM_DIR/munge/munge.key"
    PATH=$PATH:/usr/sbin munged --foreground --socket="$munge_sock" --key-file="$SLURM_DIR/munge/munge.key" \
        --pid-file="$SLURM_DIR/munge/munged.pid" --log-file="$SLURM_DIR/log/munged.log" \
        --seed-file="$SLURM_DIR/munge/munged.seed" >"$SLURM_DIR/log/munged.out" 2>&1 &
    SLURM_PIDS=$!
    export MUNGE_SOCKET=$munge_sock # munge's own clients (munge, unmunge); Slurm reads AuthInfo below
    deadline=$((SECONDS + ${TEST_SLURM_TIMEOUT:-30}))
    while [ ! -S "$munge_sock" ]; do
        if ! _slurm_alive "${SLURM_PIDS%% *}" || [ "$SECONDS" -ge "$deadline" ]; then
            echo "slurm_start: munged did not start (socket $munge_sock)" >&2
            slurm_logs >&2
            slurm_stop
            return 1
        fi
        sleep 0.1
    done

    ctl_port=$(_slurm_free_port)
    d_port=$(_slurm_free_port)
    while [ "$d_port" = "$ctl_port" ]; do d_port=$(_slurm_free_port); done
    # this machine's CPUs, at least 2 (the tests start 2 tasks on the node; config_overrides keeps
    # a node with fewer from being drained)
    cpus=$(nproc)
    [ "$cpus" -ge 2 ] || cpus=2
    : >"$SLURM_DIR/plugstack.conf" # no SPANK plugins (the default would be next to slurm.conf anyway)
    cat >"$SLURM_DIR/slurm.conf" <<EOF
# written by tests/launchers/slurm_cluster.sh: a throwaway single-node cluster on loopback
ClusterName=shardruntest
SlurmctldHost=$SLURM_NODE(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_sock
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd-%n.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$SLURM_DIR/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MailProg=/bin/true
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=60
KillWait=5
Waittime=0
SlurmdParameters=config_overrides
NodeName=$SLURM_NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=100 State=UNKNOWN
PartitionName=debug Nodes=$SLURM_NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    export SLURM_CONF=$SLURM_DIR/slurm.conf

    PATH=$PATH:/usr/sbin slurmctld -D -c -f "$SLURM_CONF" -L "$SLURM_DIR/log/slurmctld.log" \
        >"$SLURM_DIR/log/slurmctld.out" 2>&1 &
    SLURM_PIDS="$SLURM_PIDS $!"
    PATH=$PATH:/usr/sbin slurmd -D -f "$SLURM_CONF" -N "$SLURM_NODE" -L "$SLURM_DIR/log/slurmd.log" \
        >"$SLURM_DIR/log/slurmd.out" 2>&1 &
    SLURM_PIDS="$SLURM_PIDS $!"

    # wait until the controller answers and the node is idle
    state=""
    while :; do
        state=$(sinfo -h -N -n "$SLURM_NODE" -o '%T' 2>/dev/null)
        [ "$state" = idle ] && break
        local p name dead=""
        set -- munged slurmctld slurmd
        for p in $SLURM_PIDS; do
            name=$1
            shift
            _slurm_alive "$p" || dead="$dead $name (pid $p)"
        done
        if [ -n "$dead" ] || [ "$SECONDS" -ge "$deadline" ]; then
            if [ -n "$dead" ]; then
                echo "slurm_start: the cluster did not come up: exited:$dead (node state: '${state:-no answer}')" >&2
            else
                echo "slurm_start: the cluster did not come up within ${TEST_SLURM_TIMEOUT:-30} s" \
                     "(node state: '${state:-no answer}'; munged, slurmctld, slurmd: pids $SLURM_PIDS)" >&2
            fi
            echo "----- scontrol ping -----" >&2
            scontrol ping >&2 2>&1
            slurm_logs >&2
            slurm_stop
            return 1
        fi
        sleep 0.2
    done
    return 0
}

slurm_stop() {
    local p
    [ -n "${SLURM_DIR:-}" ] || return 0
    # this cluster's jobs first (SLURM_CONF points at it), so that no slurmstepd or task outlives it
    if [ -n "${SLURM_CONF:-}" ] && [ -n "$SLURM_PIDS" ] && _slurm_alive "$(echo "$SLURM_PIDS" | cut -d' ' -f2)"; then
        local jobs
        mapfile -t jobs < <(squeue -h -o '%i' 2>/dev/null)
        if [ "${#jobs[@]}" -gt 0 ]; then
            scancel --full --quiet "${jobs[@]}" 2>/dev/null
            for _ in $(seq 1 50); do
                [ -z "$(squeue -h -o '%i' 2>/dev/null)" ] && break
                sleep 0.2
            done
        fi
    fi
    # slurmd, slurmctld, then munged: exactly the pids started above
    for p in $(echo "$SLURM_PIDS" | tr ' ' '\n' | tac); do
        kill -TERM "$p" 2>/dev/null || continue
        for _ in $(seq 1 50); do
            _slurm_alive "$p" || break
            sleep 0.1
        done
        _slurm_alive "$p" && kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf "$SLURM_DIR"
    SLURM_DIR=""
    SLURM_PIDS=""
    unset SLURM_CONF MUNGE_SOCKET
}
