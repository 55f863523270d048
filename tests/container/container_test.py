#!/usr/bin/python3
"""hvd in containers, as Horovod's users run it: the images of
packaging/container/Containerfile built with podman from hvd's own .debs,
then on two network-namespace hosts one container each, serving SSH on a
port of its own, and from the first:

  1. horovodrun -np 4 -H HOST1:2,HOST2:2 -p PORT of train_mnist and of
     examples/pytorch/pytorch_mnist.py (mounted, with the image's digits),
     each rank's accuracy line checked;
  2. hvd-rendezvousd in a container of its own, and a job of the two
     others on it (--rendezvous-addr);
  3. a worker's container killed mid-job: the job ends with one clear
     line, and no container, process or namespace of the test is left.

    container_test.py BUILD_DIR SOURCE_DIR

The base image (`FROM debian:12`) is a Debian 12 root made with mmdebstrap
from this machine's apt sources (no registry is reachable), kept as a
tarball with the podman storage under HVD_CONTAINER_CACHE
(/var/cache/hvd-container), so that a second run builds only hvd's
layers. Prints BENCH lines: the images' build time and sizes. Exits 77
(a skip, with the reason) where podman cannot run here: not root, no
podman, runc or mmdebstrap, no network namespaces.
"""

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "util"))
from netns_hosts import NetnsHosts  # noqa: E402

CACHE = os.environ.get("HVD_CONTAINER_CACHE", "/var/cache/hvd-container")
RUNROOT = "/run/hvd-container-test"
PREFIX = "hvd-ctest-"  # every container of the test is named so
SSH_PORT = 12345
RDV_PORT = 29400
JOB_TIMEOUT_S = 600
# The slim root: no manuals, documentation or translations, and no
# recommended packages in what the images install later either.
MMDEBSTRAP_OPTS = [
    "--variant=minbase",
    "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
    "--dpkgopt=path-exclude=/usr/share/man/*",
    "--dpkgopt=path-exclude=/usr/share/doc/*",
    "--dpkgopt=path-include=/usr/share/doc/*/copyright",
    "--dpkgopt=path-exclude=/usr/share/locale/*",
    "--dpkgopt=path-exclude=/usr/share/info/*",
    '--aptopt=APT::Install-Recommends "false"',
]


class Skip(Exception):
    pass


class Failed(Exception):
    pass


def say(text: str) -> None:
    print(f"container_test: {text}", flush=True)


def run(argv: List[str], timeout: float = 300, check: bool = True,
        **kw) -> subprocess.CompletedProcess:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                       **kw)
    if check and p.returncode != 0:
        raise Failed(f"{' '.join(argv[:6])}... exited {p.returncode}: "
                     f"{p.stderr.strip()[-2000:]}")
    return p


