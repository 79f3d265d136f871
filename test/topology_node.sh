#!/bin/sh
# harness.c starts every server as "SERVER --port P ... --dir D ...". The
# cluster and Sentinel harnesses (harness_node.c) have it run this script
# as SERVER for their starts (rt_redis_opts.server), so that a
# cluster node or a sentinel is still a server of harness.c's (its process
# group, its PR_SET_PDEATHSIG, its directory, its cleanup, its kill, pause
# and restart), while getting the few arguments harness.c does not give:
#
#   RT_TOPO_ARGS      more arguments, appended so that they win; split on
#                     blanks and never globbed (they contain no blanks)
#   RT_TOPO_SENTINEL  when 1, run as a sentinel on D/sentinel.conf, which
#                     is created empty on the first start and kept for a
#                     restart (sentinel writes its state into it)
#   RT_TOPO_SERVER    the server program (harness.c's rt_server_program():
#                     $RLOCK_TEST_SERVER or redis-server); a sentinel is
#                     the same program with --sentinel
#
# exec keeps the pid harness.c forked, so its checks on the pid still hold.
# An exit status of 126 tells harness.c that the server cannot be run at
# all, rather than that its port was taken.
set -f
server=${RT_TOPO_SERVER:-redis-server}
if [ "${RT_TOPO_SENTINEL:-0}" = 1 ]; then
  dir='' prev=''
  for a in "$@"; do
    [ "$prev" = --dir ] && dir=$a
    prev=$a
  done
  [ -n "$dir" ] || { echo "topology_node.sh: no --dir argument" >&2; exit 126; }
  [ -e "$dir/sentinel.conf" ] || : >"$dir/sentinel.conf" || exit 126
  # shellcheck disable=SC2086 # RT_TOPO_ARGS is meant to be split.
  exec "$server" "$dir/sentinel.conf" --sentinel "$@" $RT_TOPO_ARGS
fi
# shellcheck disable=SC2086
exec "$server" "$@" $RT_TOPO_ARGS
