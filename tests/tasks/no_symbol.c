/* A shared object that is not a task: it exports no shardrun_task. */
int not_a_task(void);
int not_a_task(void) { return 0; }