class Podman:
    """podman on the test's storage (the cache) and run root, with the
    settings this machine needs (runc, cgroupfs, no default ulimits)."""

    def __init__(self, work: str) -> None:
        conf = os.path.join(work, "containers.conf")
        with open(conf, "w") as f:
            f.write('[containers]\ndefault_ulimits = []\n'
                    '[network]\nnetwork_backend = "netavark"\n'
                    '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n'
                    'events_logger = "file"\n'
                    f'tmp_dir = "{RUNROOT}/libpod"\n')
        self.env = dict(os.environ, CONTAINERS_CONF=conf)
        self.base = ["podman", "--root", os.path.join(CACHE, "storage"),
                     "--runroot", RUNROOT]

    def __call__(self, *args: str, timeout: float = 600,
                 check: bool = True) -> subprocess.CompletedProcess:
        return run(self.base + list(args), timeout=timeout, check=check,
                   env=self.env)

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(self.base + list(args), env=self.env,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    def exists(self, image: str) -> bool:
        return self("image", "exists", image, check=False).returncode == 0

    def ours(self) -> List[str]:
        """The test's containers, running or not."""
        p = self("ps", "-a", "--format", "{{.Names}}", check=False)
        return [n for n in p.stdout.split() if n.startswith(PREFIX)]


def check_prerequisites() -> None:
    if os.geteuid() != 0:
        raise Skip("needs root (rootful podman, network namespaces)")
    for tool in ("podman", "runc", "mmdebstrap", "ip", "ssh-keygen",
                 "/usr/lib/podman/netavark"):
        if shutil.which(tool) is None:
            raise Skip(f"'{tool}' is missing (packaging/install-deps.sh "
                       "installs it)")


def base_image(podman: Podman, src: str) -> None:
    """debian:12 in the storage, from the cached slim root (made first
    when missing)."""
    sources = run([os.path.join(src, "tests/util/debian12_sources.sh")]).stdout
    if not sources.strip():
        raise Failed("this machine's apt sources name no Debian 12 archive "
                     "to make the base image from")
    key = hashlib.sha256(
        ("\n".join(MMDEBSTRAP_OPTS) + sources).encode()).hexdigest()[:16]
    tarball = os.path.join(CACHE, f"debian12-slim-{key}.tar")
    tag = f"localhost/hvd-ctest-base:{key}"
    if podman.exists(tag) and podman.exists("docker.io/library/debian:12"):
        return
    if not os.path.exists(tarball):
        say("making the base image's Debian 12 root with mmdebstrap")
        os.makedirs(CACHE, exist_ok=True)
        p = subprocess.run(["mmdebstrap", *MMDEBSTRAP_OPTS, "--format=tar",
                            "bookworm", tarball + ".part", "-"],
                           input=sources, capture_output=True, text=True,
                           timeout=900)
        if p.returncode != 0:
            raise Failed("mmdebstrap could not make the base root (does the "
                         f"mirror answer?): {p.stderr.strip()[-1500:]}")
        os.replace(tarball + ".part", tarball)
    podman("import", tarball, tag)
    podman("tag", tag, "docker.io/library/debian:12")


def build_images(podman: Podman, src: str, debs: str, work: str) -> None:
    context = os.path.join(work, "context")
    os.makedirs(os.path.join(context, "debs"))
    for name in ("Containerfile", "hvd-sshd"):
        shutil.copy(os.path.join(src, "packaging/container", name), context)
    for deb in os.listdir(debs):
        if deb.endswith(".deb") and not deb.startswith("libhvd-dev"):
            shutil.copy(os.path.join(debs, deb),
                        os.path.join(context, "debs"))
    start = time.monotonic()
    for target, tag in (("hvd-cpp", "localhost/hvd-cpp:ctest"),
                        ("hvd", "localhost/hvd:ctest")):
        # The RUN steps reach Debian's archive through this machine's
        # network (the build's own would need a NAT here).
        podman("build", "--pull=never", "--network", "host", "--target",
               target, "-t", tag, "-f",
               os.path.join(context, "Containerfile"), context, timeout=1200)
    print(f"BENCH container.build {time.monotonic() - start:.1f} s")
    for tag, name in (("localhost/hvd-cpp:ctest", "hvd-cpp"),
                      ("localhost/hvd:ctest", "hvd")):
        size = int(podman("image", "inspect", "--format", "{{.Size}}",
                          tag).stdout.strip())
        print(f"BENCH container.image.{name} {size / 1e6:.0f} MB")


def ssh_keys(work: str, count: int) -> List[str]:
    """One /root/.ssh per container: the same user key, authorized
    everywhere (a copy each: ssh writes known_hosts there)."""
    key = os.path.join(work, "id_ed25519")
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key])
    dirs = []
    for i in range(count):
        d = os.path.join(work, f"ssh{i}")
        os.makedirs(d, mode=0o700)
        shutil.copy(key, d)
        shutil.copy(key + ".pub", d)
        shutil.copy(key + ".pub", os.path.join(d, "authorized_keys"))
        dirs.append(d)
    return dirs


