/* The shardrun executable: everything lives in libshardrun, which tasks link against too. */
#include "shardrun/main.h"

int main(int argc, char **argv) { return sr_main(argc, argv); }
