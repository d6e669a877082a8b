. "$(dirname "$0")/lib.sh"
export SHARDRUN_RDZV_TOKEN=el-$$
restart_job 20
sed -i '/^nproc_per_node = 2$/d' "$T/job.ini"
J=$T/job.ini
P=$(free_port_pair)
declare -A pid
start() { local n=$1 nr=$2; shift 2
  "$SHARDRUN" "$J" --nnodes ${NN:-2:3} --node-rank $nr --nproc-per-node 1 --master-addr 127.0.0.1 --master-port $P \
     --set task.output_dir=$T/out --set shardrun.rdzv_last_call=0.5 "$@" >$T/n$n.out 2>$T/n$n.err & pid[$n]=$!; }
case $SCEN in
join)
  start 0 0; start 1 1
  wait_for "$T/n0.out" "step 7/20" 120 || echo "no step 7"
  start 2 1
  ;;
notice)
  start 0 0; start 1 1; start 2 1
  wait_for "$T/n0.out" "step 7/20" 120 || echo "no step 7"
  kill -TERM ${pid[2]}
  ;;
belowmin)
  start 0 0 --set shardrun.rdzv_timeout=3; start 1 1 --set shardrun.rdzv_timeout=3
  wait_for "$T/n0.out" "step 7/20" 120 || echo "no step 7"
  kill -KILL ${pid[1]}
  ;;
node0)
  start 0 0; start 1 1; start 2 1
  wait_for "$T/n0.out" "step 7/20" 120 || echo "no step 7"
  kill -KILL ${pid[0]}
  ;;
esac
for n in 0 1 2; do [ -n "${pid[$n]:-}" ] && { timeout 120 tail --pid=${pid[$n]} -f /dev/null; wait ${pid[$n]}; echo "rc$n=$?"; }; done
for n in 0 1 2; do echo "== n$n.err"; cat $T/n$n.err 2>/dev/null; done
grep -h "resumed\|elastic\|note\|step 20/\|saved" $T/n0.out $T/n1.out | head -20
