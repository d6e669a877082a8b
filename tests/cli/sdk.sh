# The SDK as a user meets it: `cmake --install` into a prefix, then, against that prefix only (no
# path into the build or source tree anywhere), the three out-of-tree examples of examples/sdk as
# installed under share/: a main task (Makefile + pkg-config), a model task (CMake +
# find_package(shardrun)) and a plugin (Makefile + pkg-config), each built and run from an unrelated
# current folder; the installed shardrun runs without LD_LIBRARY_PATH; relative paths in a job file
# (task, plugin_path, tasks_path) are the job file's.
. "$(dirname "$0")/lib.sh"
P=$T/prefix
run cmake --install "$BUILD" --prefix "$P"
expect_rc 0 "cmake --install into a prefix"
unset LD_LIBRARY_PATH
export PATH=$P/bin:$PATH PKG_CONFIG_PATH=$P/lib/pkgconfig

echo "== the installed tree"
run "$P/bin/shardrun" --version
expect_rc 0 "bin/shardrun starts with no LD_LIBRARY_PATH"
expect_in "$(readelf -d "$P/bin/shardrun")" 'Library runpath: [$ORIGIN/../lib]' "its RUNPATH is relative to itself"
# (the debug information of the binaries names the sources they were compiled from, as any
# unstripped binary does; what the loader and the build tools read must not)
leaks=$(grep -rlIF -e "$BUILD" -e "$SRC" "$P" 2>/dev/null | grep -v '\.md$' || true)
expect_eq "$leaks" "" "no installed text file (pkg-config, CMake package) names the build or source tree"
leaks=$(find "$P" -type f \( -name '*.so' -o -path "$P/bin/*" \) -exec sh -c \
    'readelf -d "$1" 2>/dev/null | grep -E "R(UN)?PATH" | grep -qF -e "$2" -e "$3" && echo "$1"' _ {} "$BUILD" "$SRC" \;)
expect_eq "$leaks" "" "no installed binary's RPATH or RUNPATH names the build or source tree"
expect_eq "$(pkg-config --modversion shardrun)" "$(sed -n 's/^project(shardrun VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")" \
    "pkg-config finds shardrun.pc"
pc() { pkg-config "$@" | sed 's/ *$//'; } # (pkgconf ends --cflags and --libs with a space)
expect_eq "$(pc --cflags shardrun)" "-I$P/include" "pkg-config --cflags: a clean path"
expect_eq "$(pc --libs shardrun)" "-L$P/lib -lshardrun" "pkg-config --libs: a clean path"
expect_eq "$(pc --variable=tasksdir shardrun)" "$P/lib/shardrun/tasks" "pkg-config --variable=tasksdir: a clean path"
# a tree moved elsewhere: pkg-config --define-prefix finds the prefix from where the .pc lies
mkdir "$T/moved"
cp -a "$P/lib" "$P/include" "$T/moved/"
expect_eq "$(PKG_CONFIG_PATH=$T/moved/lib/pkgconfig pc --define-prefix --cflags shardrun)" "-I$T/moved/include" \
    "the .pc of a moved tree, with --define-prefix: --cflags"
expect_eq "$(PKG_CONFIG_PATH=$T/moved/lib/pkgconfig pc --define-prefix --variable=tasksdir shardrun)" \
    "$T/moved/lib/shardrun/tasks" "the .pc of a moved tree, with --define-prefix: tasksdir"
rm -rf "$T/moved"
mkdir -p "$T/elsewhere"
cd "$T/elsewhere" || exit 1
run shardrun "$P/share/shardrun/examples/hello/hello.ini"
expect_rc 0 "the installed hello.ini runs (its task a bare name, found in lib/shardrun/tasks)"
expect_in "$out" '"rank_sum": 1' "hello's all-reduce"

echo "== every installed example job file: its task installed, the CPU ones run (tests/installed_examples.sh)"
run bash "$SRC/tests/installed_examples.sh" "$P/bin/shardrun" "$P/share/shardrun/examples" "$P/lib/shardrun/tasks"
expect_rc 0 "every installed example job file names an installed task, and the CPU ones run: $out"
echo "$out" | tail -1

echo "== out-of-tree examples, built against the prefix"
cp -r "$P/share/shardrun/examples/sdk" "$T/sdk"
run make -C "$T/sdk/main_task"
expect_rc 0 "main task: make with pkg-config ($err)"
run shardrun ../sdk/main_task/job.ini
expect_rc 0 "main task: runs from another folder (task = pi_task.so, relative to the job file)"
expect_in "$out" "pi is about 3.1415926535" "main task: the all-reduced integral"

run cmake -S "$T/sdk/model_task" -B "$T/sdk/model_task/build" -DCMAKE_PREFIX_PATH="$P"
expect_rc 0 "model task: cmake finds the shardrun package ($err)"
run cmake --build "$T/sdk/model_task/build"
expect_rc 0 "model task: builds with shardrun_task() ($out)"
run shardrun "$T/sdk/model_task/job.ini"
expect_rc 0 "model task: trains under FSDP on 2 ranks"
expect_in "$out" "FSDP FULL_SHARD on 2 ranks (shard group 2, replicas 1): 2 units (2 wrapped)" "model task: one unit per Linear"
first=$(grep -o 'step 16/64  loss [0-9.]*' <<<"$out" | awk '{print $4}')
last=$(grep -o 'step 64/64  loss [0-9.]*' <<<"$out" | awk '{print $4}')
/usr/bin/python3 -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if b < a else 1)" "$first" "$last" \
    && pass || fail "model task: the loss falls (step 16: $first, step 64: $last)"
expect_in "$out" "'eval_loss': " "model task: evaluates"
expect_not_in "$out" "eval_perplexity" "model task: an MSE loss (sr_model_eval.cross_entropy unset) has no eval_perplexity"

run make -C "$T/sdk/plugin"
expect_rc 0 "plugin: make with pkg-config --cflags ($err)"
run shardrun ../sdk/plugin/job.ini
expect_rc 0 "plugin: found through plugin_path = . (the job file's folder), from another folder"
expect_in "$out" "[rank1]: rank 1: tag baseline, seed 101" "plugin: wrote its variables into each worker"
run shardrun ../sdk/plugin/job.ini --set mylab.tag="a b"
expect_rc 2 "plugin: its validate() refuses a bad value"
expect_in "$err" "no spaces or slashes" "plugin: with its message"

echo "== tasks_path is the job file's too"
mkdir -p "$T/jobs/lib"
cp "$T/sdk/main_task/pi_task.so" "$T/jobs/lib/"
printf '[shardrun]\ntask = pi_task\ntasks_path = lib\nplugins = torch\nnproc_per_node = 2\n[task]\nintervals = 1000000\n' >"$T/jobs/pi.ini"
run shardrun ../jobs/pi.ini
expect_rc 0 "a bare task name found in tasks_path = lib, relative to the job file"
done_checks
