# The files shardrun writes where a user says (core/base/out_file.h): `--results` (run, selftest)
# and `shardrun plot -o`.
#  - a regular file is replaced through a temporary (none left behind); a symbolic link to one
#    stays a link and its target is written;
#  - a character device (a copy of /dev/full, of /dev/null), a FIFO, a link to /proc/self/fd/1 are
#    written in place and never replaced (a full device is an error, exit 1);
#  - an output that is one of the command's inputs (plot -o RUN/trainer_state.json, run --results
#    JOB.ini) is refused before any work, the input unchanged (exit 2); so are an empty name, a
#    missing folder and a folder;
#  - plot reads trainer_state.json as HF writes it (Python's json: NaN, Infinity), and refuses a
#    2 GB (sparse) one at once, from its size.
. "$(dirname "$0")/lib.sh"
HELLO=$SRC/examples/hello/hello.ini
PY=/usr/bin/python3

# devices of our own (as root a test must never risk the machine's /dev/full or /dev/null):
# mknod needs root; elsewhere the real ones, which a non-root process cannot replace anyway
if mknod "$T/full" c 1 7 2>/dev/null && mknod "$T/null" c 1 3 2>/dev/null; then
    FULL=$T/full NULLDEV=$T/null
else
    FULL=/dev/full NULLDEV=/dev/null
fi
is_char() { [ -c "$1" ] && pass || fail "$2: $1 is no longer a character device: $(ls -l "$1")"; }

# ---- shardrun plot ----------------------------------------------------------------------------------
# an HF-style trainer_state.json as Python's json.dump writes it: NaN and Infinity unquoted ($T/hf),
# and one any strict reader takes ($T/run, for the -o cases)
mkdir "$T/hf" "$T/run"
$PY - "$T/hf/trainer_state.json" "$T/run/trainer_state.json" <<'PY' || fail "writing trainer_state.json"
import json, sys
log = [{"epoch": 0.25, "grad_norm": float("nan"), "learning_rate": 1e-3, "loss": 2.5, "step": 1},
       {"epoch": 0.5, "grad_norm": float("inf"), "learning_rate": 1e-3, "loss": float("nan"), "step": 2},
       {"epoch": 0.75, "grad_norm": -float("inf"), "learning_rate": 1e-3, "loss": 2.25, "step": 3},
       {"epoch": 1.0, "eval_loss": 2.0, "step": 4},
       {"epoch": 1.0, "step": 4, "train_loss": float("nan"), "train_runtime": 1.5}]
state = {"best_metric": None, "best_model_checkpoint": None, "epoch": 1.0, "global_step": 4, "log_history": log}
json.dump(state, open(sys.argv[1], "w"), indent=2)
log[1]["loss"], log[4]["train_loss"] = 2.4, 2.3
for e in log:
    e["grad_norm"] = 1.0
json.dump(state, open(sys.argv[2], "w"), indent=2)
PY
grep -q 'NaN' "$T/hf/trainer_state.json" && grep -q -- '-Infinity' "$T/hf/trainer_state.json" && pass ||
    fail "the trainer_state.json holds NaN and -Infinity as Python writes them"
cp "$T/run/trainer_state.json" "$T/state.orig"

run "$SHARDRUN" plot "$T/hf" -o "$T/chart.svg"
expect_rc 0 "plot: HF's trainer_state.json with NaN/Infinity"
expect_in "$(cat "$T/chart.svg" 2>/dev/null)" 'points="1,2.5 3,2.25"' "plot: the finite losses drawn, the NaN one left out"

run "$SHARDRUN" plot "$T/run" -o "$T/run/trainer_state.json"
expect_rc 2 "plot -o RUN/trainer_state.json"
expect_in "$err" "is a file this command reads: writing it would replace it" "plot -o RUN/trainer_state.json: named"
expect_same_file "$T/run/trainer_state.json" "$T/state.orig" "plot -o RUN/trainer_state.json: the state"
ln -s run "$T/alias"
run "$SHARDRUN" plot "$T/run" -o "$T/alias/../run/./trainer_state.json"
expect_rc 2 "plot -o the state through a link"
expect_same_file "$T/run/trainer_state.json" "$T/state.orig" "plot -o the state through a link: the state"
cp "$T/state.orig" "$T/run/trainer_state.json" # (each case below on its own, also where these failed)

run "$SHARDRUN" plot "$T/run" -o "$FULL"
expect_rc 1 "plot -o a full device"
expect_in "$err" "No space left on device" "plot -o a full device: named"
is_char "$FULL" "plot -o a full device"
run "$SHARDRUN" plot "$T/run" -o "$NULLDEV"
expect_rc 0 "plot -o a null device"
is_char "$NULLDEV" "plot -o a null device"

ln -s /proc/self/fd/1 "$T/to_stdout"
"$SHARDRUN" plot "$T/run" -o "$T/to_stdout" >"$T/stdout.svg" 2>"$T/.err"
rc=$? err=$(cat "$T/.err")
expect_rc 0 "plot -o a link to /proc/self/fd/1"
expect_eq "$(readlink "$T/to_stdout")" "/proc/self/fd/1" "plot -o a link to /proc/self/fd/1: still that link"
expect_eq "$(tail -c 7 "$T/stdout.svg")" "</svg>" "plot -o a link to /proc/self/fd/1: the chart went to stdout"
expect_in "$err" "shardrun: wrote $T/to_stdout" "plot -o stdout: the note goes to stderr"

