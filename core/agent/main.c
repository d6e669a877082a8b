/* The shardrun executable: everything lives in libshardrun, which tasks link against too. */
int sr__cli_main(int argc, char **argv);

int main(int argc, char **argv) { return sr__cli_main(argc, argv); }
