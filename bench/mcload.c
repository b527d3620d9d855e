/* mcload: a small memcached text-protocol load generator for bench/memcached.sh.
 *
 *   mcload HOST PORT CONNECTIONS THREADS SECONDS KEYS VALUE_BYTES MULTIGET [LOAD [MODE [DEPTH]]]
 *
 * Opens CONNECTIONS connections spread over THREADS threads. First every key "key:%08d"
 * (0 <= i < KEYS) is stored with a VALUE_BYTES value (skipped with LOAD = 0: the keys are already
 * there); then for SECONDS each connection loops, sending DEPTH requests at once (default 1:
 * unpipelined; 16: a 16-deep pipeline) and reading all their replies before the next batch.
 * MODE says what a request is: `mix` (default) 90% `get <key>` and 10% `set <key> 0 0
 * VALUE_BYTES` with MULTIGET = 1, `get` of MULTIGET keys otherwise; `get` always a get of
 * MULTIGET keys; `set` always a set. Keys are drawn uniformly with a per-connection xorshift
 * generator. Every reply is read in full and checked (a get must hit: all keys were loaded); a
 * protocol error stops the run with exit code 1.
 * Prints one line: "requests=<n> keys=<n> seconds=<s> rps=<requests/s> kps=<keys/s> misses=<n>"
 *
 * Built by bench/memcached.sh with `cc -O2 -pthread`. Linux (poll, clock_gettime).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF (1 << 18)
#define MAXDEPTH 64

enum mode { MIX, GET, SET };

struct conn {
    int fd;
    uint64_t rng;
    char *in;       /* BUF bytes: the replies of the batch in flight */
    char *out;      /* the batch being sent */
    size_t have;    /* bytes in `in` */
    size_t pos;     /* start of the first reply not yet parsed */
    int pending;    /* requests of the batch */
    int next;       /* the first of them whose reply is not complete */
    int want[MAXDEPTH]; /* keys asked by each get; -1: a set */
};

static const char *host;
static int port, nconns, nthreads, seconds, keys, vbytes, multiget, depth = 1;
static enum mode mode = MIX;
static char *value;
static volatile int stop;

struct result { uint64_t requests, keys, misses; int conns, failed; };

static uint64_t xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return *s = x;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int dial(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    inet_pton(AF_INET, host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); exit(2); }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) { perror("write"); exit(2); }
        p += w; n -= (size_t)w;
    }
}

/* Sends the next batch of `depth` requests of c; returns the keys its gets ask for. */
static int issue(struct conn *c) {
    size_t n = 0;
    int asked = 0;
    for (int d = 0; d < depth; d++) {
        int set = mode == SET || (mode == MIX && multiget == 1 && xorshift(&c->rng) % 10 == 0);
        if (set) {
            n += (size_t)sprintf(c->out + n, "set key:%08d 0 0 %d\r\n", (int)(xorshift(&c->rng) % keys), vbytes);
            memcpy(c->out + n, value, vbytes); n += vbytes;
            memcpy(c->out + n, "\r\n", 2); n += 2;
            c->want[d] = -1;
        } else {
            n += (size_t)sprintf(c->out + n, "get");
            for (int k = 0; k < multiget; k++)
                n += (size_t)sprintf(c->out + n, " key:%08d", (int)(xorshift(&c->rng) % keys));
            memcpy(c->out + n, "\r\n", 2); n += 2;
            c->want[d] = multiget;
            asked += multiget;
        }
    }
    send_all(c->fd, c->out, n);
    c->have = c->pos = 0;
    c->pending = depth;
    c->next = 0;
    return asked;
}

/* Parses the replies of c's batch that have arrived; 1 when all are complete, 0 when some are
 * not yet, -1 on a protocol error. Counts missed keys into *misses. */
static int complete(struct conn *c, uint64_t *misses) {
    while (c->next < c->pending) {
        int want = c->want[c->next];
        if (want < 0) {
            if (c->have - c->pos < 8) return 0;
            if (memcmp(c->in + c->pos, "STORED\r\n", 8) != 0) return -1;
            c->pos += 8;
            c->next++;
            continue;
        }
        size_t pos = c->pos;
        int found = 0, done = 0;
        while (!done) {
            char *nl = memmem(c->in + pos, c->have - pos, "\r\n", 2);
            if (!nl) return 0;
            size_t len = (size_t)(nl - (c->in + pos));
            if (len == 3 && memcmp(c->in + pos, "END", 3) == 0) { pos += 5; done = 1; break; }
            if (len < 6 || memcmp(c->in + pos, "VALUE ", 6) != 0) return -1;
            char *sp = memrchr(c->in + pos, ' ', len);
            long bytes = strtol(sp + 1, NULL, 10);
            size_t next = pos + len + 2 + (size_t)bytes + 2;
            if (next > c->have) return 0;
            pos = next;
            found++;
        }
        *misses += (uint64_t)(want - found);
        c->pos = pos;
        c->next++;
    }
    return 1;
}

