/*
 * Replies of real servers (redis_version:7.0.15), captured on 2026-11-22
 * by test/test_topology_replies.c with RT_CAPTURE_OUT=this file, from
 * the harness's 3+3 cluster and Sentinel setup on 127.0.0.1: the exact
 * bytes each server sent, read from a plain socket. Generated: to
 * refresh it, run that test again rather than edit it. The unit tests
 * read it through topology_fixture.h.
 */
#include "topology_fixture.h"

const char rt_captured_from[] = "redis_version:7.0.15, 2026-11-22";

const rt_capture rt_captures[] = {
  {"fresh.shards", 35383, "CLUSTER SHARDS",
    "*3\r\n*4\r\n$5\r\nslots\r\n*2\r\n:10923\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n*14\r\n"
    "$2\r\nid\r\n$40\r\n716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n$4\r\n"
    "port\r\n:50941\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n"
    "$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n"
    "$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n"
    "$4\r\nport\r\n:51069\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":0\r\n$6\r\nhealth\r\n$7\r\nloading\r\n*4\r\n$5\r\nslots\r\n*2\r\n:5461\r\n:10922\r\n"
    "$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "$4\r\nport\r\n:36203\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "$4\r\nport\r\n:34835\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":0\r\n$6\r\nhealth\r\n$7\r\nloading\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:5460\r\n"
    "$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "$4\r\nport\r\n:35383\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "$4\r\nport\r\n:42053\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":0\r\n$6\r\nhealth\r\n$7\r\nloading\r\n",
    1384},
  {"fresh.slots", 35383, "CLUSTER SLOTS",
    "*3\r\n*3\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:35383\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "*0\r\n*3\r\n:5461\r\n:10922\r\n*4\r\n$9\r\n127.0.0.1\r\n:36203\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "*0\r\n*3\r\n:10923\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:50941\r\n$40\r\n"
    "716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n*0\r\n",
    292},
  {"fresh.nodes", 35383, "CLUSTER NODES",
    "$751\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b 127.0.0.1:34835@44835 slave 9ea35213214b382d4dc009419fd675c60cf81cb0 0 1795366629944 2 connected\n"
    "716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9 127.0.0.1:50941@60941 master - 0 1795366629945 3 connected 10923-16383\n"
    "9ea35213214b382d4dc009419fd675c60cf81cb0 127.0.0.1:36203@46203 master - 0 1795366630000 2 connected 5461-10922\n"
    "f4b8664ee2090535763701dd4dadca707bbf2e49 127.0.0.1:51069@61069 slave 716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9 0 1795366629945 3 connected\n"
    "ba77823a6c33cf25d551a6a29717de93e387816e 127.0.0.1:35383@45383 myself,master - 0 1795366630000 1 connected 0-5460\n"
    "ac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b 127.0.0.1:42053@52053 slave ba77823a6c33cf25d551a6a29717de93e387816e 0 1795366630549 1 connected\n"
    "\r\n",
    759},
  {"steady.shards", 35383, "CLUSTER SHARDS",
    "*3\r\n*4\r\n$5\r\nslots\r\n*2\r\n:10923\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n*14\r\n"
    "$2\r\nid\r\n$40\r\n716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n$4\r\n"
    "port\r\n:50941\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n"
    "$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:89\r\n$6\r\n"
    "health\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n"
    "$4\r\nport\r\n:51069\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*2\r\n:5461\r\n:10922\r\n"
    "$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "$4\r\nport\r\n:36203\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "$4\r\nport\r\n:34835\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:5460\r\n"
    "$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "$4\r\nport\r\n:35383\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "$4\r\nport\r\n:42053\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n",
    1387},
  {"steady.slots", 35383, "CLUSTER SLOTS",
    "*3\r\n*4\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:35383\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:42053\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "*0\r\n*4\r\n:5461\r\n:10922\r\n*4\r\n$9\r\n127.0.0.1\r\n:36203\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:34835\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "*0\r\n*4\r\n:10923\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:50941\r\n$40\r\n"
    "716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n*0\r\n*4\r\n$9\r\n127.0.0.1\r\n"
    ":51069\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n*0\r\n",
    526},
  {"steady.nodes", 35383, "CLUSTER NODES",
    "$751\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b 127.0.0.1:34835@44835 slave 9ea35213214b382d4dc009419fd675c60cf81cb0 0 1795366630952 2 connected\n"
    "716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9 127.0.0.1:50941@60941 master - 0 1795366630952 3 connected 10923-16383\n"
    "9ea35213214b382d4dc009419fd675c60cf81cb0 127.0.0.1:36203@46203 master - 0 1795366631053 2 connected 5461-10922\n"
    "f4b8664ee2090535763701dd4dadca707bbf2e49 127.0.0.1:51069@61069 slave 716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9 0 1795366630952 3 connected\n"
    "ba77823a6c33cf25d551a6a29717de93e387816e 127.0.0.1:35383@45383 myself,master - 0 1795366630000 1 connected 0-5460\n"
    "ac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b 127.0.0.1:42053@52053 slave ba77823a6c33cf25d551a6a29717de93e387816e 0 1795366630549 1 connected\n"
    "\r\n",
    759},
  {"err.moved", 36203, "GET e:2",
    "-MOVED 3284 127.0.0.1:35383\r\n",
    29},
  {"err.crossslot", 35383, "MSET e:2 1 f:3 2",
    "-CROSSSLOT Keys in request don't hash to the same slot\r\n",
    56},
  {"err.nonlocal", 35383, "EVAL #!lua flags=allow-cross-slot-keys|redis.call('set',ARGV[1],'x') return redis.call('set',ARGV[2],'y') 0 e:2 e:3",
    "-ERR Script attempted to access a non local key in a cluster node script: 5a476f2c5d7361410075e5d4f29962e815d9794e, on @user_script:2.\r\n",
    136},
  {"script.pcall_batch", 35383, "EVAL #!lua flags=allow-cross-slot-keys|local out = {}|for i = 1, #ARGV do|  local r = redis.pcall('pexpire', ARGV[i], 60000)|  if type(r) == 'table' and r.err then out[i] = r.err else out[i] = r end|end|return out 0 e:2 e:3 f:3",
    "*3\r\n:1\r\n$64\r\nERR Script attempted to access a non local key in a cluster node\r\n"
    ":1\r\n",
    83},
  {"err.clusterdown_unserved", 35383, "GET e:2",
    "-CLUSTERDOWN Hash slot not served\r\n",
    35},
  {"migrating.shards", 35383, "CLUSTER SHARDS",
    "*3\r\n*4\r\n$5\r\nslots\r\n*2\r\n:10923\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n*14\r\n"
    "$2\r\nid\r\n$40\r\n716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n$4\r\n"
    "port\r\n:50941\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n"
    "$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:89\r\n$6\r\n"
    "health\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n"
    "$4\r\nport\r\n:51069\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*2\r\n:5461\r\n:10922\r\n"
    "$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "$4\r\nport\r\n:36203\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "$4\r\nport\r\n:34835\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:5460\r\n"
    "$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "$4\r\nport\r\n:35383\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":367\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "$4\r\nport\r\n:42053\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n",
    1388},
  {"migrating.slots", 35383, "CLUSTER SLOTS",
    "*3\r\n*4\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:35383\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:42053\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "*0\r\n*4\r\n:5461\r\n:10922\r\n*4\r\n$9\r\n127.0.0.1\r\n:36203\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:34835\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "*0\r\n*4\r\n:10923\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:50941\r\n$40\r\n"
    "716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n*0\r\n*4\r\n$9\r\n127.0.0.1\r\n"
    ":51069\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n*0\r\n",
    526},
  {"migrating.nodes", 35383, "CLUSTER NODES",
    "$801\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b 127.0.0.1:34835@44835 slave 9ea35213214b382d4dc009419fd675c60cf81cb0 0 1795366630952 2 connected\n"
    "716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9 127.0.0.1:50941@60941 master - 0 1795366630952 3 connected 10923-16383\n"
    "9ea35213214b382d4dc009419fd675c60cf81cb0 127.0.0.1:36203@46203 master - 0 1795366631053 2 connected 5461-10922\n"
    "f4b8664ee2090535763701dd4dadca707bbf2e49 127.0.0.1:51069@61069 slave 716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9 0 1795366630952 3 connected\n"
    "ba77823a6c33cf25d551a6a29717de93e387816e 127.0.0.1:35383@45383 myself,master - 0 1795366630000 1 connected 0-5460 [1335->-9ea35213214b382d4dc009419fd675c60cf81cb0]\n"
    "ac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b 127.0.0.1:42053@52053 slave ba77823a6c33cf25d551a6a29717de93e387816e 0 1795366630549 1 connected\n"
    "\r\n",
    809},
  {"err.ask", 35383, "GET {m:0}:a",
    "-ASK 1335 127.0.0.1:36203\r\n",
    27},
  {"script.pcall_migrating", 35383, "EVAL #!lua flags=allow-cross-slot-keys|local out = {}|for i = 1, #ARGV do|  local r = redis.pcall('pexpire', ARGV[i], 60000)|  if type(r) == 'table' and r.err then out[i] = r.err else out[i] = r end|end|return out 0 {m:0}:a {m:0}:b",
    "*2\r\n$64\r\nERR Script attempted to access a non local key in a cluster node\r\n"
    ":1\r\n",
    79},
  {"err.tryagain", 35383, "MGET {m:0}:a {m:0}:b",
    "-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
    58},
  {"err.moved_by_target", 36203, "GET {m:0}:a",
    "-MOVED 1335 127.0.0.1:35383\r\n",
    29},
  {"migrated.shards", 35383, "CLUSTER SHARDS",
    "*3\r\n*4\r\n$5\r\nslots\r\n*2\r\n:10923\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n*14\r\n"
    "$2\r\nid\r\n$40\r\n716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n$4\r\n"
    "port\r\n:50941\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n"
    "$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:89\r\n$6\r\n"
    "health\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n"
    "$4\r\nport\r\n:51069\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*4\r\n:1335\r\n:1335\r\n"
    ":5461\r\n:10922\r\n$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "$4\r\nport\r\n:36203\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":244\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "$4\r\nport\r\n:34835\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*4\r\n:0\r\n:1334\r\n"
    ":1336\r\n:5460\r\n$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "$4\r\nport\r\n:35383\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":471\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "$4\r\nport\r\n:42053\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n",
    1417},
  {"migrated.slots", 35383, "CLUSTER SLOTS",
    "*5\r\n*4\r\n:0\r\n:1334\r\n*4\r\n$9\r\n127.0.0.1\r\n:35383\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:42053\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "*0\r\n*4\r\n:1335\r\n:1335\r\n*4\r\n$9\r\n127.0.0.1\r\n:36203\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:34835\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "*0\r\n*4\r\n:1336\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:35383\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:42053\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "*0\r\n*4\r\n:5461\r\n:10922\r\n*4\r\n$9\r\n127.0.0.1\r\n:36203\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:34835\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "*0\r\n*4\r\n:10923\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:50941\r\n$40\r\n"
    "716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n*0\r\n*4\r\n$9\r\n127.0.0.1\r\n"
    ":51069\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n*0\r\n",
    874},
  {"migrated.nodes", 35383, "CLUSTER NODES",
    "$766\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b 127.0.0.1:34835@44835 slave 9ea35213214b382d4dc009419fd675c60cf81cb0 0 1795366631000 7 connected\n"
    "716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9 127.0.0.1:50941@60941 master - 0 1795366630952 3 connected 10923-16383\n"
    "9ea35213214b382d4dc009419fd675c60cf81cb0 127.0.0.1:36203@46203 master - 0 1795366631053 7 connected 1335 5461-10922\n"
    "f4b8664ee2090535763701dd4dadca707bbf2e49 127.0.0.1:51069@61069 slave 716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9 0 1795366630952 3 connected\n"
    "ba77823a6c33cf25d551a6a29717de93e387816e 127.0.0.1:35383@45383 myself,master - 0 1795366630000 1 connected 0-1334 1336-5460\n"
    "ac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b 127.0.0.1:42053@52053 slave ba77823a6c33cf25d551a6a29717de93e387816e 0 1795366631000 1 connected\n"
    "\r\n",
    774},
  {"failover.shards", 35383, "CLUSTER SHARDS",
    "*3\r\n*4\r\n$5\r\nslots\r\n*4\r\n:1335\r\n:1335\r\n:5461\r\n:10922\r\n$5\r\nnodes\r\n"
    "*2\r\n*14\r\n$2\r\nid\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "$4\r\nport\r\n:36203\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":244\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "$4\r\nport\r\n:34835\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*2\r\n:10923\r\n"
    ":16383\r\n$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n"
    "$4\r\nport\r\n:51069\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\n716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n"
    "$4\r\nport\r\n:50941\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*4\r\n:0\r\n:1334\r\n"
    ":1336\r\n:5460\r\n$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "$4\r\nport\r\n:35383\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":471\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "$4\r\nport\r\n:42053\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n",
    1417},
  {"failover.slots", 35383, "CLUSTER SLOTS",
    "*5\r\n*4\r\n:0\r\n:1334\r\n*4\r\n$9\r\n127.0.0.1\r\n:35383\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:42053\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "*0\r\n*4\r\n:1335\r\n:1335\r\n*4\r\n$9\r\n127.0.0.1\r\n:36203\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:34835\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "*0\r\n*4\r\n:1336\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:35383\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:42053\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "*0\r\n*4\r\n:5461\r\n:10922\r\n*4\r\n$9\r\n127.0.0.1\r\n:36203\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:34835\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "*0\r\n*4\r\n:10923\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:51069\r\n$40\r\n"
    "f4b8664ee2090535763701dd4dadca707bbf2e49\r\n*0\r\n*4\r\n$9\r\n127.0.0.1\r\n"
    ":50941\r\n$40\r\n716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n*0\r\n",
    874},
  {"failover.nodes", 35383, "CLUSTER NODES",
    "$766\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b 127.0.0.1:34835@44835 slave 9ea35213214b382d4dc009419fd675c60cf81cb0 0 1795366631000 7 connected\n"
    "716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9 127.0.0.1:50941@60941 slave f4b8664ee2090535763701dd4dadca707bbf2e49 0 1795366631558 8 connected\n"
    "9ea35213214b382d4dc009419fd675c60cf81cb0 127.0.0.1:36203@46203 master - 0 1795366631053 7 connected 1335 5461-10922\n"
    "f4b8664ee2090535763701dd4dadca707bbf2e49 127.0.0.1:51069@61069 master - 0 1795366631000 8 connected 10923-16383\n"
    "ba77823a6c33cf25d551a6a29717de93e387816e 127.0.0.1:35383@45383 myself,master - 0 1795366631000 1 connected 0-1334 1336-5460\n"
    "ac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b 127.0.0.1:42053@52053 slave ba77823a6c33cf25d551a6a29717de93e387816e 0 1795366631000 1 connected\n"
    "\r\n",
    774},
  {"err.clusterdown", 35383, "GET kd:1",
    "-CLUSTERDOWN The cluster is down\r\n",
    34},
  {"script.pcall_down", 35383, "EVAL #!lua flags=allow-cross-slot-keys|local out = {}|for i = 1, #ARGV do|  local r = redis.pcall('pexpire', ARGV[i], 60000)|  if type(r) == 'table' and r.err then out[i] = r.err else out[i] = r end|end|return out 0 kd:1",
    "*1\r\n$67\r\nERR Script attempted to execute a command while the cluster is down\r\n",
    78},
  {"killed.shards", 35383, "CLUSTER SHARDS",
    "*4\r\n*4\r\n$5\r\nslots\r\n*4\r\n:1335\r\n:1335\r\n:5461\r\n:10922\r\n$5\r\nnodes\r\n"
    "*1\r\n*14\r\n$2\r\nid\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "$4\r\nport\r\n:34835\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":244\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*0\r\n$5\r\nnodes\r\n"
    "*1\r\n*14\r\n$2\r\nid\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "$4\r\nport\r\n:36203\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":244\r\n$6\r\nhealth\r\n$4\r\nfail\r\n*4\r\n$5\r\nslots\r\n*2\r\n:10923\r\n:16383\r\n"
    "$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n"
    "$4\r\nport\r\n:51069\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\n716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n"
    "$4\r\nport\r\n:50941\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*4\r\n:0\r\n:1334\r\n"
    ":1336\r\n:5460\r\n$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "$4\r\nport\r\n:35383\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n"
    ":471\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "$4\r\nport\r\n:42053\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n"
    ":471\r\n$6\r\nhealth\r\n$6\r\nonline\r\n",
    1450},
  {"killed.slots", 35383, "CLUSTER SLOTS",
    "*5\r\n*4\r\n:0\r\n:1334\r\n*4\r\n$9\r\n127.0.0.1\r\n:35383\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:42053\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "*0\r\n*3\r\n:1335\r\n:1335\r\n*4\r\n$9\r\n127.0.0.1\r\n:34835\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "*0\r\n*4\r\n:1336\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:35383\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:42053\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "*0\r\n*3\r\n:5461\r\n:10922\r\n*4\r\n$9\r\n127.0.0.1\r\n:34835\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "*0\r\n*4\r\n:10923\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:51069\r\n$40\r\n"
    "f4b8664ee2090535763701dd4dadca707bbf2e49\r\n*0\r\n*4\r\n$9\r\n127.0.0.1\r\n"
    ":50941\r\n$40\r\n716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n*0\r\n",
    718},
  {"killed.nodes", 35383, "CLUSTER NODES",
    "$748\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b 127.0.0.1:34835@44835 master - 0 1795366635091 9 connected 1335 5461-10922\n"
    "716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9 127.0.0.1:50941@60941 slave f4b8664ee2090535763701dd4dadca707bbf2e49 0 1795366635000 8 connected\n"
    "9ea35213214b382d4dc009419fd675c60cf81cb0 127.0.0.1:36203@46203 master,fail - 1795366632063 1795366631053 7 disconnected\n"
    "f4b8664ee2090535763701dd4dadca707bbf2e49 127.0.0.1:51069@61069 master - 0 1795366634585 8 connected 10923-16383\n"
    "ba77823a6c33cf25d551a6a29717de93e387816e 127.0.0.1:35383@45383 myself,master - 0 1795366634000 1 connected 0-1334 1336-5460\n"
    "ac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b 127.0.0.1:42053@52053 slave ba77823a6c33cf25d551a6a29717de93e387816e 0 1795366635091 1 connected\n"
    "\r\n",
    756},
  {"hostname.shards", 35383, "CLUSTER SHARDS",
    "*3\r\n*4\r\n$5\r\nslots\r\n*4\r\n:1335\r\n:1335\r\n:5461\r\n:10922\r\n$5\r\nnodes\r\n"
    "*2\r\n*16\r\n$2\r\nid\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "$4\r\nport\r\n:34835\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$21\r\n"
    "node-34835.rlock.test\r\n$8\r\nhostname\r\n$21\r\nnode-34835.rlock.test\r\n"
    "$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:244\r\n$6\r\n"
    "health\r\n$6\r\nonline\r\n*16\r\n$2\r\nid\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "$4\r\nport\r\n:36203\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$21\r\n"
    "node-36203.rlock.test\r\n$8\r\nhostname\r\n$21\r\nnode-36203.rlock.test\r\n"
    "$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n:244\r\n$6\r\n"
    "health\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*2\r\n:10923\r\n:16383\r\n$5\r\n"
    "nodes\r\n*2\r\n*16\r\n$2\r\nid\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n"
    "$4\r\nport\r\n:51069\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$21\r\n"
    "node-51069.rlock.test\r\n$8\r\nhostname\r\n$21\r\nnode-51069.rlock.test\r\n"
    "$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:89\r\n$6\r\n"
    "health\r\n$6\r\nonline\r\n*16\r\n$2\r\nid\r\n$40\r\n716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n"
    "$4\r\nport\r\n:50941\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$21\r\n"
    "node-50941.rlock.test\r\n$8\r\nhostname\r\n$21\r\nnode-50941.rlock.test\r\n"
    "$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n:89\r\n$6\r\n"
    "health\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*4\r\n:0\r\n:1334\r\n:1336\r\n"
    ":5460\r\n$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "$4\r\nport\r\n:35383\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$1\r\n"
    "\?\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:471\r\n"
    "$6\r\nhealth\r\n$6\r\nonline\r\n*16\r\n$2\r\nid\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "$4\r\nport\r\n:42053\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$21\r\n"
    "node-42053.rlock.test\r\n$8\r\nhostname\r\n$21\r\nnode-42053.rlock.test\r\n"
    "$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n:471\r\n$6\r\n"
    "health\r\n$6\r\nonline\r\n",
    1686},
  {"hostname.slots", 35383, "CLUSTER SLOTS",
    "*5\r\n*4\r\n:0\r\n:1334\r\n*4\r\n$1\r\n\?\r\n:35383\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "*2\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n$21\r\nnode-42053.rlock.test\r\n"
    ":42053\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n*2\r\n"
    "$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n:1335\r\n:1335\r\n*4\r\n$21\r\nnode-34835.rlock.test\r\n"
    ":34835\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n*2\r\n"
    "$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n$21\r\nnode-36203.rlock.test\r\n:36203\r\n"
    "$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n*2\r\n$2\r\nip\r\n"
    "$9\r\n127.0.0.1\r\n*4\r\n:1336\r\n:5460\r\n*4\r\n$1\r\n\?\r\n:35383\r\n$40\r\n"
    "ba77823a6c33cf25d551a6a29717de93e387816e\r\n*2\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n*4\r\n$21\r\nnode-42053.rlock.test\r\n:42053\r\n$40\r\n"
    "ac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n*2\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n*4\r\n:5461\r\n:10922\r\n*4\r\n$21\r\nnode-34835.rlock.test\r\n"
    ":34835\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n*2\r\n"
    "$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n$21\r\nnode-36203.rlock.test\r\n:36203\r\n"
    "$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n*2\r\n$2\r\nip\r\n"
    "$9\r\n127.0.0.1\r\n*4\r\n:10923\r\n:16383\r\n*4\r\n$21\r\nnode-51069.rlock.test\r\n"
    ":51069\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n*2\r\n"
    "$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n$21\r\nnode-50941.rlock.test\r\n:50941\r\n"
    "$40\r\n716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n*2\r\n$2\r\nip\r\n"
    "$9\r\n127.0.0.1\r\n",
    1192},
  {"hostname.nodes", 35383, "CLUSTER NODES",
    "$876\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b 127.0.0.1:34835@44835,node-34835.rlock.test master - 0 1795366637116 9 connected 1335 5461-10922\n"
    "716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9 127.0.0.1:50941@60941,node-50941.rlock.test slave f4b8664ee2090535763701dd4dadca707bbf2e49 0 1795366637116 8 connected\n"
    "9ea35213214b382d4dc009419fd675c60cf81cb0 127.0.0.1:36203@46203,node-36203.rlock.test slave a17991156f77fc9d7b2004a21816c29eb45b2a4b 0 1795366636510 9 connected\n"
    "f4b8664ee2090535763701dd4dadca707bbf2e49 127.0.0.1:51069@61069,node-51069.rlock.test master - 0 1795366636611 8 connected 10923-16383\n"
    "ba77823a6c33cf25d551a6a29717de93e387816e 127.0.0.1:35383@45383 myself,master - 0 1795366637000 1 connected 0-1334 1336-5460\n"
    "ac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b 127.0.0.1:42053@52053,node-42053.rlock.test slave ba77823a6c33cf25d551a6a29717de93e387816e 0 1795366637116 1 connected\n"
    "\r\n",
    884},
  {"hostname.moved", 35383, "GET ep:1",
    "-MOVED 12723 node-51069.rlock.test:51069\r\n",
    42},
  {"hostname.moved_unknown", 51069, "GET ep:2",
    "-MOVED 464 \?:35383\r\n",
    20},
  {"unknown.shards", 35383, "CLUSTER SHARDS",
    "*3\r\n*4\r\n$5\r\nslots\r\n*4\r\n:1335\r\n:1335\r\n:5461\r\n:10922\r\n$5\r\nnodes\r\n"
    "*2\r\n*16\r\n$2\r\nid\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "$4\r\nport\r\n:34835\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$0\r\n"
    "\r\n$8\r\nhostname\r\n$21\r\nnode-34835.rlock.test\r\n$4\r\nrole\r\n$6\r\n"
    "master\r\n$18\r\nreplication-offset\r\n:244\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"
    "*16\r\n$2\r\nid\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "$4\r\nport\r\n:36203\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$0\r\n"
    "\r\n$8\r\nhostname\r\n$21\r\nnode-36203.rlock.test\r\n$4\r\nrole\r\n$7\r\n"
    "replica\r\n$18\r\nreplication-offset\r\n:244\r\n$6\r\nhealth\r\n$6\r\n"
    "online\r\n*4\r\n$5\r\nslots\r\n*2\r\n:10923\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n"
    "*16\r\n$2\r\nid\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n"
    "$4\r\nport\r\n:51069\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$0\r\n"
    "\r\n$8\r\nhostname\r\n$21\r\nnode-51069.rlock.test\r\n$4\r\nrole\r\n$6\r\n"
    "master\r\n$18\r\nreplication-offset\r\n:89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"
    "*16\r\n$2\r\nid\r\n$40\r\n716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n"
    "$4\r\nport\r\n:50941\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$0\r\n"
    "\r\n$8\r\nhostname\r\n$21\r\nnode-50941.rlock.test\r\n$4\r\nrole\r\n$7\r\n"
    "replica\r\n$18\r\nreplication-offset\r\n:89\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"
    "*4\r\n$5\r\nslots\r\n*4\r\n:0\r\n:1334\r\n:1336\r\n:5460\r\n$5\r\nnodes\r\n*2\r\n"
    "*14\r\n$2\r\nid\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "$4\r\nport\r\n:35383\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$0\r\n"
    "\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:471\r\n$6\r\n"
    "health\r\n$6\r\nonline\r\n*16\r\n$2\r\nid\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "$4\r\nport\r\n:42053\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$0\r\n"
    "\r\n$8\r\nhostname\r\n$21\r\nnode-42053.rlock.test\r\n$4\r\nrole\r\n$7\r\n"
    "replica\r\n$18\r\nreplication-offset\r\n:471\r\n$6\r\nhealth\r\n$6\r\n"
    "online\r\n",
    1575},
  {"unknown.slots", 35383, "CLUSTER SLOTS",
    "*5\r\n*4\r\n:0\r\n:1334\r\n*4\r\n$-1\r\n:35383\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "*2\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n$-1\r\n:42053\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "*4\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nhostname\r\n$21\r\nnode-42053.rlock.test\r\n"
    "*4\r\n:1335\r\n:1335\r\n*4\r\n$-1\r\n:34835\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "*4\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nhostname\r\n$21\r\nnode-34835.rlock.test\r\n"
    "*4\r\n$-1\r\n:36203\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "*4\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nhostname\r\n$21\r\nnode-36203.rlock.test\r\n"
    "*4\r\n:1336\r\n:5460\r\n*4\r\n$-1\r\n:35383\r\n$40\r\nba77823a6c33cf25d551a6a29717de93e387816e\r\n"
    "*2\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n$-1\r\n:42053\r\n$40\r\nac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b\r\n"
    "*4\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nhostname\r\n$21\r\nnode-42053.rlock.test\r\n"
    "*4\r\n:5461\r\n:10922\r\n*4\r\n$-1\r\n:34835\r\n$40\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b\r\n"
    "*4\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nhostname\r\n$21\r\nnode-34835.rlock.test\r\n"
    "*4\r\n$-1\r\n:36203\r\n$40\r\n9ea35213214b382d4dc009419fd675c60cf81cb0\r\n"
    "*4\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nhostname\r\n$21\r\nnode-36203.rlock.test\r\n"
    "*4\r\n:10923\r\n:16383\r\n*4\r\n$-1\r\n:51069\r\n$40\r\nf4b8664ee2090535763701dd4dadca707bbf2e49\r\n"
    "*4\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nhostname\r\n$21\r\nnode-51069.rlock.test\r\n"
    "*4\r\n$-1\r\n:50941\r\n$40\r\n716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9\r\n"
    "*4\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nhostname\r\n$21\r\nnode-50941.rlock.test\r\n",
    1340},
  {"unknown.nodes", 35383, "CLUSTER NODES",
    "$876\r\na17991156f77fc9d7b2004a21816c29eb45b2a4b 127.0.0.1:34835@44835,node-34835.rlock.test master - 0 1795366637116 9 connected 1335 5461-10922\n"
    "716ad4a11b0a53f76f40a8d9a3282ce50b2da1b9 127.0.0.1:50941@60941,node-50941.rlock.test slave f4b8664ee2090535763701dd4dadca707bbf2e49 0 1795366637116 8 connected\n"
    "9ea35213214b382d4dc009419fd675c60cf81cb0 127.0.0.1:36203@46203,node-36203.rlock.test slave a17991156f77fc9d7b2004a21816c29eb45b2a4b 0 1795366636510 9 connected\n"
    "f4b8664ee2090535763701dd4dadca707bbf2e49 127.0.0.1:51069@61069,node-51069.rlock.test master - 0 1795366636611 8 connected 10923-16383\n"
    "ba77823a6c33cf25d551a6a29717de93e387816e 127.0.0.1:35383@45383 myself,master - 0 1795366637000 1 connected 0-1334 1336-5460\n"
    "ac40bd28d724e6db8a28fc5b62d098f3bb7c8d8b 127.0.0.1:42053@52053,node-42053.rlock.test slave ba77823a6c33cf25d551a6a29717de93e387816e 0 1795366637116 1 connected\n"
    "\r\n",
    884},
  {"unknown.moved", 35383, "GET ep:1",
    "-MOVED 12723 :51069\r\n",
    21},
  {"sentinel.addr", 44817, "SENTINEL GET-MASTER-ADDR-BY-NAME mymaster",
    "*2\r\n$9\r\n127.0.0.1\r\n$5\r\n56307\r\n",
    30},
  {"sentinel.addr_unknown", 44817, "SENTINEL GET-MASTER-ADDR-BY-NAME no-such-name",
    "*-1\r\n",
    5},
  {"role.master", 56307, "ROLE",
    "*3\r\n$6\r\nmaster\r\n:494\r\n*2\r\n*3\r\n$9\r\n127.0.0.1\r\n$5\r\n41519\r\n$3\r\n"
    "457\r\n*3\r\n$9\r\n127.0.0.1\r\n$5\r\n35933\r\n$3\r\n457\r\n",
    104},
  {"role.replica", 41519, "ROLE",
    "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:56307\r\n$9\r\nconnected\r\n:494\r\n",
    59},
  {"role.sentinel", 44817, "ROLE",
    "*2\r\n$8\r\nsentinel\r\n*1\r\n$8\r\nmymaster\r\n",
    36},
  {"err.readonly", 41519, "SET k v",
    "-READONLY You can't write against a read only replica.\r\n",
    56},
  {"err.readonly_script", 41519, "EVAL return redis.call('set',KEYS[1],'v') 1 k",
    "-READONLY You can't write against a read only replica. script: 7b6149474e93dc3661a8a719fd6876221f0e5f0c, on @user_script:1.\r\n",
    125},
  {"err.unknown_command", 44817, "GET x",
    "-ERR unknown command 'GET', with args beginning with: 'x' \r\n",
    60},
  {"wait.reply", 56307, "SET w 1; WAIT 3 300",
    ":2\r\n",
    4},
  {"sentinel.subscribed", 44817, "SUBSCRIBE +switch-master",
    "*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n",
    44},
  {"sentinel.switch", 44817, "(message on +switch-master)",
    "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$40\r\nmymaster 127.0.0.1 56307 127.0.0.1 35933\r\n",
    85},
};
const size_t rt_ncaptures = sizeof rt_captures / sizeof rt_captures[0];

