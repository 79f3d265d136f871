/*
 * Formatting commands in the Redis protocol (RESP). The loop thread formats
 * one command per round; hiredis's formatter grows an sds string and calls
 * snprintf for every argument's length, which a profile showed to be most
 * of the loop's work per operation. The arguments are known and short, so
 * one pass with precomputed lengths does it.
 */
#ifndef RL_RESP_H
#define RL_RESP_H

#include <stddef.h>

/* The size of argv formatted as a RESP array of bulk strings. */
size_t rl_resp_size(int argc, const char **argv, const size_t *argvlen);

/* Writes it to buf (rl_resp_size bytes) and returns that size. */
size_t rl_resp_write(char *buf, int argc, const char **argv,
                     const size_t *argvlen);

#endif