mkfifo "$T/fifo"
timeout 20 cat "$T/fifo" >"$T/from_fifo" &
reader=$!
run timeout 10 "$SHARDRUN" plot "$T/run" -o "$T/fifo"
wait $reader
expect_rc 0 "plot -o a FIFO"
[ -p "$T/fifo" ] && pass || fail "plot -o a FIFO: it is no longer a FIFO: $(ls -l "$T/fifo")"
expect_eq "$(tail -c 7 "$T/from_fifo")" "</svg>" "plot -o a FIFO: the reader got the chart"

echo old >"$T/target.svg"
chmod 640 "$T/target.svg"
ln -s target.svg "$T/link.svg"
run "$SHARDRUN" plot "$T/run" -o "$T/link.svg"
expect_rc 0 "plot -o a link to a file"
[ -L "$T/link.svg" ] && pass || fail "plot -o a link to a file: the link was replaced: $(ls -l "$T/link.svg")"
expect_eq "$(tail -c 7 "$T/target.svg")" "</svg>" "plot -o a link to a file: its target written"
expect_eq "$(stat -c %a "$T/target.svg")" "640" "plot -o an existing file: its permissions kept"

run "$SHARDRUN" plot "$T/run" -o ""
expect_rc 2 "plot -o ''"
expect_in "$err" "an empty file name" "plot -o '': named"
run "$SHARDRUN" plot "$T/run" -o "$T/no/such/dir/c.svg"
expect_rc 2 "plot -o in a missing folder"
expect_in "$err" "the folder $T/no/such/dir does not exist" "plot -o in a missing folder: named"
run "$SHARDRUN" plot "$T/run" -o "$T"
expect_rc 2 "plot -o a folder"
expect_in "$err" "$T is a folder" "plot -o a folder: named"
expect_eq "$(ls -A "$T" | grep -c tmp)" "0" "no temporary file left"

# a 2 GB trainer_state.json (sparse): refused from its size, at once, without reading it
mkdir "$T/huge"
truncate -s 2G "$T/huge/trainer_state.json"
start=$(date +%s%N)
run timeout 20 "$SHARDRUN" plot "$T/huge" -o "$T/huge.svg"
ms=$((($(date +%s%N) - start) / 1000000))
expect_rc 2 "plot of a 2 GB trainer_state.json"
expect_in "$err" "$T/huge/trainer_state.json is 2147483648 bytes, more than a trainer_state.json may be (256 MiB)" \
    "plot of a 2 GB trainer_state.json: the file and the limit named"
[ "$ms" -lt 1000 ] && pass || fail "plot of a 2 GB trainer_state.json took $ms ms to refuse (want < 1 s)"
rm -f "$T/huge/trainer_state.json"

# ---- run --results ----------------------------------------------------------------------------------
run "$SHARDRUN" "$HELLO" --results ""
expect_rc 2 "run --results ''"
expect_in "$err" "--results: an empty file name" "run --results '': named"
expect_not_in "$out" "hello from rank" "run --results '': no worker started"

cp "$HELLO" "$T/hello.ini"
cp "$HELLO" "$T/hello.orig"
run "$SHARDRUN" "$T/hello.ini" --results "$T/hello.ini"
expect_rc 2 "run --results JOB.ini"
expect_in "$err" "is a file this command reads" "run --results JOB.ini: named"
expect_not_in "$out" "hello from rank" "run --results JOB.ini: no worker started"
expect_same_file "$T/hello.ini" "$T/hello.orig" "run --results JOB.ini: the job file"

run "$SHARDRUN" "$HELLO" --results "$FULL"
expect_rc 1 "run --results a full device"
expect_in "$err" "No space left on device" "run --results a full device: named"
is_char "$FULL" "run --results a full device"

"$SHARDRUN" "$HELLO" --results "$T/to_stdout" >"$T/run.out" 2>"$T/.err"
rc=$? err=$(cat "$T/.err")
expect_rc 0 "run --results a link to /proc/self/fd/1"
expect_eq "$(readlink "$T/to_stdout")" "/proc/self/fd/1" "run --results a link to /proc/self/fd/1: still that link"
expect_eq "$(grep -c '"exit_code": 0' "$T/run.out")" "4" "run --results stdout: the list printed, then written to stdout again"

timeout 30 cat "$T/fifo" >"$T/results_fifo" &
reader=$!
run timeout 30 "$SHARDRUN" "$HELLO" --results "$T/fifo"
wait $reader
expect_rc 0 "run --results a FIFO"
[ -p "$T/fifo" ] && pass || fail "run --results a FIFO: it is no longer a FIFO"
$PY -c 'import json,sys; assert len(json.load(open(sys.argv[1]))) == 2' "$T/results_fifo" && pass ||
    fail "run --results a FIFO: the reader got the list: $(cat "$T/results_fifo")"

# ---- selftest --results: checked before any check runs ----------------------------------------------
start=$(date +%s%N)
run timeout 60 "$SHARDRUN" selftest --results ""
ms=$((($(date +%s%N) - start) / 1000000))
expect_rc 2 "selftest --results ''"
expect_in "$err" "selftest: --results: an empty file name" "selftest --results '': named"
expect_not_in "$out" "CPU half" "selftest --results '': no check ran"
[ "$ms" -lt 2000 ] && pass || fail "selftest --results '' took $ms ms to refuse (want < 2 s)"
run timeout 60 "$SHARDRUN" selftest --results "$T/no/such/dir/st.json"
expect_rc 2 "selftest --results in a missing folder"
expect_in "$err" "the folder $T/no/such/dir does not exist" "selftest --results in a missing folder: named"

done_checks
