/*
 * Network faults for integration tests: a private network namespace with
 * its loopback up, and nftables rules on that loopback that drop packets
 * silently (no reset, no ICMP), as a cable pulled or a switch that lost
 * its mind would.
 *
 * A test program calls rt_netns_enter() in main, before it starts any
 * thread or server: the program, the servers it starts and the processes
 * it forks then live in a namespace of their own, so the rules touch
 * nothing else on the machine and vanish with the program. Servers bind
 * every loopback address (RT_NETNS_BIND) and a client dials them on an
 * address of its own, 127.0.0.<10 + k> (rt_net_addr), so that a rule can
 * cut one client off from one master (its address and the master's port)
 * while the others still reach it. The harness's own commands go over
 * each server's unix socket (rt_redis_opts.unix_socket), which no rule
 * touches: a server can be probed, flushed or restarted while its TCP
 * port is cut.
 *
 * Rules are in the input hook of the loopback, where a packet that is
 * dropped has already left its sender: the sender's TCP sees no
 * acknowledgement and retransmits, exactly as across a real network.
 * Loop: a test's main thread only (it runs the nft program).
 */
#ifndef RT_NETNS_H
#define RT_NETNS_H

#include <stddef.h>

/* The extra server arguments that make a server listen on every
 * loopback address of the namespace (for rt_redis_opts.args). */
#define RT_NETNS_BIND "--bind", "0.0.0.0"

/*
 * Enters a new network namespace (unshare(CLONE_NEWNET)), brings its
 * loopback up and makes the harness's nftables table there. 0, or -1
 * with the reason in why (not root, no user namespaces, no nft program,
 * no nf_tables in the kernel). Call before any thread exists: a
 * namespace is per thread, and threads made later inherit it.
 */
int rt_netns_enter(char *why, size_t cap);

/* What a program whose faults need the namespace does when it cannot
 * have one: prints "SKIP: name (why)" on stdout and returns 77, the exit
 * status meson counts as skipped. */
int rt_netns_skip(const char *name, const char *why);

/* The address client k dials the masters on: "127.0.0.<10 + k>". */
const char *rt_net_addr(int k, char *buf, size_t cap);

enum {
  RT_NET_REQUESTS = 1, /* packets to the master's port are dropped */
  RT_NET_REPLIES = 2,  /* packets from it are dropped */
  RT_NET_BOTH = 3
};

/*
 * Drops the TCP packets of port (a master's) in the directions dir, for
 * every client (addr NULL) or only for connections dialed to addr (a
 * client's rt_net_addr). Returns the cut's id (> 0), or -1 if nft failed
 * (with its message on stderr). The rules in force are replaced as one
 * nft transaction, so a change is atomic.
 */
int rt_net_cut(const char *addr, int port, int dir);
/* Removes one cut; 0 or -1. */
int rt_net_heal(int id);
/* Removes every cut; 0 or -1. */
int rt_net_heal_all(void);
/* Cuts in force. */
int rt_net_cuts(void);

#endif /* RT_NETNS_H */
