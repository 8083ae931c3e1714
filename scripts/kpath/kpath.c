/* The kernel's cost per packet of the ways to send and receive raw ESP
 * (issue 34), measured on whatever CPU runs it: scripts/kpath-bench.sh
 * builds this and runs it in two network namespaces joined by a veth.
 *
 *   kpath send MODE N SRC DST [IFNAME DSTMAC]
 *     MODE hdrincl: IPPROTO_RAW (IP_HDRINCL), flowsec's sender today;
 *          proto50: an IPPROTO_ESP raw socket, the kernel writes the
 *                   IP header (source and TOS by control message);
 *          packet:  AF_PACKET SOCK_DGRAM to the peer's link address.
 *     N 1400-byte ESP packets in batches of 64 (sendmmsg); prints ns/packet.
 *   kpath recv MODE SECONDS [SOCKETS]
 *     MODE raw:    SOCKETS raw ESP sockets (default 1), read from the
 *                  first, the others filtered to nothing (one per worker);
 *          fanout: SOCKETS packet sockets in a PACKET_FANOUT group
 *                  (by CPU), read from all.
 *     prints the packets received.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define LEN 1400

static unsigned short csum(void *p, int n) {
    unsigned long s = 0;
    unsigned short *w = p;
    for (; n > 1; n -= 2) s += *w++;
    while (s >> 16) s = (s & 0xffff) + (s >> 16);
    return ~s;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int do_send(int argc, char **argv) {
    if (argc < 6) return 2;
    const char *mode = argv[2], *src = argv[4], *dst = argv[5];
    long n = atol(argv[3]);
    static char bufs[BATCH][LEN];
    static char cbuf[BATCH][CMSG_SPACE(sizeof(struct in_pktinfo)) + CMSG_SPACE(sizeof(int))];
    struct mmsghdr m[BATCH];
    struct iovec iov[BATCH];
    struct sockaddr_in sin = {.sin_family = AF_INET};
    struct sockaddr_ll sll = {0};
    int fd;
    inet_pton(AF_INET, dst, &sin.sin_addr);
    memset(m, 0, sizeof m);
    for (int i = 0; i < BATCH; i++) {
        struct iphdr *h = (void *)bufs[i];
        memset(bufs[i], 0xab, LEN);
        h->ihl = 5; h->version = 4; h->tot_len = htons(LEN); h->id = htons(i);
        h->frag_off = htons(0x4000); h->ttl = 64; h->protocol = 50;
        inet_pton(AF_INET, src, &h->saddr);
        h->daddr = sin.sin_addr.s_addr;
        h->check = 0;
        h->check = csum(h, 20);
        *(unsigned *)(bufs[i] + 20) = htonl(0x1000 + i);
    }
    if (!strcmp(mode, "hdrincl")) {
        fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
    } else if (!strcmp(mode, "proto50")) {
        fd = socket(AF_INET, SOCK_RAW, IPPROTO_ESP);
        int v = IP_PMTUDISC_DO;
        setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof v);
    } else if (!strcmp(mode, "packet") && argc >= 8) {
        unsigned mac[6];
        fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
        sll.sll_family = AF_PACKET;
        sll.sll_protocol = htons(ETH_P_IP);
        sll.sll_ifindex = if_nametoindex(argv[6]);
        sll.sll_halen = 6;
        sscanf(argv[7], "%x:%x:%x:%x:%x:%x", &mac[0], &mac[1], &mac[2], &mac[3], &mac[4], &mac[5]);
        for (int i = 0; i < 6; i++) sll.sll_addr[i] = mac[i];
    } else {
        return 2;
    }
    if (fd < 0) { perror("socket"); return 1; }
    for (int i = 0; i < BATCH; i++) {
        struct msghdr *h = &m[i].msg_hdr;
        if (!strcmp(mode, "proto50")) {
            struct in_pktinfo pi = {0};
            int tos = 0;
            iov[i].iov_base = bufs[i] + 20; iov[i].iov_len = LEN - 20;
            h->msg_name = &sin; h->msg_namelen = sizeof sin;
            h->msg_control = cbuf[i]; h->msg_controllen = sizeof cbuf[i];
            struct cmsghdr *c = CMSG_FIRSTHDR(h);
            c->cmsg_level = IPPROTO_IP; c->cmsg_type = IP_PKTINFO;
            c->cmsg_len = CMSG_LEN(sizeof pi);
            inet_pton(AF_INET, src, &pi.ipi_spec_dst);
            memcpy(CMSG_DATA(c), &pi, sizeof pi);
            c = CMSG_NXTHDR(h, c);
            c->cmsg_level = IPPROTO_IP; c->cmsg_type = IP_TOS; c->cmsg_len = CMSG_LEN(sizeof tos);
            memcpy(CMSG_DATA(c), &tos, sizeof tos);
        } else {
            iov[i].iov_base = bufs[i]; iov[i].iov_len = LEN;
            if (sll.sll_family) { h->msg_name = &sll; h->msg_namelen = sizeof sll; }
            else { h->msg_name = &sin; h->msg_namelen = sizeof sin; }
        }
        h->msg_iov = &iov[i]; h->msg_iovlen = 1;
    }
    double t0 = now();
    long sent = 0, fails = 0;
    while (sent < n) {
        int r = sendmmsg(fd, m, BATCH, 0);
        if (r < 0) { if (++fails > 1000) { perror("sendmmsg"); return 1; } continue; }
        sent += r;
    }
    double s = now() - t0;
    printf("%.0f\n", s * 1e9 / sent);
    return 0;
}

static int do_recv(int argc, char **argv) {
    if (argc < 4) return 2;
    const char *mode = argv[2];
    int secs = atoi(argv[3]), count = argc > 4 ? atoi(argv[4]) : 1, fds[64], nfds = 0;
    if (count < 1 || count > 64) return 2;
    if (!strcmp(mode, "raw")) {
        struct sock_filter none[] = {{0x06, 0, 0, 0}};
        struct sock_fprog p = {1, none};
        fds[nfds++] = socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK, IPPROTO_ESP);
        for (int k = 1; k < count; k++) {
            int o = socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK, IPPROTO_ESP);
            setsockopt(o, SOL_SOCKET, SO_ATTACH_FILTER, &p, sizeof p);
        }
    } else if (!strcmp(mode, "fanout")) {
        /* ESP only: ldb [9]; jeq #50; ret -1; ret 0 */
        struct sock_filter f[] = {{0x30, 0, 0, 9}, {0x15, 0, 1, 50}, {0x06, 0, 0, 0xffffffff}, {0x06, 0, 0, 0}};
        struct sock_fprog p = {4, f};
        int id = getpid() & 0xffff;
        for (int k = 0; k < count; k++) {
            int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK, htons(ETH_P_IP));
            int arg = id | (PACKET_FANOUT_CPU << 16);
            setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &p, sizeof p);
            if (setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof arg)) { perror("fanout"); return 1; }
            fds[nfds++] = fd;
        }
    } else {
        return 2;
    }
    int rb = 8 << 20;
    static char bufs[BATCH][2048];
    struct mmsghdr m[BATCH];
    struct iovec iov[BATCH];
    struct pollfd pf[64];
    memset(m, 0, sizeof m);
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = bufs[i]; iov[i].iov_len = sizeof bufs[i];
        m[i].msg_hdr.msg_iov = &iov[i]; m[i].msg_hdr.msg_iovlen = 1;
    }
    for (int k = 0; k < nfds; k++) {
        setsockopt(fds[k], SOL_SOCKET, SO_RCVBUFFORCE, &rb, sizeof rb);
        pf[k].fd = fds[k]; pf[k].events = POLLIN;
    }
    double t0 = now();
    long got = 0;
    while (now() - t0 < secs) {
        if (poll(pf, nfds, 100) <= 0) continue;
        for (int k = 0; k < nfds; k++) {
            int r;
            while ((r = recvmmsg(fds[k], m, BATCH, 0, NULL)) > 0) got += r;
        }
    }
    printf("%ld\n", got);
    return 0;
}

