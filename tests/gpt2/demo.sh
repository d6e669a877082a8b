# The README's first command: examples/gpt2/fsdp_cpu.ini trains GPT-2 (tiny) on 2 ranks with
# FULL_SHARD in under a minute, the loss falls, rank 0 logs its progress, each rank reports
# fsdp_enabled, world_size, parameters, peak memory and final loss, and a FULL checkpoint is saved.
# Under the sanitizers (SANITIZED=1) it runs 12 steps and the time limit is not checked.
. "$(dirname "$0")/lib.sh"
extra=()
[ "${SANITIZED:-0}" = 1 ] && extra=(--set task.max_steps=12 --set task.logging_steps=4)
start=$(date +%s%N)
run "$SHARDRUN" "$SRC/examples/gpt2/fsdp_cpu.ini" --set task.output_dir="$T/out" "${extra[@]}"
secs=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
expect_rc 0 "the demo runs"
for k in '"fsdp_enabled": true' '"world_size": 2' '"model_params": ' '"peak_mem_gb": ' '"final_loss": '; do
    expect_eq "$(grep -c -- "$k" <<<"$out")" 2 "both ranks report $k"
done
expect_in "$out" "[rank0]: gpt2: 4 layers, 4 heads, n_embd 128" "the task describes the model"
expect_in "$out" "FSDP FULL_SHARD on 2 ranks" "the engine describes the sharding"
# torchrun's rule, applied before the task (and its OpenMP) loads: 1 thread per rank when 2 share a node
expect_eq "$(grep -c '"cpu_threads": 1' <<<"$out")" 2 "each of the 2 ranks computes on 1 thread"
expect_in "$out" "(OpenBLAS, 1 thread)" "the task says so"
losses=$(grep -o '^\[rank0\]: step [0-9]*/[0-9]*  loss [0-9.]*' <<<"$out" | awk '{print $NF}')
first=$(head -1 <<<"$losses") last=$(tail -1 <<<"$losses")
echo "demo: $(wc -l <<<"$losses") progress lines, loss $first -> $last, ${secs}s"
falls=$(awk -v f="$first" -v l="$last" 'BEGIN { print (f != "" && l < f - 0.5) ? 1 : 0 }')
expect_eq "${falls:-0}" 1 "the loss falls by more than 0.5 ($first -> $last)"
ls "$T"/out/checkpoint-*/model.safetensors >/dev/null 2>&1 && pass || fail "a FULL checkpoint is saved"
if [ "${SANITIZED:-0}" != 1 ]; then
    expect_eq "$(awk -v s="$secs" 'BEGIN { print (s < 60) ? 1 : 0 }')" 1 "the demo takes under a minute (${secs}s)"
fi
done_checks
