"""Network-namespace hosts for the Python-driven tests (chaos, container):
`count` namespaces PREFIX0.. on a bridge PREFIXbr0, at 10.213.SUBNET.N+2
(10.213.SUBNET.1 is this machine). Needs root; close() removes them."""

import os
import subprocess
from typing import Dict, List


def ns_of(pid: int) -> str:
    """The network namespace of `pid` ("" once it is gone)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return ""


class NetnsHosts:
    def __init__(self, prefix: str, subnet: int, count: int = 2) -> None:
        self.prefix = prefix
        self.subnet = subnet
        self.count = count
        self.bridge = prefix + "br0"
        self.gateway = f"10.213.{subnet}.1"
        try:
            self._make()
        except Exception:
            self.close()
            raise
        self.namespaces: Dict[str, int] = {
            self.ns_inode(i): i for i in range(count)}

    def _make(self) -> None:
        self._ip("link", "add", self.bridge, "type", "bridge")
        self._ip("addr", "add", self.gateway + "/24", "dev", self.bridge)
        self._ip("link", "set", self.bridge, "up")
        for i in range(self.count):
            n = self.ns(i)
            self._ip("netns", "add", n)
            self._ip("link", "add", n + "a", "type", "veth", "peer", "name",
                     n + "b")
            self._ip("link", "set", n + "b", "netns", n)
            self._ip("link", "set", n + "a", "master", self.bridge, "up")
            for args in (["addr", "add", self.addr(i) + "/24", "dev", n + "b"],
                         ["link", "set", n + "b", "up"],
                         ["link", "set", "lo", "up"]):
                self._ip("netns", "exec", n, "ip", *args)

    def ns(self, i: int) -> str:
        return f"{self.prefix}{i}"

    def addr(self, i: int) -> str:
        return f"10.213.{self.subnet}.{i + 2}"

    @staticmethod
    def _ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True)

    def ns_inode(self, i: int) -> str:
        probe = subprocess.run(
            ["ip", "netns", "exec", self.ns(i), "readlink", "/proc/self/ns/net"],
            check=True, capture_output=True, text=True)
        return probe.stdout.strip()

    def link(self, i: int, up: bool) -> None:
        self._ip("link", "set", self.ns(i) + "a", "up" if up else "down")

    def processes(self, ours: List[int] = ()) -> List[int]:
        """Processes inside the hosts' namespaces but `ours`."""
        found = []
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) not in ours and \
                    ns_of(int(name)) in getattr(self, "namespaces", {}):
                found.append(int(name))
        return found

    def close(self) -> None:
        for i in range(self.count):
            subprocess.run(["ip", "link", "del", self.ns(i) + "a"],
                           check=False, stderr=subprocess.DEVNULL)
            subprocess.run(["ip", "netns", "del", self.ns(i)], check=False,
                           stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "link", "del", self.bridge], check=False,
                       stderr=subprocess.DEVNULL)