static void *worker(void *arg) {
    struct result *r = arg;
    int mine = r->conns > 0 ? r->conns : 1;
    struct conn *cs = calloc((size_t)mine, sizeof *cs);
    struct pollfd *pf = calloc((size_t)mine, sizeof *pf);
    int n = r->conns;
    for (int i = 0; i < n; i++) {
        cs[i].fd = dial();
        cs[i].in = malloc(BUF);
        cs[i].out = malloc((size_t)depth * ((size_t)vbytes + 1200));
        cs[i].rng = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)(uintptr_t)&cs[i] << 1);
        pf[i].fd = cs[i].fd;
        pf[i].events = POLLIN;
        r->keys += (uint64_t)issue(&cs[i]);
        r->requests += (uint64_t)depth;
    }
    while (!stop) {
        if (poll(pf, (nfds_t)n, 100) < 0) continue;
        for (int i = 0; i < n; i++) {
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            struct conn *c = &cs[i];
            ssize_t got = read(c->fd, c->in + c->have, BUF - c->have);
            if (got <= 0) { fprintf(stderr, "connection closed\n"); r->failed = 1; return NULL; }
            c->have += (size_t)got;
            if (c->have == BUF) { fprintf(stderr, "reply too large\n"); r->failed = 1; return NULL; }
            int done = complete(c, &r->misses);
            if (done < 0) {
                fprintf(stderr, "unexpected reply: %.*s\n", (int)(c->have - c->pos < 80 ? c->have - c->pos : 80), c->in + c->pos);
                r->failed = 1;
                return NULL;
            }
            if (done && !stop) { r->keys += (uint64_t)issue(c); r->requests += (uint64_t)depth; }
        }
    }
    for (int i = 0; i < n; i++) close(cs[i].fd);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 9 || argc > 12) {
        fprintf(stderr, "usage: mcload HOST PORT CONNECTIONS THREADS SECONDS KEYS VALUE_BYTES MULTIGET [LOAD [MODE [DEPTH]]]\n");
        return 2;
    }
    if (argc >= 11) {
        if (strcmp(argv[10], "mix") == 0) mode = MIX;
        else if (strcmp(argv[10], "get") == 0) mode = GET;
        else if (strcmp(argv[10], "set") == 0) mode = SET;
        else { fprintf(stderr, "mcload: MODE is mix, get or set\n"); return 2; }
    }
    if (argc == 12) depth = atoi(argv[11]);
    host = argv[1]; port = atoi(argv[2]); nconns = atoi(argv[3]); nthreads = atoi(argv[4]);
    seconds = atoi(argv[5]); keys = atoi(argv[6]); vbytes = atoi(argv[7]); multiget = atoi(argv[8]);
    int do_load = argc >= 10 ? atoi(argv[9]) : 1;
    if (nconns < 1 || nthreads < 1 || keys < 1 || vbytes < 1 || vbytes > 4096 || multiget < 1 || multiget > 100
        || depth < 1 || depth > MAXDEPTH) {
        fprintf(stderr, "mcload: bad arguments\n");
        return 2;
    }
    value = malloc((size_t)vbytes);
    memset(value, 'v', (size_t)vbytes);
    /* Load every key (pipelined noreply sets), then a version to sync (and to see the server answer). */
    int fd = dial();
    char *batch = malloc(1 << 20);
    for (int i = 0; do_load && i < keys;) {
        size_t n = 0;
        for (; i < keys && n + 64 + (size_t)vbytes < (1 << 20); i++) {
            n += (size_t)sprintf(batch + n, "set key:%08d 0 0 %d noreply\r\n", i, vbytes);
            memcpy(batch + n, value, vbytes); n += vbytes;
            memcpy(batch + n, "\r\n", 2); n += 2;
        }
        send_all(fd, batch, n);
    }
    send_all(fd, "version\r\n", 9);
    char line[256];
    ssize_t got = read(fd, line, sizeof line);
    if (got < 8 || memcmp(line, "VERSION", 7) != 0) { fprintf(stderr, "load failed\n"); return 1; }
    close(fd);

    pthread_t th[64];
    struct result rs[64];
    if (nthreads > 64) nthreads = 64;
    memset(rs, 0, sizeof rs);
    double t0 = now_s();
    for (int t = 0; t < nthreads; t++) {
        rs[t].conns = nconns / nthreads + (t < nconns % nthreads);
        pthread_create(&th[t], NULL, worker, &rs[t]);
    }
    sleep((unsigned)seconds);
    stop = 1;
    uint64_t req = 0, ks = 0, miss = 0;
    int failed = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        req += rs[t].requests; ks += rs[t].keys; miss += rs[t].misses; failed |= rs[t].failed;
    }
    double el = now_s() - t0;
    printf("requests=%llu keys=%llu seconds=%.3f rps=%.0f kps=%.0f misses=%llu\n",
           (unsigned long long)req, (unsigned long long)ks, el, req / el, ks / el,
           (unsigned long long)miss);
    return failed;
}
