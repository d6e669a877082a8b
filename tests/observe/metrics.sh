# [shardrun] metrics_port: the agent's Prometheus endpoint.  A port in use is a configuration error
# before any worker starts (exit 2); a running job's /metrics passes `promtool check metrics`, and a
# real Prometheus server scrapes it and answers a query for a rank's step through its HTTP API.
# The job is held after rank 0's step 5 (SHARDRUN_DEBUG_PAUSE_AT), checkpoint-3 written, so the
# values are fixed.
. "$(dirname "$0")/../fsdp/lib.sh"
export OMP_NUM_THREADS=1
for tool in promtool prometheus curl; do
    command -v $tool >/dev/null || { echo "FAIL: $tool is not installed (apt-get install prometheus curl)"; exit 1; }
done
toy_job job.ini <<EOF
max_steps = 100000
num_train_epochs = 10000
logging_steps = 1
save_steps = 3
EOF
sed -i 's/^plugins = torch,accelerate$/&\nnproc_per_node = 2/' "$T/job.ini"
free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# a port in use: refused before the rendezvous and any worker
busy=$(free_port)
/usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("", int(sys.argv[1]))); s.listen(); print("up", flush=True); time.sleep(60)' "$busy" >"$T/busy.out" &
holder=$!
wait_for "$T/busy.out" up 10 || fail "the port holder started"
run "$SHARDRUN" "$T/job.ini" --set task.output_dir="$T/busy" --set shardrun.metrics_port="$busy"
kill $holder
wait $holder 2>/dev/null
expect_rc 2 "a metrics_port in use: exit 2"
expect_in "$err" "--set shardrun.metrics_port=$busy: metrics_port = $busy: cannot serve the metrics there: the port is in use" "the port in use is named with where it was set"
expect_not_in "$err" "started 2 workers" "no worker started"
[ ! -e "$T/busy" ] && pass || fail "nothing written for the refused run: $(ls -A "$T/busy")"

# a running job, scraped
P=$(free_port)
SHARDRUN_DEBUG_PAUSE_AT=0:5 SHARDRUN_METRICS_PORT=$P "$SHARDRUN" "$T/job.ini" --set task.output_dir="$T/out" \
    >"$T/run.out" 2>"$T/run.err" &
p=$!
wait_for "$T/run.out" "step 5/" 60 && pass || fail "the run reached step 5 ($(cat "$T/run.err"))"
for i in $(seq 1 50); do # the agent hands the figures over once a second
    curl -s "http://127.0.0.1:$P/metrics" >"$T/m.txt"
    grep -q '^shardrun_checkpoint_size_bytes{rank="0",node="0"} [1-9]' "$T/m.txt" && break
    sleep 0.2
done
promtool check metrics <"$T/m.txt" >"$T/lint.txt" 2>&1 && pass || fail "promtool check metrics: $(cat "$T/lint.txt")"
m=$(cat "$T/m.txt")
expect_in "$m" 'shardrun_train_step{rank="0",node="0"} 5' "rank 0's step"
expect_in "$m" 'shardrun_train_step{rank="1",node="0"} 5' "rank 1's step"
expect_in "$m" 'shardrun_train_steps_planned{rank="1",node="0"} 100000' "the steps planned"
expect_in "$m" '# TYPE shardrun_train_loss gauge' "the loss, typed"
expect_in "$m" 'shardrun_checkpoints_total{rank="0",node="0"} 1' "checkpoint-3 counted"
for name in train_tokens_per_second train_step_duration_seconds memory_peak_bytes checkpoint_duration_seconds last_progress_age_seconds; do
    grep -q "^shardrun_${name}{rank=\"1\",node=\"0\"} [0-9]" "$T/m.txt" && pass || fail "shardrun_$name of rank 1 in: $m"
done
expect_in "$m" 'shardrun_restarts_total{node="0"} 0' "the restarts"
expect_in "$m" 'shardrun_hangs_total{node="0"} 0' "the hangs"
loss=$(/usr/bin/python3 -c 'import json, sys
print([r["loss"] for r in map(json.loads, open(sys.argv[1])) if r["step"] == 5][0])' "$T/out/train_log.jsonl")
got=$(sed -n 's/^shardrun_train_loss{rank="0",node="0"} //p' "$T/m.txt")
/usr/bin/python3 -c 'import sys; assert abs(float(sys.argv[1]) - float(sys.argv[2])) < 1e-6' "$got" "$loss" \
    && pass || fail "the loss ($got) is step 5's in train_log.jsonl ($loss)"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P/other")
expect_eq "$code" 404 "another path"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$P/metrics")
expect_eq "$code" 405 "another method"

# a real Prometheus scrapes it; the query API gives rank 1's step back
Q=$(free_port)
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: shardrun
    static_configs:
      - targets: ['127.0.0.1:$P']
EOF
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" --web.listen-address="127.0.0.1:$Q" \
    >"$T/prom.log" 2>&1 &
prom=$!
value=
for i in $(seq 1 75); do
    value=$(curl -s "http://127.0.0.1:$Q/api/v1/query" --data-urlencode 'query=shardrun_train_step{rank="1"}' |
        /usr/bin/python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")' 2>/dev/null)
    [ "$value" = 5 ] && break
    sleep 0.2
done
expect_eq "$value" 5 "Prometheus's query for rank 1's step ($(tail -3 "$T/prom.log"))"
kill $prom
wait $prom
kill -TERM $p
wait $p
expect_eq "$?" 143 "the run, stopped"
done_checks
