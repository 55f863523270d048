"""What the chaos runs stand on: hvd-rendezvousd (on a state directory or
on etcd), a three-member etcd cluster, a small tmpfs to fill, and
network-namespace hosts with an sshd each. The cluster, the tmpfs and the
hosts are made once per harness run and shared by its runs; each run
gets a daemon of its own."""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "util"))
from netns_hosts import NetnsHosts  # noqa: E402

GRACE_S = 2  # the daemon's --shutdown-grace-seconds
CLOSE_MARGIN_S = 5.0  # past the grace, the daemon's own bound


class Started(subprocess.Popen):
    """A child whose stderr is read into `log` by a thread; `ready` is set
    on the first line that matches `ready_pattern`."""

    def __init__(self, argv: List[str], ready_pattern: str, **kw) -> None:
        super().__init__(argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, **kw)
        self.log: List[str] = []
        self.match: Optional[re.Match] = None
        self.ready = threading.Event()
        self._pattern = re.compile(ready_pattern)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.stderr is not None
        for line in self.stderr:
            self.log.append(line.rstrip("\n"))
            m = self._pattern.search(line)
            if m and not self.ready.is_set():
                self.match = m
                self.ready.set()

    def wait_ready(self, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while not self.ready.wait(0.05):
            if self.poll() is not None or time.monotonic() > deadline:
                self.kill()
                self.wait()
                time.sleep(0.1)  # the reader takes its last lines
                raise RuntimeError(f"{what} did not start: " +
                                   " | ".join(self.log[-3:]))


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class Daemon:
    """hvd-rendezvousd on a state directory or an etcd prefix, restartable
    on its address."""

    def __init__(self, build: str, token_file: str, store: List[str],
                 listen: str = "127.0.0.1:0") -> None:
        self.proc = Started(
            [os.path.join(build, "rendezvous", "hvd-rendezvousd"), "--listen",
             listen, "--admin-token-file", token_file, *store,
             "--shutdown-grace-seconds", str(GRACE_S), "--log-level",
             "INFO"], r"listening on (\S+)")
        self.proc.wait_ready(30, "hvd-rendezvousd")
        assert self.proc.match is not None
        self.address = self.proc.match.group(1)

    def job_ids(self) -> List[str]:
        return [m.group(1) for line in self.proc.log
                for m in [re.search(r"created (?:elastic )?job (\w+)", line)]
                if m]

    def stop(self, sig: int) -> float:
        """Signals the daemon and waits for it; the seconds it took."""
        start = time.monotonic()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(GRACE_S + CLOSE_MARGIN_S + 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return time.monotonic() - start


class EtcdCluster:
    """Three etcd members on loopback; a member can be killed and started
    again on its data."""

    def __init__(self, work: str) -> None:
        self.work = work
        self.members = []
        for i in range(3):
            self.members.append({
                "name": f"chaos{i}", "data": os.path.join(work, f"etcd{i}"),
                "client": f"127.0.0.1:{free_port()}",
                "peer": f"127.0.0.1:{free_port()}", "proc": None})
        self.initial = ",".join(f"{m['name']}=http://{m['peer']}"
                                for m in self.members)
        for i in range(3):
            self._start(i, "new")
        for m in self.members:
            m["proc"].wait_ready(60, "etcd " + m["name"])

    def _start(self, i: int, state: str) -> None:
        m = self.members[i]
        m["proc"] = Started(
            ["etcd", "--name", m["name"], "--data-dir", m["data"],
             "--listen-client-urls", "http://" + m["client"],
             "--advertise-client-urls", "http://" + m["client"],
             "--listen-peer-urls", "http://" + m["peer"],
             "--initial-advertise-peer-urls", "http://" + m["peer"],
             "--initial-cluster", self.initial, "--initial-cluster-state",
             state, "--initial-cluster-token", "hvd-chaos"],
            r"ready to serve client requests")

    def store(self) -> str:
        return "etcd://" + ",".join(m["client"] for m in self.members)

    def kill(self, i: int) -> None:
        proc = self.members[i]["proc"]
        proc.kill()
        proc.wait()

    def restart(self, i: int) -> None:
        self._start(i, "existing")
        self.members[i]["proc"].wait_ready(60, "etcd " +
                                           self.members[i]["name"])

    def close(self) -> None:
        for m in self.members:
            if m["proc"] is not None and m["proc"].poll() is None:
                m["proc"].terminate()
                m["proc"].wait()


class SmallDisk:
    """A tmpfs of a few MiB for daemons' --state-dir; fill() takes every
    byte left, free() gives them back."""

    def __init__(self, work: str, mib: int = 8) -> None:
        self.path = os.path.join(work, "disk")
        os.makedirs(self.path)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m",
                        "chaos-disk", self.path], check=True)
        self.filler = os.path.join(self.path, "filler")

    def fill(self) -> None:
        chunk = b"\0" * (64 << 10)
        with open(self.filler, "wb", buffering=0) as f:
            try:
                while True:
                    f.write(chunk)
            except OSError:
                pass  # full
            try:
                while True:
                    f.write(b"\0")
            except OSError:
                pass  # not a byte left

    def free(self) -> None:
        try:
            os.unlink(self.filler)
        except FileNotFoundError:
            pass

    def close(self) -> None:
        subprocess.run(["umount", self.path], check=False)


