# Shared by the BLOOM task's tests: GPT-2's test helpers (tests/gpt2/lib.sh: the integration-test
# helpers, corpus, result) plus a job-file writer for models/bloom and the PyTorch reference.
. "$(dirname "$0")/../gpt2/lib.sh"
if [ ! -f "$BUILD/examples/bloom.so" ]; then
    echo "FAIL: no BLOOM task at $BUILD/examples/bloom.so; build the whole tree (cmake --build $BUILD)" >&2
    exit 1
fi
TORCH_BLOOM="torch_py $SRC/tests/bloom/bloom_torch.py"

# bloom_job FILE [accelerate key lines...] < [task] lines: a job training models/bloom with the
# torch and accelerate plugins, by default FULL_SHARD with one unit per BloomBlock
bloom_job() {
    local f=$1
    shift
    [ $# -gt 0 ] || set -- "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = BloomBlock"
    {
        printf '[shardrun]\ntask = %s\nplugins = torch,accelerate\n\n[accelerate]\n' "$BUILD/examples/bloom.so"
        printf '%s\n' "$@"
        printf '\n[task]\n'
        cat
    } >"$T/$f"
}
