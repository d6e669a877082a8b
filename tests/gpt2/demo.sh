# The README's first command: examples/gpt2/fsdp_cpu.ini trains GPT-2 (tiny) on 2 ranks with
# FULL_SHARD in under a minute, the loss falls, rank 0 logs its progress, evaluates on the held-out
# 5% after every epoch (HF's eval line; the eval loss falls too) and ends with HF's summary line,
# each rank reports fsdp_enabled, world_size, parameters, peak memory and final loss, and a FULL
# checkpoint, trainer_state.json and loss.svg are saved.
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
expect_in "$out" "[rank0]: gpt2: eval data: " "the task holds texts out for evaluation"
evals=$(grep -o "^\[rank0\]: {'eval_loss': [0-9.]*, 'eval_perplexity': [0-9.]*, .*'epoch': [0-9.]*}$" <<<"$out")
if [ "${SANITIZED:-0}" != 1 ]; then
    expect_eq "$(sed 's/.*epoch.: //' <<<"$evals" | tr '\n' ' ')" "1.0} 2.0} " "an eval line after each of the 2 epochs"
    e1=$(head -1 <<<"$evals" | sed "s/.*'eval_loss': \([0-9.]*\),.*/\1/") e2=$(tail -1 <<<"$evals" | sed "s/.*'eval_loss': \([0-9.]*\),.*/\1/")
    echo "demo: eval_loss $e1 (epoch 1) -> $e2 (epoch 2)"
    expect_eq "$(awk -v a="$e1" -v b="$e2" 'BEGIN { print (b < a) ? 1 : 0 }')" 1 "the eval loss falls ($e1 -> $e2)"
else
    expect_eq "$(grep -c . <<<"$evals")" 1 "an eval line at the end"
fi
expect_in "$out" "[rank0]: {'train_runtime': " "HF's summary line"
for f in trainer_state.json loss.svg; do [ -s "$T/out/$f" ] && pass || fail "output_dir/$f is written"; done
if [ "${SANITIZED:-0}" != 1 ]; then
    expect_eq "$(awk -v s="$secs" 'BEGIN { print (s < 60) ? 1 : 0 }')" 1 "the demo takes under a minute (${secs}s)"
fi
done_checks