const rt_capture_int rt_capture_ints[] = {
  {"err.moved.slot", 3284},
  {"err.moved.port", 35383},
  {"migration.slot", 1335},
  {"migration.from_port", 35383},
  {"migration.to_port", 36203},
  {"failover.old_port", 50941},
  {"failover.new_port", 51069},
  {"killed.dead_port", 36203},
  {"killed.promoted_port", 34835},
  {"endpoints.plain_port", 35383},
  {"hostname.moved.slot", 12723},
  {"hostname.moved.port", 51069},
  {"hostname.moved_unknown.slot", 464},
  {"hostname.moved_unknown.port", 35383},
  {"unknown.moved.slot", 12723},
  {"unknown.moved.port", 51069},
  {"sentinel.master_port", 56307},
  {"sentinel.replica_port_a", 41519},
  {"sentinel.replica_port_b", 35933},
  {"switch.old_port", 56307},
  {"switch.new_port", 35933},
};
const size_t rt_ncapture_ints =
    sizeof rt_capture_ints / sizeof rt_capture_ints[0];

/* CLUSTER KEYSLOT of each key. */
const rt_keyslot_case rt_keyslots[] = {
  {"", 0, 0},
  {"a", 1, 15495},
  {"123456789", 9, 12739},
  {"foo", 3, 12182},
  {"{user1000}.following", 20, 3443},
  {"{user1000}.followers", 20, 3443},
  {"foo{}{bar}", 10, 8363},
  {"foo{{bar}}zap", 13, 4015},
  {"foo{bar}{zap}", 13, 5061},
  {"{}", 2, 15257},
  {"{", 1, 4092},
  {"}", 1, 12090},
  {"}{", 2, 12793},
  {"{a", 2, 10276},
  {"a}", 2, 5921},
  {"{}a", 3, 10875},
  {"a{}", 3, 6082},
  {"{a}", 3, 15495},
  {"a{b}c", 5, 3300},
  {"a{b}{c}", 7, 3300},
  {"{{}}", 4, 4092},
  {"}{a}", 4, 15495},
  {"{ }", 3, 9314},
  {"rlock:{lock-1}", 14, 6018},
  {"rlock:{lock-1}:fence", 20, 6018},
  {"rlock:{lock-1}:ch", 17, 6018},
  {"\303\251t\303\251", 5, 10087},
  {"a\000b", 3, 8383},
  {"{a\000b}c", 6, 8383},
  {"\000", 1, 0},
  {"\377\376{\001}", 5, 4129},
  {"{\000}", 3, 0},
  {"\377", 1, 7920},
  {"\000", 1, 0},
  {"\001", 1, 4129},
  {"\002", 1, 8258},
  {"\003", 1, 12387},
  {"\004", 1, 132},
  {"\005", 1, 4261},
  {"\006", 1, 8390},
  {"\007", 1, 12519},
  {"\010", 1, 264},
  {"\011", 1, 4393},
  {"\n", 1, 8522},
  {"\013", 1, 12651},
  {"\014", 1, 396},
  {"\r", 1, 4525},
  {"\016", 1, 8654},
  {"\017", 1, 12783},
  {"\020", 1, 4657},
  {"\021", 1, 528},
  {"\022", 1, 12915},
  {"\023", 1, 8786},
  {"\024", 1, 4789},
  {"\025", 1, 660},
  {"\026", 1, 13047},
  {"\027", 1, 8918},
  {"\030", 1, 4921},
  {"\031", 1, 792},
  {"\032", 1, 13179},
  {"\033", 1, 9050},
  {"\034", 1, 5053},
  {"\035", 1, 924},
  {"\036", 1, 13311},
  {"\037", 1, 9182},
  {" ", 1, 9314},
  {"!", 1, 13379},
  {"\"", 1, 1056},
  {"#", 1, 5121},
  {"$", 1, 9446},
  {"%", 1, 13511},
  {"&", 1, 1188},
  {"'", 1, 5253},
  {"(", 1, 9578},
  {")", 1, 13643},
  {"*", 1, 1320},
  {"+", 1, 5385},
  {",", 1, 9710},
  {"-", 1, 13775},
  {".", 1, 1452},
  {"/", 1, 5517},
  {"0", 1, 13907},
  {"1", 1, 9842},
  {"2", 1, 5649},
  {"3", 1, 1584},
  {"4", 1, 14039},
  {"5", 1, 9974},
  {"6", 1, 5781},
  {"7", 1, 1716},
  {"8", 1, 14171},
  {"9", 1, 10106},
  {":", 1, 5913},
  {";", 1, 1848},
  {"<", 1, 14303},
  {"=", 1, 10238},
  {">", 1, 6045},
  {"\?", 1, 1980},
  {"@", 1, 2244},
  {"A", 1, 6373},
  {"B", 1, 10374},
  {"C", 1, 14503},
  {"D", 1, 2112},
  {"E", 1, 6241},
  {"F", 1, 10242},
  {"G", 1, 14371},
  {"H", 1, 2508},
  {"I", 1, 6637},
  {"J", 1, 10638},
  {"K", 1, 14767},
  {"L", 1, 2376},
  {"M", 1, 6505},
  {"N", 1, 10506},
  {"O", 1, 14635},
  {"P", 1, 6901},
  {"Q", 1, 2772},
  {"R", 1, 15031},
  {"S", 1, 10902},
  {"T", 1, 6769},
  {"U", 1, 2640},
  {"V", 1, 14899},
  {"W", 1, 10770},
  {"X", 1, 7165},
  {"Y", 1, 3036},
  {"Z", 1, 15295},
  {"[", 1, 11166},
  {"\\", 1, 7033},
  {"]", 1, 2904},
  {"^", 1, 15163},
  {"_", 1, 11034},
  {"`", 1, 11430},
  {"a", 1, 15495},
  {"b", 1, 3300},
  {"c", 1, 7365},
  {"d", 1, 11298},
  {"e", 1, 15363},
  {"f", 1, 3168},
  {"g", 1, 7233},
  {"h", 1, 11694},
  {"i", 1, 15759},
  {"j", 1, 3564},
  {"k", 1, 7629},
  {"l", 1, 11562},
  {"m", 1, 15627},
  {"n", 1, 3432},
  {"o", 1, 7497},
  {"p", 1, 16023},
  {"q", 1, 11958},
  {"r", 1, 7893},
  {"s", 1, 3828},
  {"t", 1, 15891},
  {"u", 1, 11826},
  {"v", 1, 7761},
  {"w", 1, 3696},
  {"x", 1, 16287},
  {"y", 1, 12222},
  {"z", 1, 8157},
  {"{", 1, 4092},
  {"|", 1, 16155},
  {"}", 1, 12090},
  {"~", 1, 8025},
  {"\177", 1, 3960},
  {"\200", 1, 4488},
  {"\201", 1, 425},
  {"\202", 1, 12746},
  {"\203", 1, 8683},
  {"\204", 1, 4364},
  {"\205", 1, 301},
  {"\206", 1, 12622},
  {"\207", 1, 8559},
  {"\210", 1, 4224},
  {"\211", 1, 161},
  {"\212", 1, 12482},
  {"\213", 1, 8419},
  {"\214", 1, 4100},
  {"\215", 1, 37},
  {"\216", 1, 12358},
  {"\217", 1, 8295},
  {"\220", 1, 953},
  {"\221", 1, 5016},
  {"\222", 1, 9211},
  {"\223", 1, 13274},
  {"\224", 1, 829},
  {"\225", 1, 4892},
  {"\226", 1, 9087},
  {"\227", 1, 13150},
  {"\230", 1, 689},
  {"\231", 1, 4752},
  {"\232", 1, 8947},
  {"\233", 1, 13010},
  {"\234", 1, 565},
  {"\235", 1, 4628},
  {"\236", 1, 8823},
  {"\237", 1, 12886},
  {"\240", 1, 13802},
  {"\241", 1, 9675},
  {"\242", 1, 5544},
  {"\243", 1, 1417},
  {"\244", 1, 13678},
  {"\245", 1, 9551},
  {"\246", 1, 5420},
  {"\247", 1, 1293},
  {"\250", 1, 13538},
  {"\251", 1, 9411},
  {"\252", 1, 5280},
  {"\253", 1, 1153},
  {"\254", 1, 13414},
  {"\255", 1, 9287},
  {"\256", 1, 5156},
  {"\257", 1, 1029},
  {"\260", 1, 10203},
  {"\261", 1, 14330},
  {"\262", 1, 1945},
  {"\263", 1, 6072},
  {"\264", 1, 10079},
  {"\265", 1, 14206},
  {"\266", 1, 1821},
  {"\267", 1, 5948},
  {"\270", 1, 9939},
  {"\271", 1, 14066},
  {"\272", 1, 1681},
  {"\273", 1, 5808},
  {"\274", 1, 9815},
  {"\275", 1, 13942},
  {"\276", 1, 1557},
  {"\277", 1, 5684},
  {"\300", 1, 6476},
  {"\301", 1, 2413},
  {"\302", 1, 14606},
  {"\303", 1, 10543},
  {"\304", 1, 6600},
  {"\305", 1, 2537},
  {"\306", 1, 14730},
  {"\307", 1, 10667},
  {"\310", 1, 6212},
  {"\311", 1, 2149},
  {"\312", 1, 14342},
  {"\313", 1, 10279},
  {"\314", 1, 6336},
  {"\315", 1, 2273},
  {"\316", 1, 14466},
  {"\317", 1, 10403},
  {"\320", 1, 2941},
  {"\321", 1, 7004},
  {"\322", 1, 11071},
  {"\323", 1, 15134},
  {"\324", 1, 3065},
  {"\325", 1, 7128},
  {"\326", 1, 11195},
  {"\327", 1, 15258},
  {"\330", 1, 2677},
  {"\331", 1, 6740},
  {"\332", 1, 10807},
  {"\333", 1, 14870},
  {"\334", 1, 2801},
  {"\335", 1, 6864},
  {"\336", 1, 10931},
  {"\337", 1, 14994},
  {"\340", 1, 15662},
  {"\341", 1, 11535},
  {"\342", 1, 7532},
  {"\343", 1, 3405},
  {"\344", 1, 15786},
  {"\345", 1, 11659},
  {"\346", 1, 7656},
  {"\347", 1, 3529},
  {"\350", 1, 15398},
  {"\351", 1, 11271},
  {"\352", 1, 7268},
  {"\353", 1, 3141},
  {"\354", 1, 15522},
  {"\355", 1, 11395},
  {"\356", 1, 7392},
  {"\357", 1, 3265},
  {"\360", 1, 12063},
  {"\361", 1, 16190},
  {"\362", 1, 3933},
  {"\363", 1, 8060},
  {"\364", 1, 12187},
  {"\365", 1, 16314},
  {"\366", 1, 4057},
  {"\367", 1, 8184},
  {"\370", 1, 11799},
  {"\371", 1, 15926},
  {"\372", 1, 3669},
  {"\373", 1, 7796},
  {"\374", 1, 11923},
  {"\375", 1, 16050},
  {"\376", 1, 3793},
  {"\377", 1, 7920},
  {"\004e\252\037\255\035Z\332\345\254\033\036_\023{}l}\020\377\031{`\035\004\254\264\035\002+{xs:}\337", 36, 15273},
  {"\256\267\010Y}{9\020{H\225\265\314\211)\021\377\006{{.\337<\3715}K\224(\312\011", 31, 376},
  {"D\263\002^\226_\263\352m\254\324-\201}{{{\346\207L\234\004{{6]}`", 28, 12635},
  {"\352\364}\366\206\240\353{&\344{\022\325\r{\263{", 17, 3633},
  {"jj:h\272\216\333t\010{\236\363\316\263\n\370\320\335h}\370", 21, 7283},
  {"\372$}{{\030\207\373\\\207\272\264{2}\233\033=\020|\367x\326\177\342m\370\021\221){{\225{\022\305W\316Z", 39, 1966},
  {"\324}\030\327\031\274\004{{\231e\361\242\224q{{", 17, 4302},
  {"j\251{{u\307\2552{\002\037\005", 12, 15831},
  {"}\231\032{\353{\336\317h\272{|\274\326\036\227\033{}\235\276\227}\323\222{{", 27, 16266},
  {"\242{\227{E{\353\335{e{\377}\211j", 15, 2744},
  {"\367\312{{{\351\344", 7, 7300},
  {"h\345", 2, 12040},
  {"{\215{\234}{\327{\011\324{\3423D{J{{{\220\326\270\270}a_}\216(\276Y{\252P\033P\212j", 38, 12189},
  {")\346{\337U{\272}DmC}\251\010", 14, 7137},
  {"\326\300\366{\010a{{-\311\022r{${\302\342\332\261\262\004\236 \200t}{o\220\014\335.^r{\011H{}", 39, 588},
  {"\227\351\303{\261}\323\335\022D{2\014\024\247{{\372\014\336\326\023\316\023\206", 25, 14330},
  {"W\240G\344{\276}E\2646\325\210\376{{A}\207\261\017\203_te\272({", 27, 1557},
  {"R\337\210\242\023{\277}\357\267\021\265\336{", 14, 5684},
  {"\311}\272\343{}J\251\350-{{P\235\346\230k\342\251{\317}L", 23, 2722},
  {"{{\325\220\021}\230g\211}\255\363Q\215", 14, 2293},
  {"\255{{", 3, 9362},
  {"\001\224\254}}l{\212{", 9, 394},
  {"z\221{\363\253/\2062\272\201", 10, 13146},
  {" =\303g\024\210zu\220\310}\307{{\036\302{\003{}\213}{$\366\303\336+\357]Z}\346v\023}\312", 37, 8534},
  {"}\271\020\252\005{\2030\307\n", 10, 2707},
  {"{\360f{\354\357\254\211L\372\267\037\030\272\3034\337{`J\262\2002\3159{}\337\224D\024", 31, 2801},
  {"\363", 1, 8060},
  {"\354\301\3649C\006", 6, 12259},
  {"\233{\235\343:\323a\357\303Sk\320O\226\037{{{\363\005-\227\376{", 24, 14549},
  {"\233E'\264\242{\224\330d>\270q\271{\037S\213\010\225{\236_@}\377\227z\032{\177{{\253", 33, 12261},
  {"|\372\200\033}\312{\333{\371}\270\346{A", 15, 16368},
  {"\371\177\001\344{6m\244\354\242\355\272{\355{W\353\240\227}A\211{{Yh\346\222\274\\", 30, 8422},
  {"{\363\020}\006\235}=\361R].\011;\r\316\226mA\236{\n}\244k}V\235\254\032\004\002){f", 35, 5283},
  {"\035\227\203{V}\345\312\303I\004P\302\372s{(\024\314{\r", 21, 14899},
  {"]}\\x}{\036\212\032{\201\017\353\346\253}\320{A\024\351\024\265\211\317\\S\330", 28, 15429},
  {".}C\023\346{L{W", 9, 8055},
  {"\027{\210\212}\363/\310\357\267\357{\021\325P{\022\354\202\320\315{}={\020\350\343\021\255}\366\032\373\200\221}", 37, 8947},
  {"}{\327{\350\345\272{>N\216}}\367k\211{|\320", 19, 4913},
  {"\307j<{{\211", 6, 13859},
  {"}{\355\030E\302}{\330\033\274\206", 12, 7321},
  {"\024\243\364\314\367\036+}\355", 9, 8142},
  {"\310C<{Gv@Wes+\3665\277|A\004}@{{\261\014\037=\277{\237{\003\326}\200\247\377\264\252\326{", 39, 13943},
  {"\234\343N\004):}\357:{\020+{{\\\231`\323l}\360\207E\361\360\264\310'}\251{{)A{o{\315", 38, 10893},
  {"\235{\300At{\035=\351", 9, 7023},
  {"{{\014\344}s\320\021{O\233U{N{\005%\311\220o\222}$\271\005{{z){", 30, 4158},
  {"{\301{{\332\225\230", 7, 7735},
  {"\333$Le\216\010}\263''\220\276\263\236\301Z\364}\251", 19, 8733},
  {"{\344{k\230\312", 6, 10880},
  {"}IP\3553D\267", 7, 11782},
  {"\336\376\303rK\210\336", 7, 1360},
  {"Q\253\014}\031{\222O}}f", 11, 1954},
  {"N\325UUd\251\367", 7, 2175},
  {"gGS\210_\036Qg.\037\343\312{{}\305", 16, 4092},
  {"6\n{\265]}\314g", 8, 10912},
  {"\372\2533s\242\002g{\215}>e\311\3523\344\315\255\006\236{}}.}\033{%", 28, 37},
  {"\312\216^PI{\037j2}\364{<\325LD{2\3206\264{\207\211\265\367\253V}\271H\202{\233{\360{", 37, 7586},
  {"$gr}\220}N|J\332v\003\332\264", 14, 2114},
  {"{\005{\221{\243Y\256h{\017\240fqr", 15, 15911},
  {"\212\372\261\371\240", 5, 1764},
  {"\354'\211\327\243\357\177\373\337{%\221\"QV\021\017\317\252\201", 20, 1434},
  {"\351\310", 2, 12910},
  {"}\002}\032_\377A(\226}Ul{\325|{P}O\243\314+\376\352\022\311", 26, 14201},
  {"\207\373}\227\315{\360t\373\212\274\346{\327\n", 15, 3732},
  {"\200}`\324`\237\230G\262{}}(\370VG\310\213{\255C2\276\363}Jgg{H}{{", 33, 8106},
  {"\310^\224d\032}6Q\020v\303Z}S\274\242{\3413{{C\342\267:\235\010\201}", 29, 4109},
  {"{\240E}\2776", 6, 1311},
  {"}{]\213\367\262\317\005Q}}\225\014\226{{\274\327\350k^\376\031{\337", 25, 11459},
  {"\316\017", 2, 1204},
  {"\330{3k\177\272\001o", 8, 13027},
  {"\361\227\233\240\305}\004}@\227{}{", 13, 15267},
  {"}=\251\267\220}\277^\231\327d:{4\177\252\270mV\233\210{{\201\243{\216\024", 28, 8860},
  {"\037\370", 2, 15706},
  {"\346\274\311\031\020}\212j\\\265\360})>{\276\251)\226\311q\361} \277\035}", 27, 5320},
  {"}a{{\\s\020\001{\256Hk\211j\351{'}\243t\032\032J{\254}}}2\372\246/\035", 33, 4027},
  {";{\277{\030'}_\021\231\370\354", 12, 5017},
  {"\325{32\006\344}\n\203{o}\312\324}{<{}\254\233\345lvC\332O{+\2015}", 32, 3068},
  {"\033\r\212", 3, 13580},
  {"\335x}\177|l\337D{\212\005", 11, 678},
  {"4", 1, 14039},
  {"q\236{\234\305\r\006\366{{}=V\335\301\035\303{\337\326\r{\301}\213{\001.k{}v\243\210\337\346\233=\272", 39, 16278},
  {"\233_}\373\366", 5, 12571},
  {"}\332\364\r\301I\201{\272}\226\233<\004k\003\221\227Y", 19, 1681},
  {"{{\221\213LK\177q{h{\265\035{6:{", 17, 3620},
  {"_}{\366\030\350\006\005", 8, 9687},
  {"{\364\032\255", 4, 11015},
  {"\011", 1, 4393},
  {">{}\350\345\307{{\377}\202=\240{\206K}\002$\220)\226}(\227", 25, 9146},
  {"}v\265{\254\004<`{\035\346\233@}\230\035-\323L\246\030{\300`E{{\335}f\364{{{\211\225$", 37, 15313},
  {"}}}{{{\037t^{u\366P{\353{r_z}V\364){JW\027{CJH\252{{/.\030\230\377", 39, 4856},
  {"\353\325", 2, 6032},
  {"\036{\236\326\237\357\271\0324\243{\234\0202\203\360R\371", 18, 14978},
  {"\360\336\002\371{\371}2\272\247\325{<{", 14, 15926},
  {"\272\261\345\320${\354\336{\325mD\020\302{\303\220\364", 18, 9956},
  {".\022L<\325)'\202\264\234", 10, 7481},
  {"``\341{", 4, 11974},
  {"\255Z{\327 Q\254{\030\265\345g}\222}\337{R\231}C\265\036\324\"\222\230{\267K", 30, 2175},
  {"{\036\021{}\201\335\371{E)\261\263\367rq\234{o{\010}{x\224\2653\032W\3360S", 32, 10204},
  {"\272\002\253)\030Q\225}d&\177}\220j{\"\300\"{\201\270l}\272\0069I\242{\310_E\032\346\213\177\376{", 38, 5788},
  {"Y\r{})\235}\177h{{\234Q{{\261{\254Z}{\377", 22, 1842},
  {"{\210", 2, 1059},
  {"s\346\350K\325}J\327\227}}}}\370f\035{u\361\227\027A\032@O\0172)\360", 29, 6869},
  {"\200{{{}}{\254{{{^\344v\n", 15, 7007},
  {"{\337\360N{{\324{DZ}Uf\203\361\324$\277k}\325", 21, 3795},
  {"\234\361\2340\307\240\210r", 8, 7203},
  {"{l}{\177\177{u\177\264\221\226\251\330&}\220m\036{KH\211\345}\354\3603\233", 29, 11562},
  {"}{Ld\202{^^34\336}\177W{\376)\343\325R{\253\003{ag\344\367{", 29, 6100},
  {"{\263\377}\206\364\224\342E\353\226G\207H\271\314\330S\246Ez{\247Q{\202\027Z}\264\213K\036+\300\020{{D", 39, 5550},
  {"\212{\345\350Q{\332\255d{\262\341W}{}d}{\366{{\230", 23, 561},
  {"U{\237\237}\276-\022\207{6{\027\225x\262\\dh\360E{\336E\276I\177s\002&{", 31, 14979},
  {"}{\262=]\350\345{\224a\242}\256{}{\032\020\336\253\032{\327\001S-a", 27, 5875},
  {"\024{&Wf\274\021}\330\212\005}{]AG\357\\\216\010{\312-H}", 25, 4508},
  {"}{{^\202\360}\002\327\233\361\212\326{{\234%{9_{K\263\3325\310E\nm", 29, 2880},
  {"\336\305|\231\216Q\372`}\303{{\234\031\027\240)\027}\330\203\342v\364}]\272\215{G{}", 32, 3985},
  {"\021}\343\344\200{\220-{{R\301\342\354\251\261}\303\220<", 20, 11891},
  {"<z}{\265{\244\371\037{{\271}{\326}{\272\247}{6\267\\o\332\354&r\357\274E\226{{}", 36, 2543},
  {"\002d\231\300\372{{{{\272qY\024", 13, 12551},
  {"\366>j\326\377{j\264\252\200\253{{{}", 15, 11587},
  {"\277k{\371\236\263Ng{3^\352\"\033\330V\222{}{D\332\220", 23, 15113},
  {"{\206}rEaj\256\rW'}\201{\3256\216\216 {\357\254<", 23, 12622},
  {"};", 2, 14653},
  {"\360\243}{G}{\035}", 9, 14371},
  {"\002\2246{\030\310\002\271\352\307\255}{\014{O$}\235{\341", 21, 7669},
  {"\233{\027\202\303\311{Dd\244\226\263", 12, 1214},
  {";", 1, 1848},
  {"\274'\277^\\}V", 7, 11881},
  {"\332\255}\233\310V\222\300\267\317{a{}{W{\360\3025\377^\014|\274\200\n\203\314\364\202%}z\252(_=\207", 39, 14311},
  {"}\344{\350o}\335+\002{ \366{\256\243O\201g\022qNt}{", 24, 1106},
  {"I\224\343{+\276\212}3{\303\320}\234\360\011\3465}}\357\370W\3013P@{\373=\024\300t}\346H", 36, 15351},
  {"0\246\361\022`}\030^s<{{zA\037\373\004-5<;{l}\276}{S<G\nx\324\\}\333/\330", 38, 5325},
  {"{{{\003\370f\373", 7, 5854},
  {"\251\277h\225\332L\337x\203JQ{<\351\037", 15, 14202},
  {"\210\243D\337\345`A=\224K\314e(r}\303} {\231f\372{v4}{{\211", 29, 6440},
  {"\206A\376\224{\272\210j_\212><{{{{{\264K\037{\3716\276}\237L{\236{\220{{", 33, 2447},
  {"\263\240{\315{\305J\236}${\212\216\307\227{\360\265ml\244\017", 22, 991},
  {"}}\354{Q\253\364_\333}\276", 11, 4111},
  {"\317\372\352\031}\345\376t\276s\001\354{\226{/\254{e}S}Z\271h{\336\001{6\346\262zxP\345", 36, 12737},
  {"{\300g\247\360;{\246\027}O{\2709Y{{\255\220\222{}{{\265\021z{\360{}\263\235{", 34, 14385},
  {"\376", 1, 3793},
  {"\353{}J\255e{\r\003\215R\240\335}{\337^+\022{}\003\247\271\301\323\022}", 28, 3253},
  {"}|\017\213\231e{{\010}`:z{j\341\312\372\267\343\341", 21, 5547},
  {"eN{{}}%Q&(\274\327a{\010}&{}\003\010V}]\253\261\\\251Z\213\317N{Q}\024", 36, 4092},
  {"\327\324\246U;}\310\253z\271}\200\317}\006]\317\336\323={\262K", 23, 3364},
  {"\317}\201N5\032\317l", 8, 3318},
  {"\367J@\017N", 5, 14892},
  {"C\271}\021\354\2424&", 8, 5912},
  {"\037}4\367\227}\226a&\256{{\364{\201\351{{v\277\234{{\203\307E{}{\377\031", 31, 13854},
  {"}D\270\262\235\011Cu\011\317+0\206\324\344{\244{`\252{{P\302{O\031ZCN\230\333\0354\226DO:", 38, 14790},
  {"\265\357\207\021\272\342`\256Y\366", 10, 9999},
  {"A\332\276\216\311Y{\373{\014\001\274{U{m\010\207}\216\243xQ{\370{{\325\230\372", 30, 856},
  {"\364Q%D\r{\236}{", 9, 8823},
  {"{\376\337\0324\021{DQ\230\237}}\246", 14, 7641},
  {"\0309{\314Z\254}\307\310e{\225{\353}\234{\237{P\216\320\224\031}| \003+{f(\251\336d", 35, 1668},
  {"\254\310\243\237\336q\021}'\226\234\301\246", 13, 1984},
  {"{\246m\201\274\274\376{", 8, 4380},
  {"R\211C\n{\343\221{\237{}\253{{\"H\032{\371_\350)}\033{{\237\001{\354S\314&{\203\011", 36, 2597},
  {"\376{r\253{\233\014\274\307N\377H", 12, 13169},
  {"k9{\251\030\301e", 7, 1159},
  {"\203\333\024}\256\341{{\376}t2\201\345\2312\002>2\n\317/\336\213E\242\236_ {", 30, 6770},
  {"\301}\303\371\377\312j\270\261\014\372\353\267o\352\001\3643\272\014\314|\320t^\335\023^\201\251I\332\200\372{\316", 36, 14554},
  {"{`\246(\005}\271{{zz\335{\367", 14, 2308},
  {"D-{", 3, 15915},
  {"f\215\003\200H\215\033\225C=\234\255\177\242\272x0A\371{{m\213\235\247O}O\254\272}\376]", 33, 14869},
  {"\353{\354\243\353\305\301\246|\254\363{{}\202\031\311\270{-\030\001\011\354\226{:\373\004{\371\222}L}\303", 36, 2288},
  {"\004", 1, 132},
  {"\213J\344{\233{(\327\343\305\032S\343\027{\272\261{D(\311}\247\363\227\201&\253", 28, 12483},
  {"f\350{{}l", 6, 4092},
  {" {5\345\371d2\264g\200\357t\367\332{\254\372{{\003\024\037\3026\202\002\011\325.\216]\301t}\206e", 36, 8583},
  {"\037\031\267\222K\251\355\027{\255{h}/\342_\224:{}|\001s\234\364\317", 26, 1728},
  {"", 0, 0},
  {"{\262\017f}{\222;r", 9, 3265},
  {"\337h{\350Z\353\337{{{Y\244}\212\314ff\346(\332\003\357SS\233}\307\263{:\352\231{}}H", 36, 680},
  {"Y\343V\350{\346\031${\353}de{\225Q{{\377\301}\244\226\264g\255{", 27, 7353},
  {"}", 1, 12090},
  {"\344\003\213\017\240", 5, 1961},
  {"\216\262}\363{\320{&r\327\031\262\312\352N9\326}{j{\262\320\262", 24, 4274},
  {"{\325\302Z\\\333}\2065\202_\242t\027ddC}]\327d\332}{\311", 25, 8882},
  {"{\254}\242\263{\n3h\235\301\235q\006\350\247\237t\316{\326{\\\332{\305}9\377\254{\2709", 33, 13414},
  {"e{{\345\207}-}}\177;d", 12, 9937},
  {"}\355{\326\2254}\233Hu", 10, 1789},
  {"\215\003{{", 4, 9905},
  {"\346\302\312\001\253\235\225f\225I\337", 11, 15659},
  {"\031\333\372}I\177\326{\0046\011{\337Q\242}{\255\255\021\242\254\206\301\022\366\336\036\311", 29, 13886},
  {"}3\002\011", 4, 4173},
  {"\314\366\216}\323\011\224{{{YA\310<\206", 15, 3866},
  {"\333\006.\200{\333\207\031'\312f\022\252\323|}\355US\200{<\006\224\350\346\303\037}\332\002\234{(\202", 35, 15292},
  {"\206\235\010\234\372{\327}\022", 9, 15258},
  {"{{\225\200\004\355)4D\035l\207\310}\325C\327\010I", 19, 13185},
  {"\337}}}{\301{\221{\366a{{Z<{\3324}\212\006\363}}", 24, 2352},
  {"}6\020\277{\335{|{vo\271\337}\210\225\006\222\244\253}{\224\r-\230\325\003of{\203", 32, 7288},
  {"t{{\202\244", 5, 10375},
  {"{\267{{Z", 5, 5728},
  {"\333\253SK{\003", 6, 1782},
  {"E{\256\325}\206{{{{}\251{{6\243@\027\002Z\221OH{f\203\023\357\233tC\377}\337\364j\225\342", 38, 9641},
  {"\222\265{QJ{d\276\021\311\256{}\270\037\323\303\177{\330\242\320{\372.\2554{\004\265", 30, 4913},
  {"k\2240\274\215\236}{\n{u{\330}\006{\350\373}\261\022}\301{\301\254\253{^\333\346\305}\261}:", 36, 14314},
  {"\335{f\261}\234%\320{R_\036}}&\330.{", 18, 5750},
  {"//Q\\\263'\002=}\242\216\004\037{\\z{\344", 18, 8177},
  {"{H\302t\276{\014C$Cv}]\335{\366 \222\037\341\002\003", 22, 1373},
  {" \224}{t:t{", 8, 7435},
  {"\312V{D\350O{}$j{m\320}'}\242{}Y\017\246\341\300{tK=", 28, 16371},
  {"\276\300e\031\023{{\325{{\030\235f$", 14, 5107},
  {"\344}\014\236]R\370CY{\236\305\344\244f\216\237\305{\351\\\226\211O{(}q{O\371\005\220V\326P}{G", 39, 2186},
  {"\332\246\017\207\225L\203{", 8, 4245},
  {"\037{\240\n\370\270:\325\357\3153\333=m\027\314\363{{W\\$\317\2123\354^\353{", 29, 5208},
  {"(Vd{\342\234Q\2203\330g\345", 12, 15016},
  {"\221G\270\315\222", 5, 10183},
  {"\376+\210Z\305 `=\355\243^g\247}}", 15, 7570},
  {"{\010\212\271I\022\177)}R\240\206\021\377", 14, 6665},
  {"k{\003\320r}C{]\312\255f\011\035\003 \023\350{JG\033{\277\315\314_\200\022\262\206", 31, 4770},
  {"{]C{\274}\021_+;\323|}", 13, 15028},
  {"\244\267\254}]W\024>\343\222\352\0145\252\002{9\303\203}A\206Q{`x>\370{\030\360\353\336\272\220{<&{", 39, 14808},
  {"}\360\031t-\225o\251\360Z&\264W\345I\\\n\230/\270{\261d\262\210", 25, 9926},
  {"}=^{\312Vl\320}\274", 10, 12891},
  {"\272q}\203R\371\351};\274\036\346{\2265g\277\371\004{{\234N{\360\343}r{\r\233{\220\037{\312{\224", 38, 9368},
  {"({\301{\314{\n&s}\307", 11, 2502},
  {"\215{\364`\314\332\233Ro", 9, 13059},
  {"\001{K}{\246\236", 7, 14767},
  {"\216\373{\254q\031\225\316$}{{\345)\230e\367", 17, 14264},
  {"\310g\011Q9.g\002{0\342\211\326{\200Jv\270\344\302\027\267|C{{mls\017>jg\020{}", 36, 11907},
  {"\310\326\372}\353':JS\002f'\2342(}\177\251\337{\357t\032\366{`{\001Ljk\230\274\350", 34, 11412},
  {"\364}x}{\265\254\010{\317r\203\253\035D\317e", 17, 9318},
  {"{k\371\020\367\035\357\224{{\336\0023\010t{{", 17, 14687},
  {"{{{\350}\311\274\nl\212\345\314}\370f\226{W", 18, 124},
  {"\001\207_\305\310Q{O\220\325}\240}\177\001\325\276\207\003{\367G{${", 25, 12975},
  {"\\\200\325{\303\3366{%-\035\312g\326\267{3{uS}\206}\346\364{\200{{\230", 30, 43},
  {"", 0, 0},
  {"\366{^tK`v\032_}{\"u^", 14, 4717},
  {"\233t{}\234\317\276}{{\315\337\254W", 14, 15216},
  {"{\253", 2, 4130},
  {"}k\350{\265x{{\351(/\265\177\305}\237\024\234{{}", 21, 3700},
  {"\220\3352", 3, 3411},
  {"\346\255\201\224\225\252r2\024\220u\364z{mO{ \323{\006}\251}\352\336", 26, 14485},
  {"\021{\305\033\373{", 6, 4841},
  {"'\224m\264\236\355\320=:\242\222r\177\326\316\255\360\363{\222\363\037\240\353{}", 26, 9473},
  {"D\235(\240{a\360\211\324\014{{{{9f{{\367{{o\002\325I\n{{\360\314.\212{\323\n}x\312`", 39, 3751},
  {"\201{\032Y{.s{\255}\351d{{\001\377\312\005{_\345\222\336;\350\323\332", 27, 10642},
  {"{\370\233}3\010\376\326\020\215\006\237s\377\344\251\323\361\247\311", 20, 10426},
  {"}\303\031\303", 4, 5264},
  {"C}}{\316\020\177}{\357}\310\264C\177P\254\264{<\037\264{%\256", 25, 12797},
  {"\010\n}0\201\377\027\274\212\224\037\317D\006W\220\211(u}\312", 21, 5342},
  {"\033\345\253\200\324]{\032\315\242\265DSz\030\324\020;\006}\005\030\177{{/\033A}N\352{\014\211\014\3439|\017", 39, 9563},
  {"}`}\302{\320\177\212{Y\352\237\270{)J\342\"\224{\370\234\327{{\370\220|\210\352\255\2532 ", 34, 3800},
  {"\235_}{\267Uo\255}{\251:=\341\303{{{:", 19, 10897},
  {"\"U\212}d\367}.u\350{\225\354\277\002\237\364\020\323\310\265e{", 23, 7801},
  {"\206}j{\317{{{\277{\227\343\263\277\017\211a", 17, 6581},
  {"\002\270\310\246\215G\330}\337\262\341\316\203}\274\354m\r}\206}}QE{\242\201\031{{", 30, 3289},
  {"{\325dI{{\240", 7, 11386},
  {"P\352\343\226", 4, 13397},
  {"'\202{g&{\327}d\344}\210\203", 13, 5024},
  {"\345;\216\256\377}\011\022\207\352\300\242\370EL\324\357\341e}", 20, 11219},
  {"'\353\307<O\263W\256\235\022\242\367^{{{{\3679\231{\030Cdh", 25, 7085},
  {"{\002\371}t{\342}{\001G\212f\253<|\323}\272%\336C_{Q\230\351d{\327qv\324\350g\021D{", 38, 6228},
  {"\376V{C\301\011\373\035\031o\211\207U\005\300\255]", 17, 10415},
  {"\233}|H\352\027{\323\270a.A\200}{{{}096\367A\357{}\224", 27, 7059},
  {"{C\206}\274d{\2334\024\035r\213}E", 15, 10705},
  {"\300+f{\206\"{{\366}{\312\366", 13, 1776},
  {"\271Kg{", 4, 12987},
  {"", 0, 0},
  {"\021{{oN\037{(}\335.\247}\006\226\261\276{\027\036}{\224}\332{\235Y\300'{\202\262\033}}", 36, 10310},
  {"", 0, 0},
  {"\001m{\316\301{\031t\343{\317\256>\303`{}s}}}\372\224\345\370Z\271\230{{R", 31, 9376},
  {"e\272\005-\327g}/}\277}{\376\325:\2063{v\316\376&", 22, 3693},
  {"{", 1, 4092},
  {"\363<\315s\234k\302\341\206\3230G\325\212{4\206\333}.K\370\n;{_{}\324\010\220\254}S\361\014}", 37, 4685},
  {"5\314J{\020\351A&{\351\302\006\325\247\0362{\336\326\316}x{\330{\224J\030;Y\377\305{{}\367", 36, 15278},
  {"\225\244}W\032\354j\310{E\200\251u\256\333\021\272\227\202\233\246", 21, 545},
  {"{\3453-5\303O\230}G{{}r}{\037{\320\270}3W)\240\256{\234\236Q{{{%q\244\235P\230", 39, 6574},
  {"}{l}\256{U\350<\327{{{/}\3003\355\201\004{}\244{a4", 26, 11562},
  {"{\225\252{}\351\222{}\022}{\252\332}:d\316V\\\352\255\004{}\213\264", 27, 11904},
  {"\251\310K}J\265\212{\004\377\n\213.\343\371}:\020\222\303\215{^0 %}A\333{}f", 32, 14048},
  {"{\240\363j\224{\254m }\023\351\272\363{\017\367\234\244\342\363{\256{\264\235\372:", 28, 2790},
  {"\326}{\035l2\262{\274A{d}\264j.\261\311{\247\270{{", 23, 1478},
  {"\3640\216r}\272\333\233{\256{:{\014", 14, 11312},
  {"\361{\006t\342{G\252\330\354{{{ \320\361\246\361\r", 19, 2851},
  {"v:W\267{}\177\236{I{\234\237\246Q\003\263\337}\240PZ", 22, 1145},
  {"\336\301\n\312\234\361\261\235\311\332\326\253\305\261\206:{{\312\366.m\353|9{h}E.\264{}{", 34, 4888},
  {"", 0, 0},
  {"S\247\3539@\263\233\215\376\272{6\262{\242{\310\363{\336", 20, 7881},
  {"\254}\037\220\011\262\220\261\036H\276{{W}\222{\301\325Y\215}", 22, 16049},
  {"}\336\011q}\310\261\317{\005\202", 11, 1703},
  {"}z}\323\377}}{}\270\254", 11, 10121},
  {"{+\200\\\317\302<R+\n}\001\366{\240{x\021\202\342\371\031}\263\332", 25, 529},
  {"2{r}\244\276\251\371\020\370W\361\271}Z{}=}\301\216", 21, 7893},
  {"{{{\332{}\263\210\272J\363V\n\227{\366^\236\251\203\351\261\336", 23, 387},
  {"\312{\307}\345}{}\177\240\202\255\234{q\252\030\237\207J\207PY\361\316{", 26, 10667},
  {"\324{", 2, 5663},
  {"}{\364{{\031{\032C\014z", 11, 6946},
  {"\3612{\367jql\225&\005\341\005\206\010q{\325\303\r{\377\267O\234\023{Ve", 28, 7635},
  {"\361d", 2, 3282},
  {"{A{<}6}D\010`", 10, 2529},
  {"N6\222\300}\330(}Kl\033S0l}K\221}u{}}\2630\247}P\323\303e4\011\302\037\3463s\305}", 39, 1360},
  {"}`\200}}\333\006\0114;\361{{\234^}\320\357\027\326+u}\310\372\372_@\261{\265J\303\225{", 35, 3652},
  {"\206{\003\207{4}o\315{{LN\010\343}\224", 17, 1890},
  {"", 0, 0},
  {"C\215\177R{V{\215se\301{", 12, 4779},
  {"x\337\224{A3-\307\3166{_\272\366\014\326}\216\360s{f\030{}0;o\301\235(d\017\343", 34, 1085},
  {"\244\333", 2, 11180},
  {"", 0, 0},
  {"gZk.\301\254o\353\302\310\006{O(g\n\2773\360\2275o", 22, 11646},
  {"\002\300", 2, 16174},
  {"\336\3233", 3, 14545},
  {"{f\305\211{", 5, 11465},
  {"{\274}\327\354\303\022\351\320^", 10, 9815},
  {"\177\352\234\261z{\006{\225\225\213\010{}/}\336\\r}\251P\201\345(\312", 26, 5602},
  {"\350{\355Q\227\317\011\314\253\272{\037\202:{\240\231\203+\030{\\", 22, 4627},
  {".", 1, 1452},
  {"{m\224R6\327\363\302\003\236\2276R{\332}{{RNG\213\272", 23, 11814},
  {"{}{{:{\324_L\270{+Y\210}\326\370", 17, 5859},
  {"\310\317`\001", 4, 10154},
  {"{{\2256{}\235", 7, 12140},
  {"", 0, 0},
  {"}ea\352\317\033}=){\002(\352}e^", 16, 15691},
  {"\236{\031R{}\037}\327dv\376\010{\346\242\307\3613s{A\027\330}\216\001{\274", 29, 15059},
  {"\220\353\335O\316{g--J\264t", 12, 12649},
  {"}D\023C4{\351A\177\363{&2a\310}\262.\333}\231\220\324\244>P", 26, 4008},
  {"\213\n{}}z\312/\037\363\353\341\316I\255}\242{\027G'{", 22, 8161},
  {"r\326\337}\244U\352\373us{{\230\341\276\021\310\261{\236{\220+\350\035{C{\244\344", 30, 3396},
  {"", 0, 0},
  {"\023Y\225", 3, 15624},
  {"}\227\330\342\263{\254\230\335%{\222", 12, 5233},
  {"3U\261/A|\031<\302\253{{\\{{\324g{\024\210$a}x{>\216d\001\011{\320\333\251\035{\227\224", 38, 14935},
  {"\355\325\035=WI\202\335\316{\261I\314\262\336C}\220}\367{}\300\037o\343\210{\234L{CI5r", 35, 9630},
  {"\335a{{\030\004\310{}\372\246\254", 12, 9180},
  {"{{\312\226`\370{\353\201\314\335z}z+h\032\200{{^\0115", 23, 12593},
  {"\003{\220{\265\021{{\247\031{qS\n3{\357L{\350\256\367\353a}}\305:\366\350%\377l>{", 35, 3859},
  {"\231{I{]\224\220\357\276{\333{", 12, 12792},
  {"{\240{", 3, 14971},
  {"\234\372{R}{}\342\244\343{}{\311\177_{m{{", 20, 15031},
  {"s\246Z\031{z}`N\323(\300\320", 13, 8157},
  {"}}\010N\333\226\346Ia\265}\r\277\225\024}2d\240.\335}\277Y@}$\200z}\346]{{\330\371", 36, 2418},
  {"{\246}\\L\264>q}{{\302{\017}{\254\353{\032\206\033{z\346\263\262\004:e{\317x\234\265{\354}\254", 39, 5420},
  {"\300\314}}{", 5, 9358},
  {"{{$\210}\332\332{@{\227}}\237^\251\207", 17, 12891},
  {"\032{\324", 3, 7160},
  {"l\020", 2, 7286},
  {"\2526\316\212E{\225\242\006{\017Q\271|J}d({j{$\234{{P\010\004\355\244\325\231\242\2703\272{", 37, 6006},
  {"\234{Y'\370\022{Ar\200{\360\030\3763", 15, 4853},
  {"5\254}s", 4, 10400},
  {"]dl\237J\314", 6, 5666},
  {"s}l\235\305\353}{\272\210\263\002{{}Gs-\234\366lS{}\352\366\005\235", 28, 609},
  {"\226\337<{\336\311{\011\326}\216\315{{\230}\376\323\206\335\017\272\262:'S\342\363\350\011{\037}\225\357f", 36, 323},
  {"\367L_\2722\003\252}\312\332\315\261\376\003\317}\305q\226\301\213\335\001K{\227\305a}\r\010}-{", 34, 10383},
  {"0\325\032\310}\213\240", 7, 8826},
  {"{{\030\300J\366\n", 7, 16098},
  {"\271{%\2156\032\020P\020}{f\346}\263\"\320\327{\240O\274\302{{", 25, 8376},
  {"{)\324\203U\332\247>\023\017\302\230Q\270}", 15, 10485},
  {"\353\370\326\226\350\2002}\213", 9, 8783},
  {"\264\224\030{\267\244g\201{", 9, 10796},
  {"{\262\"{}}{}3\364\372\037{5\345}\224\317\355}\225{^J{\327}\370Q", 29, 16359},
  {"}", 1, 12090},
  {"a\370{\301={\035\222{{d}\225\225{\301\215\n{O", 20, 10132},
  {"/e\030\302\"q\3413{A\210\323\244\"{{\003", 17, 13015},
  {"\2006\311\222_\363\221\276m\255&", 11, 11364},
  {"\001\005\235\3414\305.{", 8, 11972},
  {"}\327}\270V{\327\324", 8, 9372},
  {"}\032Y\010R\033\242\315\240\271q{\035)\254\033{\351\327\\\363", 21, 14680},
  {"U;\235|^{\020}\277l_{U\332\220\231G};2\006\277{:\006:$\2269_hzP\022", 34, 4657},
  {"\336\261{\300{}{}}\254", 10, 6568},
  {"z\242\006Q{}ea{\236\310\272.", 13, 11723},
  {"{\246{{\301@{\342\351\277{\346}\202}\n\225\337\010\316\227\254\363\001{\211}\353\252\364\261=\033\nC\272`\036{", 39, 7558},
  {"=\373\353\341\251\371\335{J\3023\267\262\342{\207\\", 17, 4328},
  {"", 0, 0},
  {"\272d>%h\n{\231\031\345\002/3{\202V{\024-\030f\001\005\363\363\017Kx\353e\315}\243{", 34, 7320},
  {"\003\230\230\206\200\030\010{\n}\035+\357Y\353{\367a\364\200{\032f{\324{", 26, 8522},
  {"\230\023>Ag\303\344}N\357N\200A{/\031\316{\005\346-{\005", 23, 15396},
  {"\014", 1, 396},
  {"}}\027\213{\252I", 7, 1724},
  {"\"{{", 3, 13305},
  {"e{{\336{{K\027\311\021C\216\307{\251\207{j\177\\\215\341)}{U\270\316", 28, 104},
  {"{\364}3++{\302{\274{\226>}\2036(}'\246]\263\035\010v\317\354{R\276}", 31, 12187},
  {"\326{\372ee\360\037", 7, 15006},
  {"\036\355a\255\330\004\206\354\336P{\324k\177K\316", 16, 4822},
  {"`\2064\330{{x\270\246\357\024V", 12, 10289},
  {"`5\0375\011'\027{\220\177\231+{\n\314}\335x\3455{\310\036\353{", 25, 9288},
  {"z\011\036", 3, 5806},
  {"5^\001j\r\354\251\0334.\230\207\020}\010a\270{{\236/\244\343\343", 24, 12453},
  {"\303\341{\323=\376H<\270\372g{j\270", 14, 86},
  {"ef\226\236\372\251\216\361g\344{\330{{\227\235\316\222\027}}{{}{\235E", 27, 16033},
  {"\224{{\325\343\201\203Z\021{}}\021\200\235{\201\265{", 19, 13158},
  {"{.\271{.}\262}\236{\327\027\234\033\005\312\345UW{}|}\032{\355q\346\372", 29, 9333},
  {"aL\"q\274\337\2400{}{m\252\373", 14, 7040},
  {"\3772\231}\274\011{\242\201`", 10, 15260},
  {"6\002\201\352\234Rgrv2\032\022\211\031\315\251;{{{\316\n{{Z\215\221`{dLG}\227}}", 36, 16355},
  {"", 0, 0},
  {"}\227\332I{\177\242\213}a{\216}{h\224\364(<\240\350\243\202{}Z", 26, 12230},
  {"{}{><{{\207\216}\276\243\336\rU\325\330V{\370{x\027\202\315\005\203= k6\277\242\315{\256\212\237", 38, 13431},
  {"\265{\003fEk{\237\014\277\333{6\206\263Af\355\341{s\252}}\343\310\177", 27, 5935},
  {"(3\243\354\234\003{\020>\2102{{\032x{\332\235", 18, 11894},
  {"\276\037\326s}\335", 6, 12475},
  {"`{\211\316E\251d}\222\373t\342&{G}g}g\301&{\234\2240\246\344{\263\3073\315W", 33, 9931},
  {"\352{\030L\031\367\345\201uP\372\311\030\327\376f\373{}\3153\302a\020{h{{-\027", 30, 10558},
  {"\\{\333\357}\001\301\023\226\327%\361\010{\270}}\036S\222\216Y\177{{v\300\037\353\203\246\225{\276\221", 35, 1308},
  {"4\323G\225Q{}\003\251}\212", 11, 9644},
  {"K{\357A}\305{", 7, 6249},
  {"\314\262C;\366\355}\314\024\240\210", 11, 4748},
  {"\252{{", 3, 8450},
  {"{\236_'Dj\246\272\210\360", 10, 9238},
  {"\341`.{}O\333\310\346}\"\363\010\014\036\227@\353\024\344s\033rvV{\213}\206\302\020", 31, 15309},
  {"h\240N", 3, 1726},
  {"\302\264)&}\364}a\302\216}\226{\220\363\253\277{\210S\206}\014\030\014\021", 26, 14929},
  {"+}\220\333\354\231\023\325}\305\030{tr}\311]N{\234\216>", 22, 6728},
  {"}\316\262\335\244\037\303\215\324\207\021\310\216\235_\206{{\353\311}{\216\212g\305\230f\310\343{\005V", 33, 11476},
  {"\320N\r\320{{\350\360{\337 \355\215{\"", 15, 9384},
  {"\177\240Q\353\2216\200\244", 8, 10206},
  {"}-\004\270{{\377\330\261}\201}{\024=", 15, 14461},
  {"}G4{\0023{}5J\376\360\312L\324\212\352}H{\213\310e\303\236.{\301\373\216{\226\r\274{\376", 36, 12634},
  {"\202Q{\037`}&_\003}}j{", 13, 16363},
  {"\237}j\310\210\254VG{\031\220\343\351S}\0112\352{{\202\367I\213{\014}}l\335\350{", 32, 4964},
  {"\253\235\002\037t/\014\244}P\354\353{{{\255\"\267{\177U\276{\360\353\021\265e}e}", 31, 4455},
  {"\021\231\353\201\216o3\\{{:", 11, 4538},
  {"}\037\332\350{\014}", 7, 396},
};
const size_t rt_nkeyslots = sizeof rt_keyslots / sizeof rt_keyslots[0];
