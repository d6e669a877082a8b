/* A plugin claiming a future ABI version. */
#include "shardrun/plugin.h"

__attribute__((visibility("default")))
const sr_plugin shardrun_plugin = {.abi_version = 99, .struct_size = sizeof(sr_plugin), .name = "bad_abi"};
