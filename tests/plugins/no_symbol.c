/* A shared object without the shardrun_plugin symbol. */
int some_other_symbol(void);
int some_other_symbol(void) { return 1; }
