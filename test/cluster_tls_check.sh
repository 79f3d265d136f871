#!/usr/bin/env bash
# A Redis Cluster over TLS as a master (rediss-cluster://), through the
# rlock tool: a throwaway CA and server certificate (openssl), six
# TLS-only nodes (tls-cluster and tls-replication on, cluster bus over TLS
# too), joined by redis-cli --tls --cluster create. Then: exec runs a
# command under a lock; status, while another exec holds a lock, finds it
# on the node of its slot; and without the CA the tool refuses the nodes'
# certificate rather than talk to them. One PASS/FAIL line each.
# (harness_cluster.h starts plain clusters only.)
#   cluster_tls_check.sh RLOCK_TOOL
set -uo pipefail
tool=$1
# The server program as the harness takes it (rt_server_program), and its
# client: $RLOCK_TEST_SERVER (valkey-server: valkey-cli), else Redis.
server=${RLOCK_TEST_SERVER:-redis-server}
case "$server" in *-server) cli=${server%-server}-cli ;; *) cli=redis-cli ;; esac
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1

openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem \
  -days 1 -subj "/CN=rlock test CA" 2>/dev/null &&
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr \
  -subj "/CN=127.0.0.1" 2>/dev/null &&
printf 'subjectAltName=IP:127.0.0.1\n' >ext &&
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
  -out srv.pem -days 1 -extfile ext 2>/dev/null ||
  { echo "FAIL: cluster_tls_setup (openssl)"; exit 1; }

# Six ports whose cluster bus port (+10000) is free too.
ports=$(python3 - <<'EOF'
import socket
out, socks = [], []
while len(out) < 6:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if p > 55535: s.close(); continue
    try:
        b = socket.socket(); b.bind(("127.0.0.1", p + 10000))
    except OSError:
        s.close(); continue
    socks += [s, b]; out.append(p)
print(" ".join(map(str, out)))
EOF
)
addrs=()
for p in $ports; do
  mkdir "n$p"
  "$server" --port 0 --tls-port "$p" --bind 127.0.0.1 \
    --tls-cert-file "$tmp/srv.pem" --tls-key-file "$tmp/srv.key" \
    --tls-ca-cert-file "$tmp/ca.pem" \
    --tls-auth-clients no --tls-cluster yes --tls-replication yes \
    --cluster-enabled yes --cluster-config-file nodes.conf \
    --cluster-node-timeout 2000 --save "" --appendonly no \
    --dir "$tmp/n$p" --logfile "$tmp/n$p/log" &
  pids+=($!)
  disown $! # killed at exit without a job report
  addrs+=("127.0.0.1:$p")
done
cli() { "$cli" --tls --cacert ca.pem "$@"; }
for p in $ports; do
  for _ in $(seq 100); do cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.05; done
done
if ! timeout 60 "$cli" --tls --cacert ca.pem --cluster create "${addrs[@]}" \
    --cluster-replicas 1 --cluster-yes >create.log 2>&1; then
  echo "FAIL: cluster_tls_setup ($cli --cluster create)"; cat create.log; tail -n 5 n*/log
  exit 1
fi
first=${addrs[0]}
for _ in $(seq 100); do
  cli -h 127.0.0.1 -p "${first#*:}" cluster info 2>/dev/null |
    grep -q cluster_state:ok && break
  sleep 0.1
done

url="rediss-cluster://$first?seed=${addrs[1]}"
failed=0
check() {
  local name=$1; shift
  if "$@"; then echo "PASS: $name"; else echo "FAIL: $name"; failed=1; fi
}

out=$(timeout 60 "$tool" --cacert ca.pem --masters "$url" exec tls-job -- \
  sh -c 'echo inside' 2>&1)
check cluster_tls_exec test "$out" = inside

timeout 60 "$tool" --cacert ca.pem --masters "$url" exec tls-held -- \
  sleep 4 >/dev/null 2>&1 &
holder=$!
for _ in $(seq 50); do
  status=$(timeout 60 "$tool" --cacert ca.pem --masters "$url" status \
    tls-held 2>&1)
  echo "$status" | grep -q "held by" && break
  sleep 0.1
done
check cluster_tls_status_held sh -c 'echo "$0" | grep -q "): held by .* (count 1)"' "$status"
# The node status names has the key (another node would answer MOVED).
node=$(echo "$status" | sed -n 's/.*(node 127\.0\.0\.1:\([0-9]*\)).*/\1/p' | head -1)
check cluster_tls_key_on_its_node test "$(cli -p "${node:-0}" exists 'rlock:{tls-held}' 2>&1)" = 1
wait "$holder"
check cluster_tls_exec_held test $? -eq 0

out=$(timeout 60 "$tool" --masters "$url" status tls-held 2>&1)
check cluster_tls_unknown_ca_refused sh -c 'echo "$0" | grep -q "certificate verify failed"' "$out"
[ $failed = 0 ] || echo "$status"
exit $failed
