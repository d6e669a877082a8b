# What accelerate would read: the FSDP variables are exactly those docs/environment.md lists for the
# reference job, and they parse with accelerate's own rules (str_to_bool, strategy names, ...).
import os

EXPECTED = {
    "ACCELERATE_USE_FSDP": "true",
    "ACCELERATE_MIXED_PRECISION": "fp16",
    "FSDP_VERSION": "1",
    "FSDP_SHARDING_STRATEGY": "FULL_SHARD",
    "FSDP_AUTO_WRAP_POLICY": "TRANSFORMER_BASED_WRAP",
    "FSDP_TRANSFORMER_CLS_TO_WRAP": "GPT2Block",
    "FSDP_BACKWARD_PREFETCH": "BACKWARD_PRE",
    "FSDP_FORWARD_PREFETCH": "false",
    "FSDP_STATE_DICT_TYPE": "SHARDED_STATE_DICT",
    "FSDP_OFFLOAD_PARAMS": "false",
    "FSDP_USE_ORIG_PARAMS": "true",
    "FSDP_SYNC_MODULE_STATES": "true",
    "FSDP_CPU_RAM_EFFICIENT_LOADING": "true",
    "FSDP_ACTIVATION_CHECKPOINTING": "false",
}
got = {k: v for k, v in os.environ.items() if k.startswith(("FSDP_", "ACCELERATE_"))}
assert got == EXPECTED, {"missing": EXPECTED.keys() - got.keys(), "extra": got.keys() - EXPECTED.keys(),
                         "differ": {k: (got[k], v) for k, v in EXPECTED.items() if k in got and got[k] != v}}


def str_to_bool(value):  # accelerate.utils.environment.str_to_bool
    value = value.lower()
    if value in ("y", "yes", "t", "true", "on", "1"):
        return 1
    if value in ("n", "no", "f", "false", "off", "0"):
        return 0
    raise ValueError(f"invalid truth value {value}")


# accelerate's own checks
assert os.environ.get("ACCELERATE_USE_FSDP", "false") == "true"
assert int(os.environ.get("LOCAL_RANK", -1)) != -1
for k in ("FSDP_FORWARD_PREFETCH", "FSDP_OFFLOAD_PARAMS", "FSDP_USE_ORIG_PARAMS", "FSDP_SYNC_MODULE_STATES",
          "FSDP_CPU_RAM_EFFICIENT_LOADING", "FSDP_ACTIVATION_CHECKPOINTING"):
    str_to_bool(os.environ[k])
strategies = ["FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"]
assert os.environ["FSDP_SHARDING_STRATEGY"] in strategies
assert os.environ["FSDP_TRANSFORMER_CLS_TO_WRAP"].split(",") == ["GPT2Block"]
assert os.environ["FSDP_STATE_DICT_TYPE"] == os.environ["FSDP_STATE_DICT_TYPE"].upper()
assert "TORCHELASTIC_USE_AGENT_STORE" not in os.environ or os.environ["TORCHELASTIC_USE_AGENT_STORE"] != "True"
print(f"fsdp env ok on rank {os.environ['RANK']}")
