# The GPT-2 demo (examples/gpt2/fsdp_cpu.ini: FULL_SHARD on 2 CPU ranks), shortened to 6 steps, run
# twice: by shardrun alone (node mode, the job file's nproc_per_node = 2) and by Open MPI's
# `mpirun -np 2` (one shardrun per rank). Same job, same seed, same data, same 2 ranks: one training
# run each, the same final loss (to 1e-6 relative) and the same checkpoint, byte for byte.
. "$(dirname "$0")/lib.sh"
need_command "$OMPI_MPIRUN" openmpi-bin
if [ ! -f "$BUILD/examples/gpt2.so" ]; then
    fail "no $BUILD/examples/gpt2.so: build with OpenBLAS's OpenMP build (libopenblas-openmp-dev; SHARDRUN_GPT2)"
    done_checks
    exit 1
fi
JOB=$SRC/examples/gpt2/fsdp_cpu.ini
# short NAME: 6 steps, logged every 2, the checkpoint in $T/NAME, the results in $T/NAME.json
short() { args=(--set task.max_steps=6 --set task.logging_steps=2 --set task.output_dir="$T/$1" --results "$T/$1.json"); }

# the plain run
short plain
run timeout -k 5 "$LAUNCH_TIMEOUT" "$SHARDRUN" "$JOB" "${args[@]}"
expect_rc 0 "shardrun fsdp_cpu.ini (6 steps)"
expect_eq "$(results_ranks "$T/plain.json")" "[0, 1]" "plain run: results of ranks 0 and 1"
plain_loss=$(results_field "$T/plain.json" 0 final_loss)

# under mpirun: one shardrun per rank, one training run of 2 ranks
short mpi
run ompi 2 "$SHARDRUN" "$JOB" "${args[@]}"
expect_rc 0 "mpirun -np 2 shardrun fsdp_cpu.ini (6 steps)"
expect_eq "$(results_ranks "$T/mpi.json")" "[0, 1]" "mpirun: the --results file holds ranks 0 and 1 once each"
expect_eq "$(results_lists)" 1 "mpirun: one results list on stdout"
expect_eq "$(results_ranks "$T/.out")" "[0, 1]" "mpirun: stdout's results hold ranks 0 and 1 once each"
# (not anchored: mpirun gives its processes a terminal, so progress lines start with an erase sequence)
expect_eq "$(count_lines '\[rank0\]: step 6/6 ')" 1 "mpirun: one training run (rank 0 logs step 6/6 once)"
expect_eq "$(count_lines 'FSDP FULL_SHARD on 2 ranks')" 1 "mpirun: one FSDP engine description, of 2 ranks"
expect_eq "$(results_field "$T/mpi.json" 0 world_size)" 2 "mpirun: rank 0 trained in a world of 2"
expect_eq "$(results_field "$T/mpi.json" 0 global_step)" 6 "mpirun: rank 0 ran 6 steps"
mpi_loss=$(results_field "$T/mpi.json" 0 final_loss)

# the same training
/usr/bin/python3 -c '
import sys
a, b = float(sys.argv[1]), float(sys.argv[2])
sys.exit(0 if abs(a - b) <= 1e-6 * abs(a) else 1)' "$plain_loss" "$mpi_loss" 2>/dev/null && pass ||
    fail "rank 0's final_loss: plain run [$plain_loss], mpirun [$mpi_loss]: not within 1e-6 relative"
for k in param_sum param_sumsq; do
    expect_eq "$(results_field "$T/mpi.json" 0 "$k")" "$(results_field "$T/plain.json" 0 "$k")" "rank 0's $k: mpirun vs plain"
done
if [ -f "$T/plain/checkpoint-6/model.safetensors" ] && [ -f "$T/mpi/checkpoint-6/model.safetensors" ]; then
    # the tensors, bit for bit (the files' metadata differ: each save has its own checkpoint id)
    /usr/bin/python3 "$SRC/tests/fsdp/compare_params.py" 0 1e-30 "$T/plain/checkpoint-6/model.safetensors" \
        "$T/mpi/checkpoint-6/model.safetensors" >"$T/cmp.txt" && pass ||
        fail "the step-6 checkpoints (model.safetensors) of the plain and mpirun runs differ: $(cat "$T/cmp.txt")"
else
    fail "a step-6 checkpoint is missing: $(ls -d "$T"/plain/checkpoint-* "$T"/mpi/checkpoint-* 2>&1 | tr '\n' ' ')"
fi
echo "gpt2.sh: final_loss plain $plain_loss, mpirun $mpi_loss"
done_checks
