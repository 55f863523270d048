/* tcp_probe: what plain TCP carries between two hosts, the physical
 * reference of bench/run_multihost.sh.
 *   tcp_probe server ADDR PORT          serves one client, then exits
 *   tcp_probe client ADDR PORT [BYTES]  prints
 *     RESULT tcp.rtt <seconds>            4-byte ping-pong, the median round
 *     RESULT tcp.both_ways <bytes/s>      BYTES (256 MiB) each way at once,
 *                                         per direction
 * One stream each way, TCP_NODELAY, default socket buffers: what a
 * program that does nothing special gets. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 2000
#define CHUNK (1 << 20)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char* what) {
  perror(what);
  exit(1);
}

static void full_write(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) die("write");
    p += w;
    n -= (size_t)w;
  }
}

static void full_read(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r <= 0) die("read");
    p += r;
    n -= (size_t)r;
  }
}

struct bulk {
  int fd;
  uint64_t bytes;
};

extern "C" void* send_all(void* arg) {
  struct bulk* b = static_cast<struct bulk*>(arg);
  char* buf = static_cast<char*>(calloc(1, CHUNK));
  for (uint64_t left = b->bytes; left > 0;) {
    size_t n = left < CHUNK ? (size_t)left : CHUNK;
    full_write(b->fd, buf, n);
    left -= n;
  }
  free(buf);
  return NULL;
}

static void recv_all(int fd, uint64_t bytes) {
  char* buf = static_cast<char*>(malloc(CHUNK));
  for (uint64_t left = bytes; left > 0;) {
    size_t n = left < CHUNK ? (size_t)left : CHUNK;
    full_read(fd, buf, n);
    left -= n;
  }
  free(buf);
}

/* Both sides send `bytes` while they receive `bytes`. */
static double both_ways(int fd, uint64_t bytes) {
  struct bulk b = {fd, bytes};
  pthread_t t;
  double start = now();
  if (pthread_create(&t, NULL, send_all, &b) != 0) die("pthread_create");
  recv_all(fd, bytes);
  pthread_join(t, NULL);
  return now() - start;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static struct sockaddr_in address(const char* addr, int port) {
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
    fprintf(stderr, "tcp_probe: '%s' is not an IPv4 address\n", addr);
    exit(2);
  }
  return sa;
}

int main(int argc, char** argv) {
  if (argc < 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
    fprintf(stderr, "usage: tcp_probe server|client ADDR PORT [BYTES]\n");
    return 2;
  }
  const int server = strcmp(argv[1], "server") == 0;
  struct sockaddr_in sa = address(argv[2], atoi(argv[3]));
  uint64_t bytes = argc > 4 ? strtoull(argv[4], NULL, 10) : (256ull << 20);
  int one = 1, fd;
  if (server) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l, (struct sockaddr*)&sa, sizeof sa) != 0) die("bind");
    if (listen(l, 1) != 0) die("listen");
    fd = accept(l, NULL, NULL);
    if (fd < 0) die("accept");
    close(l);
  } else {
    /* The server may still be starting: try for 10 s. */
    for (int tries = 0;; ++tries) {
      fd = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(fd, (struct sockaddr*)&sa, sizeof sa) == 0) break;
      if (tries == 200) die("connect");
      close(fd);
      usleep(50000);
    }
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  /* The client says how much; the server echoes the pings. */
  uint64_t wire = bytes;
  if (server) {
    full_read(fd, (char*)&wire, sizeof wire);
  } else {
    full_write(fd, (const char*)&wire, sizeof wire);
  }
  static double rtt[ROUNDS];
  char ping[4] = {0};
  for (int i = 0; i < ROUNDS; ++i) {
    double t = now();
    if (server) {
      full_read(fd, ping, 4);
      full_write(fd, ping, 4);
    } else {
      full_write(fd, ping, 4);
      full_read(fd, ping, 4);
    }
    rtt[i] = now() - t;
  }
  double seconds = both_ways(fd, wire);
  if (!server) {
    qsort(rtt, ROUNDS, sizeof rtt[0], cmp);
    printf("RESULT tcp.rtt %.9f\n", rtt[ROUNDS / 2]);
    printf("RESULT tcp.both_ways %.1f\n", (double)wire / seconds);
  }
  close(fd);
  return 0;
}
