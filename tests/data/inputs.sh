# Inputs refused at once, in training and in shardrun_prepare: a JSON Lines file bad from its first
# byte (1 GiB of NUL bytes, sparse) is refused naming its line 1 in well under a second with a small
# resident set, not read whole first; a leading UTF-8 byte order mark is skipped (the records are
# read as without it); an input that is empty or holds only blank lines is no data: prepare exits 2
# with "no text" naming the file and writes nothing.
. "$(dirname "$0")/../gpt2/lib.sh"
export OMP_NUM_THREADS=1
PREP=${SHARDRUN_PREPARE:-$BUILD/shardrun_prepare}
REF=$SRC/tests/data/llmc_shards.py
[ -x "$PREP" ] || { echo "FAIL: no $PREP; build first"; exit 1; }
truncate -s 1G "$T/nul.jsonl" || { echo "FAIL: cannot make a sparse file in $T"; exit 1; }
# measured CMD...: runs it, then out/err/rc as run does, and secs / rss_mb: its wall time and the
# largest resident set of it and its children (ru_maxrss of the waited-for children)
measured() {
    local m
    m=$(/usr/bin/python3 -c '
import resource, subprocess, sys, time
t = time.monotonic()
with open(sys.argv[1], "w") as o, open(sys.argv[2], "w") as e:
    rc = subprocess.run(sys.argv[3:], stdout=o, stderr=e).returncode
print(rc if rc >= 0 else 128 - rc, "%.2f" % (time.monotonic() - t), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
' "$T/m.out" "$T/m.err" "$@")
    read -r rc secs rss_mb <<<"$m"
    out=$(cat "$T/m.out") err=$(cat "$T/m.err")
}
fast() { # WHAT: under 3 s (the check reads 1 MiB; reading the GiB took seconds) and under 100 MB
    awk -v s="$secs" 'BEGIN { exit !(s < 3) }' && pass || fail "$1: took $secs s"
    [ "$rss_mb" -lt 100 ] && pass || fail "$1: a resident set of $rss_mb MB (the file read whole?)"
}

# ---- training ----
gpt2_job job.ini <<EOF2
size = tiny
n_layer = 1
n_embd = 16
n_head = 2
max_length = 8
max_steps = 1
per_device_train_batch_size = 2
output_dir = $T/out
overwrite_output_dir = true
EOF2
printf '{"text": "the first record, read whole"}\n' >"$T/a.jsonl"
measured "$SHARDRUN" "$T/job.ini" --set task.data="$T/a.jsonl $T/nul.jsonl"
expect_rc 2 "training on a GiB of NUL bytes as JSON Lines"
expect_in "$err" "$T/nul.jsonl:1: not a JSON object" "the message names the file and line 1"
expect_not_in "$out" "step 1/" "no step ran"
fast "training's refusal"
printf '\357\273\277{"text": "a record after a byte order mark"}\n{"text": "and another one"}\n' >"$T/bom.jsonl"
run "$SHARDRUN" "$T/job.ini" --set task.data="$T/bom.jsonl"
expect_rc 0 "training on JSON Lines with a byte order mark"
expect_in "$out" "from 2 texts of 1 files" "both records read"

# ---- prepare ----
mkdir "$T/p"
measured "$PREP" -o "$T/p/x" --progress none "$T/a.jsonl" "$T/nul.jsonl"
expect_rc 2 "prepare on a GiB of NUL bytes as JSON Lines"
expect_in "$err" "$T/nul.jsonl:1: not a JSON object" "the message names the file and line 1"
fast "prepare's refusal"
run "$PREP" -o "$T/p/b" --val-tokens 0 --progress none "$T/bom.jsonl"
expect_rc 0 "prepare on JSON Lines with a byte order mark"
tail -c +4 "$T/bom.jsonl" >"$T/nobom.jsonl"
run "$PREP" -o "$T/p/n" --val-tokens 0 --progress none "$T/nobom.jsonl"
expect_same_file "$T/p/b_train_000000.bin" "$T/p/n_train_000000.bin" "the mark skipped: the same shard as without it"
: >"$T/empty.jsonl"
printf '\n   \n\t\n' >"$T/blank.jsonl"
printf '  \n\n \r\n' >"$T/blank.txt"
: >"$T/empty.txt"
for f in empty.jsonl blank.jsonl blank.txt empty.txt; do
    run "$PREP" -o "$T/p/e" --progress none "$T/a.jsonl" "$T/$f"
    expect_rc 2 "prepare with $f"
    expect_in "$err" "$T/$f" "$f: the message names the file"
    expect_in "$err" "no text" "$f: the message says there is no text"
done
expect_eq "$(ls -A "$T/p" | grep -c '^e_')" 0 "nothing written for the refused inputs"
done_checks
