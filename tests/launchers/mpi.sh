# shardrun under real MPI launchers, one process per rank, as an MPI user starts it:
# Open MPI's `mpirun -np N shardrun job.ini` and MPICH's `mpiexec.hydra -n N shardrun job.ini` form ONE
# world of N ranks (not N separate runs of the job file's nproc_per_node), print one results list,
# and write --results once; a launcher together with --nproc-per-node, or MPICH (no job id in the
# environment) with master_port = 0, is a configuration error (exit 2) named before anything starts.
. "$(dirname "$0")/lib.sh"
need_command "$OMPI_MPIRUN" openmpi-bin
need_command "$MPICH_MPIEXEC" mpich
HELLO=examples/hello/hello.ini # nproc_per_node = 2, master_port = 0; relative: run from $SRC
cd "$SRC" || exit 1

# the harness itself: both launchers start processes here
run ompi 2 hostname
expect_eq "$rc/$(count_lines .)" "0/2" "harness: Open MPI's mpirun runs 2 processes ($err)"
run mpich 2 hostname
expect_eq "$rc/$(count_lines .)" "0/2" "harness: MPICH's mpiexec.hydra runs 2 processes ($err)"

# a. Open MPI, 2 processes: one world of 2
run ompi 2 "$SHARDRUN" "$HELLO"
expect_rc 0 "a. mpirun -np 2 shardrun hello.ini"
expect_world "$out" "a. mpirun -np 2" 2
expect_in "$(grep 'hello from rank 1 ' <<<"$out")" "(local rank 1 of 2, node 0 of 1)" "a. rank 1 is local rank 1 of 2 on the only node"

# b. the same with --results: the file is written once, by the run, with both ranks
run ompi 2 "$SHARDRUN" "$HELLO" --results "$T/r.json"
expect_rc 0 "b. mpirun -np 2 shardrun hello.ini --results FILE"
if [ -f "$T/r.json" ]; then
    pass
    /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/r.json" 2>/dev/null && pass ||
        fail "b. $T/r.json is not valid JSON: $(head -c 400 "$T/r.json")"
    expect_eq "$(results_ranks "$T/r.json")" "[0, 1]" "b. the --results file holds ranks 0 and 1 once each"
    files=("$T"/r.json*)
    expect_eq "${#files[@]}" 1 "b. one results file, no leftovers (${files[*]})"
else
    fail "b. no results file $T/r.json"
fi
expect_eq "$(results_lists)" 1 "b. one results list on stdout too"

# c. mpirun already made each process one rank: --nproc-per-node contradicts it
t0=$(now_ns)
run ompi 2 "$SHARDRUN" "$HELLO" --nproc-per-node 1
ms=$(elapsed_ms "$t0")
expect_rc 2 "c. mpirun -np 2 shardrun hello.ini --nproc-per-node 1"
expect_in "$err" "--nproc-per-node" "c. the error names the flag"
expect_in "$err" "Open MPI" "c. the error names the launcher"
expect_eq "$(count_lines "hello from rank")" 0 "c. nothing ran"
[ "$ms" -lt 10000 ] && pass || fail "c. the error took ${ms} ms (limit 10000)"

# d. MPICH: no job id in the environment, so no port can be agreed for master_port = 0
t0=$(now_ns)
run mpich 2 "$SHARDRUN" "$HELLO"
ms=$(elapsed_ms "$t0")
expect_rc 2 "d. mpiexec.hydra -n 2 shardrun hello.ini (master_port = 0)"
expect_in "$err" "master_port" "d. the error names master_port"
expect_eq "$(count_lines "hello from rank")" 0 "d. nothing ran"
[ "$ms" -lt 10000 ] && pass || fail "d. the error took ${ms} ms (limit 10000)"
# ... and with a port given, one world of 2
P=$(free_port_pair)
run mpich 2 "$SHARDRUN" "$HELLO" --set shardrun.master_port="$P"
expect_rc 0 "d. mpiexec.hydra -n 2 shardrun hello.ini --set shardrun.master_port=$P"
expect_world "$out" "d. mpiexec.hydra -n 2 with a master port" 2

# e. 3 processes: a world of 3, whatever the job file's nproc_per_node says
run ompi 3 "$SHARDRUN" "$HELLO"
expect_rc 0 "e. mpirun -np 3 shardrun hello.ini"
expect_world "$out" "e. mpirun -np 3" 3
expect_eq "$(count_lines "all_reduce of ranks over gloo: 3 \(expected 3\)")" 3 "e. the 3 ranks all-reduce together"
done_checks
