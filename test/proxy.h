/*
 * A TCP proxy in front of one test redis-server, for network faults that
 * signals cannot make: a master that one client cannot reach while others
 * can (cut), and a master that answers, but late (delay). It runs in a
 * thread of the test process, on a free loopback port; a client is given
 * rt_proxy_url() instead of the server's own address.
 *
 * Cut closes every connection through the proxy and refuses new ones
 * (accepted and closed at once), so nothing sent before the cut reaches
 * the server later: unlike SIGSTOP, where commands wait in the socket and
 * run on SIGCONT. Delay holds every chunk from client to server for that
 * many ms (order kept), so each command is answered that much later;
 * reply delay holds every chunk from server to client, so each reply
 * comes that much after the server ran the command.
 */
#ifndef RT_PROXY_H
#define RT_PROXY_H

typedef struct rt_proxy rt_proxy;

/* Starts a proxy to 127.0.0.1:target_port. NULL on failure. */
rt_proxy *rt_proxy_start(int target_port);
/* "127.0.0.1:PORT" of the proxy. */
const char *rt_proxy_url(const rt_proxy *p);
/* Closes every connection and refuses new ones until rt_proxy_pass. */
void rt_proxy_cut(rt_proxy *p);
/* Forwards again (new connections), without delay. */
void rt_proxy_pass(rt_proxy *p);
/* Holds client-to-server data ms before forwarding it (0: none). */
void rt_proxy_delay(rt_proxy *p, int ms);
/* Holds server-to-client data ms before forwarding it (0: none; what is
 * held still goes at its time). */
void rt_proxy_reply_delay(rt_proxy *p, int ms);
/* Closes everything and joins the thread. Safe on NULL. */
void rt_proxy_stop(rt_proxy *p);

#endif
