# One run per output_dir (core/trainer/output_lock.h): the agent holding rank 0 locks the folder
# before any worker starts, for the whole launch (restarts included), and removes the lock at its
# end.
#  (a) a second run on a folder a run holds is refused, exit 2, naming the holder; so is one with
#      overwrite_output_dir = true, which must not remove the holder's checkpoints; the holder then
#      finishes, exit 0, with its checkpoints and train_log.jsonl its own;
#  (b) a lock left by a holder killed outright (kill -9) is taken over, with a line saying so; a
#      lock from another host is taken over once its heartbeat is older than 300 s, and refused
#      while it is fresh;
#  (c) a restart inside the launch (max_restarts) keeps the lock and resumes;
#  (d) overwrite_output_dir leaves a checkpoint-N folder without trainer_state.json (a user's
#      checkpoint-7/notes.txt): refused, exit 2, the folder kept.
# The holder of (a) is made to wait with SIGSTOP to its workers (its agent keeps the lock's
# heartbeat), so that the second run meets it at a known point however fast the toy's steps are.
. "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1
toy_job job.ini <<EOF
max_steps = 600
logging_steps = 1
save_steps = 200
EOF
sed -i 's/^plugins = torch,accelerate$/&\nnproc_per_node = 2/' "$T/job.ini"
J=$T/job.ini
LOCK=.shardrun.lock

# children AGENT: its processes (the guardian and the workers)
children() { pgrep -P "$1" | tr '\n' ' '; }
# run_ids DIR: the run_id of each checkpoint's trainer_state.json in DIR, one line each
run_ids() {
    /usr/bin/python3 -c '
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/checkpoint-*/trainer_state.json")):
    print(json.load(open(f))["stateful_callbacks"]["shardrun"]["run_id"])' "$1"
}

# ---- (a) a second run while the first holds the folder ---------------------------------------------
"$SHARDRUN" "$J" --set task.output_dir="$T/a" >"$T/a.out" 2>"$T/a.err" &
p=$!
wait_for "$T/a.out" "step 5/" 60 && pass || fail "(a) the first run reached step 5: $(cat "$T/a.err")"
kids=$(children $p)
kill -STOP $kids
expect_eq "$(sed -n 's/^pid=//p' "$T/a/$LOCK" 2>/dev/null)" "$p" "(a) the lock names the first run's shardrun"
run "$SHARDRUN" "$J" --set task.output_dir="$T/a" --set task.max_steps=20
expect_rc 2 "(a) a second run on the same output_dir"
expect_in "$err" "[task] output_dir = $T/a is in use by another run: shardrun pid $p on host $(hostname) (launch " \
    "(a) the refusal names the holder"
expect_in "$err" "nothing was started" "(a) the refusal says nothing was done"
expect_not_in "$err" "started 2 workers" "(a) no worker of the second run started"
kill -CONT $kids
wait_for "$T/a.out" "step 205/" 60 && pass || fail "(a) the first run saved checkpoint-200: $(cat "$T/a.err")"
kill -STOP $kids
run "$SHARDRUN" "$J" --set task.output_dir="$T/a" --set task.overwrite_output_dir=true --set task.max_steps=20
expect_rc 2 "(a) overwrite_output_dir = true while another run holds the folder"
expect_in "$err" "is in use by another run: shardrun pid $p" "(a) overwrite_output_dir: the holder named"
[ -f "$T/a/checkpoint-200/model.safetensors" ] && pass || fail "(a) the holder's checkpoint-200 was kept: $(ls -a "$T/a")"
kill -CONT $kids
wait $p
rc=$? err=$(cat "$T/a.err")
expect_rc 0 "(a) the first run finishes"
expect_eq "$(ls "$T/a" | grep -c '^checkpoint-')" 3 "(a) the first run's three checkpoints: $(ls "$T/a")"
expect_eq "$(run_ids "$T/a" | sort -u | wc -l)" 1 "(a) every checkpoint belongs to the first run: $(run_ids "$T/a")"
expect_eq "$(tr -d '\000' <"$T/a/train_log.jsonl" | cmp -s - "$T/a/train_log.jsonl" && echo clean)" clean \
    "(a) train_log.jsonl holds no NUL bytes"
