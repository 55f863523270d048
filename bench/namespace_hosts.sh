# Network-namespace hosts for the benchmarks that cross hosts (sourced by
# run_multihost.sh and run_scale.sh; root only): a bridge, a namespace per
# host with a veth into the bridge, an sshd in each, and tc tbf shaping.
# Names of the benchmarks' own (the tests use hvdt*): hvdbN, 10.212.0.N+2.
#
#   hosts_up COUNT     makes hosts 0..COUNT-1 and their sshds; sets
#                      $work (a folder removed on exit), $ssh_opts and
#                      $user_key; registers the cleanup on EXIT
#   hosts_shape RATE   each host's link at RATE Gbit/s both ways (0:
#                      unshaped, the veths' own speed)
#   addr I, ns I       host I's address and namespace
#   host_list H R      "addr0:R,addr1:R,..." for H hosts

ns() { echo "hvdb$1"; }
addr() { echo "10.212.0.$(($1 + 2))"; }
host_list() {
  local out="" i
  for ((i = 0; i < $1; ++i)); do out+="${out:+,}$(addr "$i"):$2"; done
  echo "$out"
}

_hosts_count=0
_sshd_pids=()
_hosts_cleanup() {
  local p i
  for p in "${_sshd_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for ((i = 0; i < _hosts_count; ++i)); do
    ip link del "$(ns "$i")a" 2>/dev/null || true
    ip netns del "$(ns "$i")" 2>/dev/null || true
  done
  ip link del hvdbbr0 2>/dev/null || true
  [[ -n ${work:-} ]] && rm -rf "$work"
}

hosts_up() {
  local count=$1 i n t
  _hosts_count=$count
  work=$(mktemp -d)
  trap _hosts_cleanup EXIT
  trap 'exit 130' INT TERM
  ip link add hvdbbr0 type bridge
  ip addr add 10.212.0.1/24 dev hvdbbr0
  ip link set hvdbbr0 up
  for ((i = 0; i < count; ++i)); do
    n=$(ns "$i")
    ip netns add "$n"
    ip link add "${n}a" type veth peer name "${n}b"
    ip link set "${n}b" netns "$n"
    ip link set "${n}a" master hvdbbr0 up
    ip netns exec "$n" ip addr add "$(addr "$i")/24" dev "${n}b"
    ip netns exec "$n" ip link set "${n}b" up
    ip netns exec "$n" ip link set lo up
  done
  # An sshd per host, one key for all; known hosts in a HOME of our own.
  mkdir -p /run/sshd "$work/home/.ssh"
  user_key=$work/user_key
  ssh-keygen -q -t ed25519 -N '' -f "$user_key"
  ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
  cp "$user_key.pub" "$work/authorized_keys"
  cat > "$work/sshd_config" <<EOF
Port 22
HostKey $work/host_key
AuthorizedKeysFile $work/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel ERROR
MaxStartups 200
EOF
  for ((i = 0; i < count; ++i)); do
    ip netns exec "$(ns "$i")" /usr/sbin/sshd -D -e -f "$work/sshd_config" \
      -o "ListenAddress=$(addr "$i")" -o "PidFile=$work/sshd$i.pid" \
      2> "$work/sshd$i.log" &
    _sshd_pids+=($!)
  done
  # (Each probe leaves a line in that host's sshd log.)
  for ((i = 0; i < count; ++i)); do
    for ((t = 0; t < 200; ++t)); do
      bash -c "exec 3<>/dev/tcp/$(addr "$i")/22" 2>/dev/null && break
      sleep 0.05
    done
  done
  ssh_opts="-i $user_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
}

# tbf on both ends of each veth; the bucket holds 1 ms at the rate (at
# least 64 KiB).
hosts_shape() {
  local rate=$1 burst i n
  for ((i = 0; i < _hosts_count; ++i)); do
    n=$(ns "$i")
    if ((rate == 0)); then
      tc qdisc del dev "${n}a" root 2>/dev/null || true
      ip netns exec "$n" tc qdisc del dev "${n}b" root 2>/dev/null || true
      continue
    fi
    burst=$((rate * 125000))
    ((burst < 65536)) && burst=65536
    tc qdisc replace dev "${n}a" root tbf rate "${rate}gbit" burst "$burst" latency 20ms
    ip netns exec "$n" tc qdisc replace dev "${n}b" root tbf rate "${rate}gbit" burst "$burst" latency 20ms
  done
}
