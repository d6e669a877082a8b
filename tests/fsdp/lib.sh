# Shared by the FSDP tests: the integration-test helpers, plus job files for the toy model task.
# Run one by hand from the repository: `bash tests/fsdp/parity.sh` (SRC/BUILD/SHARDRUN default as
# tests/cli/lib.sh says).
. "$(dirname "$0")/../cli/lib.sh"
if [ ! -f "$BUILD/examples/toy.so" ]; then
    echo "FAIL: no toy model task at $BUILD/examples/toy.so; build the whole tree (cmake --build $BUILD)" >&2
    exit 1
fi

# toy_job FILE [accelerate key lines...] < [task] lines: a job training examples/toy on torch +
# accelerate, by default one FSDP unit per block (TRANSFORMER_BASED_WRAP on both block classes)
toy_job() {
    local f=$1
    shift
    [ $# -gt 0 ] || set -- "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock"
    {
        printf '[shardrun]\ntask = %s\nplugins = torch,accelerate\n\n[accelerate]\n' "$BUILD/examples/toy.so"
        printf '%s\n' "$@"
        printf '\n[task]\n'
        cat
    } >"$T/$f"
}
# result NAME: the first rank's reported value of NAME in $out
result() { grep -o "\"$1\": [^,}]*" <<<"$out" | head -1 | sed 's/.*: //'; }