class Hosts(NetnsHosts):
    """Two network-namespace hosts, hvdcN at 10.213.0.N+2 on a bridge
    (10.213.0.1 is this machine), each with an sshd taking one key."""

    def __init__(self, work: str, count: int = 2) -> None:
        self.work = work
        self.sshd: List[subprocess.Popen] = []
        super().__init__("hvdc", 0, count)
        try:
            self._start_sshd()
        except Exception:
            self.close()
            raise

    def _start_sshd(self) -> None:
        home = os.path.join(self.work, "home")
        os.makedirs(os.path.join(home, ".ssh"))
        self.home = home
        self.user_key = os.path.join(self.work, "user_key")
        for key in (self.user_key, os.path.join(self.work, "host_key")):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "",
                            "-f", key], check=True)
        shutil.copy(self.user_key + ".pub",
                    os.path.join(self.work, "authorized_keys"))
        config = os.path.join(self.work, "sshd_config")
        with open(config, "w") as f:
            f.write(f"Port 22\nHostKey {self.work}/host_key\n"
                    f"AuthorizedKeysFile {self.work}/authorized_keys\n"
                    "PermitRootLogin prohibit-password\n"
                    "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                    "UsePAM no\nStrictModes no\nLogLevel ERROR\n"
                    "MaxStartups 200\n")
        os.makedirs("/run/sshd", exist_ok=True)
        for i in range(self.count):
            self.sshd.append(subprocess.Popen(
                ["ip", "netns", "exec", self.ns(i), "/usr/sbin/sshd", "-D",
                 "-e", "-f", config, "-o", "ListenAddress=" + self.addr(i),
                 "-o", f"PidFile={self.work}/sshd{i}.pid"],
                stderr=subprocess.DEVNULL))
        for i in range(self.count):
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection((self.addr(i), 22), 1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"sshd on {self.addr(i)} did not "
                                           "start")
                    time.sleep(0.05)

    def host_list(self) -> str:
        return ",".join(f"{self.addr(i)}:1" for i in range(self.count))

    def processes(self) -> List[int]:
        """Processes inside the hosts' namespaces, other than the sshd
        listeners (and `ip netns exec` wrappers) this fixture started."""
        ours = {p.pid for p in self.sshd}
        for i in range(self.count):
            try:
                with open(f"{self.work}/sshd{i}.pid") as f:
                    ours.add(int(f.read().strip()))
            except (OSError, ValueError):
                pass
        return super().processes(list(ours))

    def close(self) -> None:
        for p in self.sshd:
            p.terminate()
            p.wait()
        super().close()


class World:
    """The shared parts, made as the chosen faults need them; close()
    removes them all."""

    def __init__(self, build: str, need_etcd: bool, need_disk: bool,
                 need_hosts: bool) -> None:
        self.build = build
        self.work = tempfile.mkdtemp(prefix="hvd-chaos-world-")
        self.etcd: Optional[EtcdCluster] = None
        self.disk: Optional[SmallDisk] = None
        self.hosts: Optional[Hosts] = None
        try:
            if need_etcd:
                self.etcd = EtcdCluster(self.work)
            if need_disk:
                self.disk = SmallDisk(self.work)
            if need_hosts:
                self.hosts = Hosts(self._hosts_dir())
        except BaseException:
            self.close()
            raise

    def _hosts_dir(self) -> str:
        d = os.path.join(self.work, "hosts")
        os.makedirs(d)
        return d

    def close(self) -> None:
        for part in (self.hosts, self.disk, self.etcd):
            if part is not None:
                part.close()
        shutil.rmtree(self.work, ignore_errors=True)


def unavailable() -> Dict[str, str]:
    """What this process cannot make, and why: "disk" (the tmpfs to fill),
    "hosts" (namespace hosts with sshd), "etcd"."""
    out = {}
    if os.geteuid() != 0:
        out["disk"] = out["hosts"] = \
            "needs root (a tmpfs mount, network namespaces)"
    elif not os.path.exists("/usr/sbin/sshd"):
        out["hosts"] = "needs /usr/sbin/sshd"
    if shutil.which("etcd") is None:
        out["etcd"] = "needs etcd on PATH"
    return out
