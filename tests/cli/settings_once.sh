# Settings are read once (docs/architecture.md, "Settings"):
#  - a worker reads its environment in one place, core/config/worker_settings.c, at start-up; no
#    other file under core/ calls getenv, except the agent's reading of the user's environment to
#    resolve the job and the testing aids listed below, each with its reason;
#  - every enumeration of the job file and the environment contract is spelled in one table,
#    core/config/enums.h: no other file under core/ holds a list of choices ("A|B|C", any list, so
#    that a new key's list goes there too), a member of the FSDP lists alone as a string
#    ("FULL_SHARD"), or compares with a member of the lowercase lists or picks one by its text
#    (strcmp(v, "steps"), x ? "skip_step" : ...): values are read with sr__enum_index and named
#    with the table's sr__*_name.
. "$(dirname "$0")/lib.sh"
cd "$SRC" || { echo "FAIL: cannot enter $SRC"; exit 1; }

# The files that may read the environment, and why.
GETENV_ALLOWED='
core/config/worker_settings.c   the worker: its one reader of the environment
core/config/job.c               the agent resolving the job: a key set by its variable, $HOME for ~
core/run/layout.c               the agent: cluster detection reads the launcher variables (config/cluster.c)
core/run/task_spec.c            the agent: $PATH finds an exec: program
core/run/host.c                 the plugins host API env_get: the plugins, reading what they resolve the job from
core/trainer/output_lock.c      the agent holding rank 0: its lock names the Slurm requeue count
core/store/rdzv.c               the agents rendezvous: the token and the Slurm job id
core/cli/*.c                    the command layer (the agent): plugin_path, the selftest options
core/base/alloc.c               testing aid of every process, tools too, before any settings exist
'

command -v gcc >/dev/null || { echo "FAIL: no gcc, which strips the comments before the scan"; exit 1; }
files=$(find core -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cu' \) | sort)
[ -n "$files" ] || { echo "FAIL: no source files under $SRC/core"; exit 1; }
GETENV_RE='(^|[^_a-zA-Z0-9])(secure_)?getenv([^_a-zA-Z0-9]|$)'
# any list of choices; the FSDP lists' members as whole literals; the lowercase lists' members
# compared with (strcmp) or picked by a conditional ("no" and the metric's loss and eval_loss are
# left out: they are also a plain word and the history's keys)
UPPER='FULL_SHARD|SHARD_GRAD_OP|NO_SHARD|HYBRID_SHARD|HYBRID_SHARD_ZERO2|NO_WRAP|TRANSFORMER_BASED_WRAP|SIZE_BASED_WRAP|NO_PREFETCH|BACKWARD_PRE|BACKWARD_POST|FULL_STATE_DICT|LOCAL_STATE_DICT|SHARDED_STATE_DICT'
LOWER='fp16|bf16|error|warn|info|debug|linear|cosine|constant|constant_with_warmup|steps|epoch|best|stop|skip_step'
LIST_RE="\"[A-Za-z0-9_]+(\\|[A-Za-z0-9_]+)+\"|\"($UPPER)\""
NAME_RE="(str(n?case)?cmp[[:space:]]*\\([^;]*|\\?[[:space:]]*)\"($LOWER)\""
nfiles=0 readers=0
for f in $files; do
    nfiles=$((nfiles + 1))
    grep -qE "$GETENV_RE|$LIST_RE|$NAME_RE" "$f" || continue
    # the code without its comments (a comment may name getenv or a strategy)
    case $f in *.cc | *.cu) lang=c++ ;; *) lang=c ;; esac
    if ! gcc -x "$lang" -fpreprocessed -dD -E -P "$f" >"$T/code" 2>"$T/cpp_err"; then
        fail "cannot strip the comments of $f: $(head -3 "$T/cpp_err")"
        continue
    fi
    allowed=0
    while read -r pattern _; do
        [ -n "$pattern" ] || continue
        # shellcheck disable=SC2254
        case $f in $pattern) allowed=1 ;; esac
    done <<<"$GETENV_ALLOWED"
    hits=$(grep -nE "$GETENV_RE" "$T/code" | sed "s/^\([0-9]*\):[[:space:]]*/\1: /" | head -5)
    if [ "$allowed" = 1 ]; then
        [ -n "$hits" ] && readers=$((readers + 1))
    else
        [ -z "$hits" ] && pass ||
            fail "$f reads the environment (getenv): a worker's settings come from core/config/worker_settings.h, read once at start-up; add the variable there: $hits"
    fi
    if [ "$f" != core/config/enums.h ]; then
        hits=$(grep -oE "$LIST_RE" "$T/code" | head -5 | tr '\n' ' ')
        [ -z "$hits" ] && pass ||
            fail "$f spells an enumeration again: its list belongs in core/config/enums.h (an X-macro list; the key table takes SR__CHOICES of it, messages sr__*_name): $hits"
        hits=$(grep -oE "$NAME_RE" "$T/code" | head -5 | tr '\n' ' ')
        [ -z "$hits" ] && pass ||
            fail "$f reads or names a member of an enumeration of core/config/enums.h by its text: read the value with sr__enum_index(SR__*_CHOICES, ...), name it with sr__*_name: $hits"
    fi
done
# the scan saw the tree: the reader and the table are there, and read what they should
[ "$nfiles" -gt 100 ] && pass || fail "only $nfiles source files scanned under core/"
grep -q 'getenv' core/config/worker_settings.c && pass || fail "core/config/worker_settings.c reads no variable"
grep -q '"FULL_SHARD"' core/config/enums.h && pass || fail "core/config/enums.h does not spell FULL_SHARD"
grep -q '"skip_step"' core/config/enums.h && pass || fail "core/config/enums.h does not spell skip_step"
[ "$readers" -ge 5 ] && pass || fail "only $readers of the allowed readers read the environment: is the scan working?"
done_checks
