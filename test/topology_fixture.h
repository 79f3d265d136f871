/*
 * Replies captured from real servers, for the unit tests of the cluster
 * and Sentinel logic (lib/slot, slotmap, redirect, route, sentinel_proto).
 * test_topology_replies.c runs a real 3+3 cluster and a real Sentinel
 * setup (harness_cluster.h, harness_sentinel.h), sends each command on a
 * plain socket and keeps the exact bytes of each reply; with
 * RT_CAPTURE_OUT=path it writes them into a C file, and the committed
 * copy of that file is test/topology_replies.c. The unit tests feed those
 * bytes through hiredis's redisReader, as the library's connection layer
 * does, so they test the parsers on what Redis 7.0.15 really sends,
 * without a server.
 *
 * Along with the replies, the capture keeps CLUSTER NODES of the same
 * node at the same moment: an independent description of the cluster
 * (another command, another format) that the tests check the slot maps
 * against, slot by slot.
 */
#ifndef RT_TOPOLOGY_FIXTURE_H
#define RT_TOPOLOGY_FIXTURE_H

#include <hiredis/hiredis.h>
#include <stddef.h>

typedef struct rt_capture {
  const char *name;    /* "fresh.shards", "err.moved", ... */
  int port;            /* the server it was asked of */
  const char *command; /* the command, for the record */
  const char *bytes;   /* the reply as read from the socket */
  size_t len;
} rt_capture;

typedef struct rt_capture_int {
  const char *name; /* "migration.slot", ... */
  long long value;
} rt_capture_int;

typedef struct rt_keyslot_case {
  const char *key; /* any bytes */
  size_t len;
  int slot;        /* CLUSTER KEYSLOT's answer */
} rt_keyslot_case;

/* The generated tables (test/topology_replies.c). */
extern const char rt_captured_from[];
extern const rt_capture rt_captures[];
extern const size_t rt_ncaptures;
extern const rt_capture_int rt_capture_ints[];
extern const size_t rt_ncapture_ints;
extern const rt_keyslot_case rt_keyslots[];
extern const size_t rt_nkeyslots;

/* One whole reply from RESP bytes through hiredis's redisReader: the
 * reply (free it with freeReplyObject), or NULL if the bytes are not
 * exactly one complete reply. */
redisReply *rt_resp_parse(const char *bytes, size_t len);

/* The capture of that name, or NULL. */
const rt_capture *rt_capture_find(const char *name);
/* Its reply, parsed; NULL (with a note on stderr) if absent or broken. */
redisReply *rt_capture_reply(const char *name);
/* A captured number; LLONG_MIN if absent. */
long long rt_capture_get_int(const char *name);

/*
 * Damages a reply tree in every way a parser must survive, one node and
 * one way at a time, and calls fn on each damaged tree: each node in turn
 * becomes nil, an integer (-1, 16384, 2^40), a string ("", "x", one with
 * a NUL inside), a status "?", an error, an empty array, or (an array)
 * loses its last element. The tree is restored after each call. Returns
 * how many trees fn saw.
 */
long rt_mutate_each(redisReply *root,
                    void (*fn)(const redisReply *tree, void *data),
                    void *data);

/* A cluster as CLUSTER NODES describes it. */
#define RT_VIEW_MAX 16
typedef struct rt_view_node {
  char id[41];
  char host[256]; /* the ip of "ip:port@cport[,hostname]" */
  int port;
  int primary;    /* flags say master */
  int failed;     /* flags say fail */
  char master[41]; /* a replica's primary id, else "" */
} rt_view_node;

typedef struct rt_view {
  int n;
  rt_view_node node[RT_VIEW_MAX];
  short owner[16384]; /* node index, or -1 */
} rt_view;

/* Parses CLUSTER NODES text. Slots in migration ("[N->-id]", "[N-<-id]")
 * keep their owner. 0, or -1 on a line it cannot read. */
int rt_view_parse(const char *text, size_t len, rt_view *v);
/* The index of a node by id, or -1. */
int rt_view_find(const rt_view *v, const char *id);

#endif
