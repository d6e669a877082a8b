# One Python process per test script for its Python commands (tests/transformer/torch_server.py),
# sourced by tests/gpt2/lib.sh after tests/cli/lib.sh (it needs $T and $SRC):
#   torch_py SCRIPT.py ARGS...     as `/usr/bin/python3 SCRIPT.py ARGS...`
#   torch_py - ARGS... <<'PY'      as `/usr/bin/python3 - ARGS...` (the code on stdin)
#   torch_py -c CODE ARGS...       as `/usr/bin/python3 -c CODE ARGS...`
# the same output (stderr first, then stdout: what a Python writing to one pipe shows, its stdout
# being flushed at exit) and the same exit status, but torch and numpy are imported once per test,
# not once per command: the first call starts the server, the next ones reuse it.  It works in
# command substitutions and other subshells (the FIFOs are opened with `exec {fd}<>`, which
# subshells inherit), one call at a time (a lock).  What a call cannot have: stdin (the script's is
# /dev/null, except the code of `torch_py -`), environment variables set after the server started
# (except PYTHONPATH, passed with each call).
# TORCH_SERVER=0 runs each call in a new /usr/bin/python3 instead (to compare, or to debug).
# When the server dies during a call the call fails with a message naming it (exit 125) and the next
# call starts a new one; a call that takes more than TORCH_SERVER_TIMEOUT seconds (default 600) ends
# the server and fails (exit 124).  The server is stopped when the test exits (this file chains the
# EXIT trap of tests/cli/lib.sh), and stops by itself within about two seconds of the test's shell
# being gone.
TORCH_SERVER_TIMEOUT=${TORCH_SERVER_TIMEOUT:-600}
_ts_dir=$T/.torch_server
_ts_req="" _ts_resp="" _ts_seq=0

# _ts_alive: the server is running (not a zombie) and is ours
_ts_alive() {
    local pid st cmd
    read -r pid 2>/dev/null <"$_ts_dir/pid" || return 1
    read -r _ _ st _ 2>/dev/null <"/proc/$pid/stat" || return 1
    case $st in Z | X) return 1 ;; esac
    mapfile -d '' -t cmd 2>/dev/null <"/proc/$pid/cmdline" || return 1
    [ "${cmd[1]:-}" = "$SRC/tests/transformer/torch_server.py" ]
}

# _ts_start LOCK_FD: the FIFOs (once), opened in this process (once), emptied, and a new server
_ts_start() {
    local lk=$1 _
    if [ ! -p "$_ts_dir/resp" ]; then
        mkdir -p "$_ts_dir" && mkfifo "$_ts_dir/req" "$_ts_dir/resp" || return 1
    fi
    if [ -z "$_ts_req" ]; then
        exec {_ts_req}<>"$_ts_dir/req" {_ts_resp}<>"$_ts_dir/resp" || return 1
    fi
    # what a server that died left: a request it did not read, an answer nobody read
    while read -r -t 0.01 -d '' -u "$_ts_req" _; do :; done
    while read -r -t 0.01 -u "$_ts_resp" _; do :; done
    # started from a subshell that ends at once: no child of the test's shell, which a bare `wait`
    # would wait for
    (
        /usr/bin/python3 "$SRC/tests/transformer/torch_server.py" "$_ts_dir" "$$" </dev/null \
            >>"$_ts_dir/log" 2>&1 {lk}>&- &
        echo $! >"$_ts_dir/pid"
    )
}

_ts_stop() {
    local pid
    _ts_alive && read -r pid <"$_ts_dir/pid" && kill "$pid" 2>/dev/null
    rm -f "$_ts_dir/pid"
}

torch_py() {
    local mode=file script=${1:-} what lk id rid status waited=0 code
    what=${script##*/}
    if [ "${TORCH_SERVER:-1}" = 0 ]; then # a new Python each call, as before the server
        /usr/bin/python3 "$@"
        return
    fi
    case $script in
    -) mode=stdin script=$_ts_dir/stdin.$BASHPID.py what="python3 -" ;;
    -c) mode=code script=${2:-} what="python3 -c '${2:0:60}'" && shift ;;
    "") echo "torch_py: no script" >&2 && return 2 ;;
    esac
    shift
    if [ $mode = stdin ]; then # before the lock: the caller's here-document
        mkdir -p "$_ts_dir" || return 1
        IFS= read -r -d '' code || : # to the end: no NUL in it
        printf '%s' "$code" >"$script" || return 1
    fi
    exec {lk}>>"$T/.torch_server.lock"
    if ! flock -w "$TORCH_SERVER_TIMEOUT" "$lk"; then
        exec {lk}>&-
        echo "torch_py: no turn at the Python server in $TORCH_SERVER_TIMEOUT s" >&2
        return 124
    fi
    if ! _ts_alive; then
        _ts_start "$lk" || { exec {lk}>&-; echo "torch_py: cannot start the Python server in $_ts_dir" >&2; return 1; }
    elif [ -z "$_ts_req" ]; then # started by a subshell
        exec {_ts_req}<>"$_ts_dir/req" {_ts_resp}<>"$_ts_dir/resp"
    fi
    _ts_seq=$((_ts_seq + 1))
    id=$BASHPID.$_ts_seq.$RANDOM
    printf '%s\0' TS1 "$id" "$PWD" "${PYTHONPATH:-}" "$mode" "$script" $# "$@" >&"$_ts_req"
    while :; do
        if read -r -t 1 -u "$_ts_resp" rid status; then
            [ "$rid" = "$id" ] && break
            continue # an answer to a call that gave up
        fi
        if ! _ts_alive; then
            exec {lk}>&-
            echo "torch_py: the Python server (tests/transformer/torch_server.py) died running $what $*;" \
                "its log: $(tail -n 5 "$_ts_dir/log" 2>/dev/null)" >&2
            return 125
        fi
        waited=$((waited + 1))
        if [ "$waited" -ge "$TORCH_SERVER_TIMEOUT" ]; then
            _ts_stop
            exec {lk}>&-
            echo "torch_py: no answer in $TORCH_SERVER_TIMEOUT s from the Python server running $what $*;" \
                "it was stopped" >&2
            return 124
        fi
    done
    cat "$_ts_dir/err" >&2
    cat "$_ts_dir/out"
    exec {lk}>&-
    return "$status"
}

# the EXIT trap tests/cli/lib.sh set (rm -rf "$T"), the server stopped first
_ts_chain_exit_trap() {
    local cur
    cur=$(trap -p EXIT) # trap -- 'CMD' EXIT, CMD quoted
    cur=${cur#"trap -- "}
    eval "cur=${cur%" EXIT"}"
    # shellcheck disable=SC2064 # CMD now
    trap "_ts_stop; $cur" EXIT
}
_ts_chain_exit_trap
