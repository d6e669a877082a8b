# (a) GPT-2 on two nodes of one rank each, joined by a veth pair (two network namespaces), gives
# exactly the losses and the model of the same job on one node with 2 ranks over loopback.
# Without GLOO_SOCKET_IFNAME and with the host name mapped to 127.0.1.1 (Debian's /etc/hosts), so
# it also proves that each node advertises the address that reaches master_addr, not a loopback one.
. "$(dirname "$0")/lib.sh"
restart_job 12
J=$T/job.ini

# the reference: one node, 2 ranks, loopback
run "$SHARDRUN" "$J" --set task.output_dir="$T/ref"
expect_rc 0 "the one-node run"

links_up
sed -i '/^nproc_per_node = 2$/d' "$J"
start_node 0 "$J" "$T/veth"
start_node 1 "$J" "$T/veth"
wait_node_for 0 120
wait_node_for 1 10
expect_eq "${rc[0]}/${rc[1]}" "0/0" "both nodes over the veth ($(tail -3 "$T/n0.err"; tail -3 "$T/n1.err"))"
expect_not_in "$(cat "$T/n0.err" "$T/n1.err")" "127.0." "no loopback address in either node's messages"
expect_eq "$(steps_of "$T/veth/train_log.jsonl")" "$(steps_of "$T/ref/train_log.jsonl")" "the losses, step by step"
expect_same_file "$T/veth/checkpoint-12/model.safetensors" "$T/ref/checkpoint-12/model.safetensors" "the final model"

# a master_addr that this node reaches only over loopback (its host name, mapped to 127.0.1.1) is
# refused before any work, naming the address and the variable to set
P=29510
ip netns exec "$NS1" "$SHARDRUN" "$J" --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr "$(hostname)" \
    --master-port "$P" --set task.output_dir="$T/lo" --set shardrun.rdzv_timeout=20 >"$T/lo.out" 2>"$T/lo.err" &
pid[9]=$!
ip netns exec "$NS1" "$SHARDRUN" "$J" --nnodes 2 --node-rank 1 --nproc-per-node 1 --master-addr "$(hostname)" \
    --master-port "$P" --set task.output_dir="$T/lo" --set shardrun.rdzv_timeout=20 >"$T/lo1.out" 2>"$T/lo1.err" &
pid[8]=$!
wait_node_for 9 60
wait_node_for 8 10
expect_eq "${rc[9]}" 1 "a job whose nodes would meet over a loopback address fails ($(tail -3 "$T/lo.err"))"
expect_in "$(cat "$T/lo.err" "$T/lo1.err")" "(127.0.1.1) is reached from this host over the loopback address 127.0.0.1" "the message names the loopback addresses"
expect_in "$(cat "$T/lo.err" "$T/lo1.err")" "GLOO_SOCKET_IFNAME" "... and the variable to set"
[ ! -e "$T/lo/checkpoint-5" ] && pass || fail "no step ran"
done_checks