/* One ESP packet each way, N times: kpath ping|pong MODE N SRC DST IFNAME
 * DSTMAC (MODE hdrincl or packet; received by a raw ESP socket). ping
 * prints the mean round trip in ns; pong answers N packets. */
static int do_pingpong(int argc, char **argv, int ping) {
    if (argc < 8) return 2;
    const char *mode = argv[2], *src = argv[4], *dst = argv[5];
    long n = atol(argv[3]);
    char pkt[LEN], in[2048];
    struct sockaddr_in sin = {.sin_family = AF_INET};
    struct sockaddr_ll sll = {0};
    unsigned mac[6];
    struct iphdr *h = (void *)pkt;
    int tx, rx = socket(AF_INET, SOCK_RAW, IPPROTO_ESP);
    inet_pton(AF_INET, dst, &sin.sin_addr);
    memset(pkt, 0xab, sizeof pkt);
    h->ihl = 5; h->version = 4; h->tot_len = htons(100); h->frag_off = htons(0x4000);
    h->ttl = 64; h->protocol = 50; inet_pton(AF_INET, src, &h->saddr); h->daddr = sin.sin_addr.s_addr;
    h->check = 0; h->check = csum(h, 20);
    if (!strncmp(mode, "packet", 6)) {
        tx = socket(AF_PACKET, SOCK_DGRAM, 0);
        if (!strcmp(mode, "packetbypass")) { int one = 1; setsockopt(tx, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one); }
        sll.sll_family = AF_PACKET; sll.sll_protocol = htons(ETH_P_IP);
        sll.sll_ifindex = if_nametoindex(argv[6]); sll.sll_halen = 6;
        sscanf(argv[7], "%x:%x:%x:%x:%x:%x", &mac[0], &mac[1], &mac[2], &mac[3], &mac[4], &mac[5]);
        for (int i = 0; i < 6; i++) sll.sll_addr[i] = mac[i];
    } else {
        tx = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
    }
    if (tx < 0 || rx < 0) { perror("socket"); return 1; }
    struct sockaddr *to = sll.sll_family ? (struct sockaddr *)&sll : (struct sockaddr *)&sin;
    socklen_t tolen = sll.sll_family ? sizeof sll : sizeof sin;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        if (ping && sendto(tx, pkt, 100, 0, to, tolen) < 0) { perror("sendto"); return 1; }
        if (recv(rx, in, sizeof in, 0) < 0) { perror("recv"); return 1; }
        if (!ping && sendto(tx, pkt, 100, 0, to, tolen) < 0) { perror("sendto"); return 1; }
    }
    if (ping) printf("%.0f\n", (now() - t0) * 1e9 / n);
    return 0;
}

int main(int argc, char **argv) {
    int rc = 2;
    if (argc > 1 && !strcmp(argv[1], "send")) rc = do_send(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "recv")) rc = do_recv(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "ping")) rc = do_pingpong(argc, argv, 1);
    if (argc > 1 && !strcmp(argv[1], "pong")) rc = do_pingpong(argc, argv, 0);
    if (rc == 2) fprintf(stderr, "usage: see the comment at the top of kpath.c\n");
    return rc;
}