def wait_port(addr: str, port: int, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection((addr, port), 1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise Failed(f"{what} on {addr}:{port} did not start")
            time.sleep(0.1)


class Cluster:
    """Two namespace hosts with a container each, serving SSH."""

    def __init__(self, podman: Podman, work: str) -> None:
        self.podman = podman
        self.keys = ssh_keys(work, 2)
        self.hosts = NetnsHosts("hvdk", 2, 2)
        self.names = [f"{PREFIX}{i}" for i in range(2)]

    def start(self, src: str) -> None:
        for i, name in enumerate(self.names):
            self.podman("run", "-d", "--name", name,
                   "--network", f"ns:/run/netns/{self.hosts.ns(i)}",
                   "--shm-size", "1g",
                   "-v", f"{self.keys[i]}:/root/.ssh",
                   "-v", f"{os.path.join(src, 'examples/pytorch')}:/examples:ro",
                   "localhost/hvd:ctest", "hvd-sshd", str(SSH_PORT))
        for i in range(2):
            wait_port(self.hosts.addr(i), SSH_PORT, "the container's sshd")

    def host_list(self) -> str:
        return ",".join(f"{self.hosts.addr(i)}:2" for i in range(2))

    def horovodrun(self, args: List[str]) -> List[str]:
        """The command that runs horovodrun in the first container."""
        return self.podman.base + [
            "exec", "-w", "/tmp", self.names[0], "horovodrun", "-np", "4",
            "-H", self.host_list(), "-p", str(SSH_PORT), *args]

    def close(self) -> None:
        for name in self.podman.ours():
            self.podman("rm", "-f", "-t", "0", name, check=False)
        self.hosts.close()


# Well above chance (0.1): one epoch of 4,000 digits over 4 ranks (8
# steps) reaches about 0.6 where the ranks train together.
MIN_ACCURACY = 0.4


def expect_accuracy(out: str, pattern: str, percent: bool, what: str) -> None:
    """The last match of `pattern` (its group: the accuracy) is at least
    MIN_ACCURACY."""
    found = re.findall(pattern, out)
    if not found:
        raise Failed(f"{what}: no accuracy line in:\n{out[-3000:]}")
    accuracy = float(found[-1]) / (100 if percent else 1)
    if accuracy < MIN_ACCURACY:
        raise Failed(f"{what}: accuracy {accuracy} (at least {MIN_ACCURACY} "
                     f"expected):\n{out[-3000:]}")
    say(f"{what}: test accuracy {accuracy:.3f}")


TRAIN_MNIST_ACCURACY = r"Test accuracy: ([0-9.]+)"
# One epoch of 4,000 digits, tested on 1,000.
SHORT = ["--epochs", "1", "--train-limit", "4000", "--test-limit", "1000"]


def job(c: Cluster, args: List[str], what: str) -> str:
    """horovodrun ARGS from the first container, which must succeed; its
    output."""
    p = run(c.horovodrun(args), timeout=JOB_TIMEOUT_S, check=False,
            env=c.podman.env)
    out = p.stdout + p.stderr
    if p.returncode != 0:
        raise Failed(f"{what} exited {p.returncode}:\n{out[-3000:]}")
    return out


def jobs_across_containers(c: Cluster) -> None:
    out = job(c, ["train_mnist", *SHORT], "train_mnist across containers")
    expect_accuracy(out, TRAIN_MNIST_ACCURACY, False, "train_mnist")
    out = job(c, ["python3", "/examples/pytorch_mnist.py", *SHORT,
                  "--no-checkpoint", "--data-dir", "/usr/share/hvd/mnist"],
              "pytorch_mnist.py across containers")
    expect_accuracy(out, r"Accuracy: ([0-9.]+)%", True, "pytorch_mnist.py")
    if "weights identical on every rank" not in out:
        raise Failed(f"pytorch_mnist.py: the ranks' weights:\n{out[-3000:]}")


def job_on_a_rendezvous_container(c: Cluster, work: str) -> None:
    token_dir = os.path.join(work, "rdv")
    os.makedirs(token_dir, mode=0o700)
    token = os.path.join(token_dir, "admin-token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(os.urandom(24).hex() + "\n")
    addr = f"{c.hosts.addr(0)}:{RDV_PORT}"
    c.podman("run", "-d", "--name", PREFIX + "rendezvous",
             "--network", f"ns:/run/netns/{c.hosts.ns(0)}",
             "-v", f"{token_dir}:/etc/hvd:ro", "localhost/hvd-cpp:ctest",
             "hvd-rendezvousd", "--listen", addr, "--admin-token-file",
             "/etc/hvd/admin-token")
    wait_port(c.hosts.addr(0), RDV_PORT, "hvd-rendezvousd")
    # The launcher's container reads the token from its own copy.
    shutil.copy(token, os.path.join(c.keys[0], "rdv-token"))
    out = job(c, ["--rendezvous-addr", addr, "--rendezvous-token-file",
                  "/root/.ssh/rdv-token", "train_mnist", *SHORT],
              "the job on hvd-rendezvousd's container")
    expect_accuracy(out, TRAIN_MNIST_ACCURACY, False,
                    "train_mnist on hvd-rendezvousd")
    c.podman("rm", "-f", "-t", "5", PREFIX + "rendezvous")


def a_worker_container_killed(c: Cluster) -> None:
    job = subprocess.Popen(
        c.horovodrun(["train_mnist", "--epochs", "20"]), env=c.podman.env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: List[str] = []
    assert job.stdout is not None
    # Killed once the job trains: its first progress line.
    for line in job.stdout:
        lines.append(line)
        if "train_mnist advanced" in line:  # every rank has joined
            break
    c.podman("kill", c.names[1])
    try:
        rest, _ = job.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        job.kill()
        job.communicate()
        raise Failed("the job went on for 120 s after a worker's container "
                     "was killed")
    lines += rest.splitlines(keepends=True)
    said = [line.strip() for line in lines if line.startswith("horovodrun:")]
    if job.returncode == 0 or not said:
        raise Failed(f"after the kill the job exited {job.returncode}, "
                     f"saying:\n{''.join(lines)[-3000:]}")
    say(f"a worker's container killed: exit {job.returncode}, {said[-1]}")


def nothing_left(podman: Podman, hosts: NetnsHosts) -> None:
    left = podman.ours()
    if left:
        raise Failed(f"containers left: {left}")
    procs = hosts.processes()
    if procs:
        raise Failed(f"processes left in the hosts' namespaces: {procs}")


def main(argv: List[str]) -> int:
    if len(argv) != 3:
        print("usage: container_test.py BUILD_DIR SOURCE_DIR", file=sys.stderr)
        return 2
    build, src = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    try:
        check_prerequisites()
    except Skip as e:
        print(f"container_test: skipped: {e}")
        return 77
    work = tempfile.mkdtemp(prefix="hvd-ctest.")
    cluster: Optional[Cluster] = None
    podman: Optional[Podman] = None
    try:
        podman = Podman(work)
        debs = run([os.path.join(src, "tests/install/make_debs.sh"), build,
                    src], timeout=1800).stdout.strip()
        base_image(podman, src)
        build_images(podman, src, debs, work)
        cluster = Cluster(podman, work)
        cluster.start(src)
        jobs_across_containers(cluster)
        job_on_a_rendezvous_container(cluster, work)
        a_worker_container_killed(cluster)
        for name in podman.ours():
            podman("rm", "-f", "-t", "5", name)
        nothing_left(podman, cluster.hosts)
        say("passed")
        return 0
    except (Failed, subprocess.TimeoutExpired,
            subprocess.CalledProcessError) as e:
        print(f"container_test: FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        if cluster is not None:
            cluster.close()
        if podman is not None:
            # The images a rebuild replaced (the cache keeps the newest).
            podman("image", "prune", "-f", check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