expect_eq "$(wc -l <"$T/a/train_log.jsonl")" "$(grep -c '"loss"' "$T/a/train_log.jsonl")" "(a) train_log.jsonl: one run's lines"
[ ! -e "$T/a/$LOCK" ] && pass || fail "(a) the lock is removed at the end: $(ls -a "$T/a")"

# ---- (b) stale locks ----------------------------------------------------------------------------------
SHARDRUN_DEBUG_PAUSE_AT=0:5 "$SHARDRUN" "$J" --set task.output_dir="$T/b" >"$T/b.out" 2>"$T/b.err" &
p=$!
disown $p # its death by SIGKILL is the point: no job notice
wait_for "$T/b.out" "step 5/" 60 && pass || fail "(b) the holder reached step 5: $(cat "$T/b.err")"
kill -KILL $p
for _ in $(seq 1 250); do [ -e "/proc/$p" ] || break; sleep 0.02; done # reaped by this shell
run "$SHARDRUN" "$J" --set task.output_dir="$T/b" --set task.max_steps=20
expect_rc 0 "(b) a run after the holder was killed with SIGKILL"
expect_in "$err" "shardrun: warning: [task] output_dir = $T/b: took over the lock $T/b/$LOCK left by shardrun pid $p on host $(hostname)" \
    "(b) the takeover is said"
expect_in "$err" "pid $p on this host is gone" "(b) and why the lock was stale"
# a lock of another host: fresh, it is refused; 301 s without a heartbeat, it is stale
mkdir -p "$T/c"
printf 'shardrun output_dir lock\nlaunch=0123456789abcdef\nrequeue_key=\nrequeue_count=-1\nhost=node-elsewhere\npid=4242\npid_start=0\nsince=%s\n' \
    "$(date +%s)" >"$T/c/$LOCK"
run "$SHARDRUN" "$J" --set task.output_dir="$T/c" --set task.max_steps=20
expect_rc 2 "(b) a fresh lock of another host"
expect_in "$err" "shardrun pid 4242 on host node-elsewhere (launch 0123456789abcdef" "(b) another host's holder named"
touch -d "@$(($(date +%s) - 301))" "$T/c/$LOCK"
run "$SHARDRUN" "$J" --set task.output_dir="$T/c" --set task.max_steps=20
expect_rc 0 "(b) another host's lock without a heartbeat for 301 s"
expect_in "$err" "left by shardrun pid 4242 on host node-elsewhere" "(b) another host's stale lock: the takeover is said"
expect_in "$err" "its heartbeat stopped 30" "(b) another host's stale lock: why"

# ---- (c) a restart inside the launch keeps the lock ---------------------------------------------
SHARDRUN_DEBUG_KILL_AT=1:7 run "$SHARDRUN" "$J" --set task.output_dir="$T/r" --set shardrun.max_restarts=1 \
    --set task.max_steps=12 --set task.save_steps=5
expect_rc 0 "(c) a run that lost rank 1 after step 7 and restarted"
expect_in "$out" "[rank0]: shardrun: restart 1: resuming from this job's newest checkpoint, $T/r/checkpoint-5" \
    "(c) the restart resumes from the launch's checkpoint"
expect_not_in "$err" "output_dir = $T/r" "(c) no word of the lock"
[ -d "$T/r/checkpoint-12" ] && [ ! -e "$T/r/$LOCK" ] && pass || fail "(c) the run ended, lock removed: $(ls -a "$T/r")"

# ---- (d) overwrite_output_dir removes only what is provably another run's checkpoint ----------------------
mkdir -p "$T/d/checkpoint-7"
echo "my notes" >"$T/d/checkpoint-7/notes.txt"
run "$SHARDRUN" "$J" --set task.output_dir="$T/d" --set task.overwrite_output_dir=true --set task.max_steps=20
expect_rc 2 "(d) overwrite_output_dir with checkpoint-7/notes.txt"
expect_in "$err" "[task] output_dir = $T/d holds $T/d/checkpoint-7, which is not a checkpoint shardrun can read" \
    "(d) the folder named"
expect_eq "$(cat "$T/d/checkpoint-7/notes.txt" 2>/dev/null)" "my notes" "(d) checkpoint-7/notes.txt kept"
[ ! -e "$T/d/$LOCK" ] && pass || fail "(d) the lock removed after the refusal: $(ls -a "$T/d")"
done_checks
