/* out_ring.c: kiln's output relay and a vmsplice'd ring, outside kiln
 * (docs/performance-log.md, "Output: a vmsplice'd ring, measured"). Not built
 * by make: gcc -O3 -march=native -o /tmp/out_ring tests/bench/out_ring.c
 *
 *   out_ring MODE MB [splice]
 *
 * A producer (python3, MB chunks of 1 MiB) writes into a 256 KiB "box"
 * pipe; a server process takes 256 KiB messages, checks them (no byte
 * below 0x20, no '"', no '\\', and here no 'q'), and sends each framed
 * as kiln's notification into a 512 KiB "client" pipe; a client reads it
 * into a 2 MiB buffer and compares every payload byte with the program's.
 * Printed: MB/s from the first fork to the last exit, and each process's
 * CPU seconds per 100 MB (wait4).
 *
 * MODE chain: kiln's relay: splice the box's pipe into a holding pipe,
 *             tee it into a scratch pipe, read and check the copy, write
 *             the head, splice the holding pipe to the client's, write
 *             the tail. The client's read frees the box's pages.
 * MODE ring:  read the box's pipe into a 1 MiB ring (4 x 256 KiB), check,
 *             write the head, vmsplice(2) the slot, write the tail; a slot
 *             is read into again only once FIONREAD of the client's pipe
 *             says the client has read past it.
 * MODE gift:  read into fresh pages per message, vmsplice them with
 *             SPLICE_F_GIFT and unmap them (the server can never write
 *             them again).
 *
 * With "splice" the client is a relay like pv(1): it splice(2)s the
 * client's pipe on into a 1 MiB pipe, read 0.2 s later by a third process
 * that counts the bytes 'q'; every fourth MiB the program writes is 'q',
 * which the check refuses (the server drops that message; kiln would
 * escape it). Any 'q' the third process sees reached it unchecked. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG   (256 * 1024)
#define SLOTS 4

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
static double cpu(struct rusage *r)
{
	return r->ru_utime.tv_sec + r->ru_utime.tv_usec / 1e6 + r->ru_stime.tv_sec +
	       r->ru_stime.tv_usec / 1e6;
}
static void die(const char *w)
{
	perror(w);
	_exit(2);
}

/* The check: no byte below 0x20, no '"', no '\\' (kiln's verbatim test). */
static int check(const unsigned char *p, size_t n)
{
	unsigned char bad = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];
		bad |= (unsigned char)((c < 0x20) | (c == '"') | (c == '\\') | (c == 'q'));
	}
	return !bad;
}

static const char head[] = "Content-Length: 000000\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\","
                           "\"params\":{\"runId\":\"r1\",\"stream\":\"stdout\",\"text\":\"";
static const char tail[] = "\"}}";

static void wr(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			die("write");
		}
		p = (const char *)p + w;
		n -= (size_t)w;
	}
}

static void server_chain(int box, int out)
{
	int hold[2], scr[2];
	if (pipe(hold) || pipe(scr))
		die("pipe");
	fcntl(hold[0], F_SETPIPE_SZ, MSG);
	fcntl(scr[0], F_SETPIPE_SZ, MSG);
	unsigned char *buf = malloc(MSG);
	for (;;) {
		ssize_t n = splice(box, NULL, hold[1], NULL, MSG, SPLICE_F_MOVE);
		if (n < 0)
			die("splice in");
		if (n == 0)
			break;
		ssize_t t = tee(hold[0], scr[1], (size_t)n, 0);
		if (t != n)
			die("tee");
		size_t got = 0;
		while (got < (size_t)n) {
			ssize_t r = read(scr[0], buf + got, (size_t)n - got);
			if (r <= 0)
				die("read scr");
			got += (size_t)r;
		}
		if (!check(buf, (size_t)n)) {
			char sink[MSG];
			if (read(hold[0], sink, (size_t)n) != n)
				die("drain");
			continue; /* kiln escapes it through its queue instead */
		}
		wr(out, head, sizeof(head) - 1);
		size_t left = (size_t)n;
		while (left) {
			ssize_t s = splice(hold[0], NULL, out, NULL, left, SPLICE_F_MOVE);
			if (s <= 0)
				die("splice out");
			left -= (size_t)s;
		}
		wr(out, tail, sizeof(tail) - 1);
	}
}

static void server_ring(int box, int out)
{
	size_t ringsz = (size_t)SLOTS * MSG;
	unsigned char *ring = mmap(NULL, ringsz, PROT_READ | PROT_WRITE,
	                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (ring == MAP_FAILED)
		die("mmap");
	unsigned long long sent = 0;              /* bytes put into out */
	unsigned long long slot_end[SLOTS] = {0}; /* sent after the slot's last byte */
	unsigned waits = 0, rejected = 0;
	for (unsigned i = 0;; i = (i + 1) % SLOTS) {
		/* reuse only once the client has read past the slot */
		for (;;) {
			int unread = 0;
			if (ioctl(out, FIONREAD, &unread) < 0)
				die("FIONREAD");
			if (sent - (unsigned long long)unread >= slot_end[i])
				break;
			waits++;
			struct pollfd p = {.fd = out, .events = POLLOUT};
			poll(&p, 1, 1);
		}
		unsigned char *s = ring + (size_t)i * MSG;
		ssize_t n = read(box, s, MSG);
		if (n < 0)
			die("read box");
		if (n == 0)
			break;
		if (!check(s, (size_t)n)) {
			rejected++;
			continue; /* kiln escapes it through its queue instead */
		}
		wr(out, head, sizeof(head) - 1);
		sent += sizeof(head) - 1;
		struct iovec v = {s, (size_t)n};
		while (v.iov_len) {
			ssize_t m = vmsplice(out, &v, 1, 0);
			if (m < 0)
				die("vmsplice");
			v.iov_base = (char *)v.iov_base + m;
			v.iov_len -= (size_t)m;
			sent += (unsigned long long)m;
		}
		slot_end[i] = sent;
		wr(out, tail, sizeof(tail) - 1);
		sent += sizeof(tail) - 1;
	}
	if (getenv("H_V"))
		fprintf(stderr, "ring waits %u, messages not relayed %u\n", waits, rejected);
}

/* The client: read into a 2 MiB buffer, check the text is the producer's
 * (expected letter per MiB of payload), like a JSON client's copy + scan. */
static void client(int in, int expect_letters)
{
	size_t cap = 2u << 20;
	unsigned char *b = malloc(cap);
	static unsigned char ref[1 << 20];
	unsigned long long payload = 0;
	int inhead = 0; /* bytes of head still to skip */
	int intail = 0;
	size_t hl = sizeof(head) - 1, tl = sizeof(tail) - 1;
	unsigned long long msgleft = 0;
	inhead = (int)hl;
	unsigned long long bad = 0;
	for (;;) {
		ssize_t n = read(in, b, cap);
		if (n < 0)
			die("client read");
		if (n == 0)
			break;
		size_t i = 0;
		while (i < (size_t)n) {
			if (inhead) {
				size_t k =
				    (size_t)inhead < (size_t)n - i ? (size_t)inhead : (size_t)n - i;
				i += k;
				inhead -= (int)k;
				if (!inhead)
					msgleft = 0;
				continue;
			}
			if (intail) {
				size_t k =
				    (size_t)intail < (size_t)n - i ? (size_t)intail : (size_t)n - i;
				i += k;
				intail -= (int)k;
				if (!intail)
					inhead = (int)hl;
				continue;
			}
			/* payload until '"' */
			unsigned char *q = memchr(b + i, '"', (size_t)n - i);
			size_t e = q ? (size_t)(q - b) : (size_t)n;
			for (size_t j = i; j < e;) {
				unsigned char want =
				    expect_letters ? (unsigned char)('a' + (payload >> 20) % 26)
				                   : 'x';
				size_t run = (1u << 20) - (payload & ((1u << 20) - 1));
				if (run > e - j)
					run = e - j;
				memset(ref, want, run);
				bad += memcmp(b + j, ref, run) != 0;
				payload += run;
				j += run;
			}
			msgleft += e - i;
			i = e;
			if (q)
				intail = (int)tl;
		}
	}
	if (bad) {
		fprintf(stderr, "client: %llu runs in %llu bytes not the program's\n", bad,
		        payload);
		_exit(3);
	}
	if (getenv("H_V"))
		fprintf(stderr, "client: %llu bytes ok\n", payload);
}

/* Safe variant: every message in fresh pages, gifted and unmapped, so the
 * server can never write them again (the pages are freed where the last
 * reference goes: the client's read). */
static void server_gift(int box, int out)
{
	for (;;) {
		unsigned char *s = mmap(NULL, MSG, PROT_READ | PROT_WRITE,
		                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (s == MAP_FAILED)
			die("mmap");
		ssize_t n = read(box, s, MSG);
		if (n < 0)
			die("read box");
		if (n == 0)
			break;
		if (!check(s, (size_t)n)) {
			munmap(s, MSG);
			continue;
		}
		wr(out, head, sizeof(head) - 1);
		struct iovec v = {s, (size_t)n};
		while (v.iov_len) {
			ssize_t m = vmsplice(out, &v, 1, SPLICE_F_GIFT);
			if (m < 0)
				die("vmsplice");
			v.iov_base = (char *)v.iov_base + m;
			v.iov_len -= (size_t)m;
		}
		munmap(s, MSG);
		wr(out, tail, sizeof(tail) - 1);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int ring = !strcmp(argv[1], "ring");
	int mb = atoi(argv[2]);
	int spl = argc > 3 && !strcmp(argv[3], "splice");
	char code[512];
	if (spl)
		snprintf(code, sizeof code,
		         "import sys\nfor i in range(%d):\n    sys.stdout.buffer.write(bytes([113 "
		         "if i %% 4 == 3 else 97 + i %% 16]) * (1 << 20))\n",
		         mb);
	else
		snprintf(code, sizeof code,
		         "import sys\nb = b'x' * (1 << 20)\nfor _ in range(%d):\n    "
		         "sys.stdout.buffer.write(b)\n",
		         mb);
	int bx[2], o[2];
	if (pipe(bx) || pipe(o))
		die("pipe");
	fcntl(bx[0], F_SETPIPE_SZ, MSG);
	fcntl(o[0], F_SETPIPE_SZ, 2 * MSG);
	double t0 = now_s();
	pid_t py = fork();
	if (py == 0) {
		dup2(bx[1], 1);
		close(bx[0]), close(bx[1]), close(o[0]), close(o[1]);
		execl("/usr/bin/python3", "python3", "-c", code, (char *)NULL);
		_exit(127);
	}
	pid_t sv = fork();
	if (sv == 0) {
		close(bx[1]), close(o[0]);
		if (ring)
			server_ring(bx[0], o[1]);
		else if (!strcmp(argv[1], "gift"))
			server_gift(bx[0], o[1]);
		else
			server_chain(bx[0], o[1]);
		_exit(0);
	}
	close(bx[0]), close(bx[1]), close(o[1]);
	pid_t cl, third = -1;
	if (!spl) {
		cl = fork();
		if (cl == 0) {
			client(o[0], 0);
			_exit(0);
		}
	} else {
		int p2[2];
		if (pipe(p2))
			die("pipe");
		if (fcntl(p2[0], F_SETPIPE_SZ, 1 << 20) < 0)
			die("p2 size");
		cl = fork();
		if (cl == 0) { /* a splicing relay, like pv: out pipe -> p2 */
			close(p2[0]);
			for (;;) {
				ssize_t s = splice(o[0], NULL, p2[1], NULL, 1 << 20, 0);
				if (s <= 0)
					break;
			}
			_exit(0);
		}
		third = fork();
		if (third == 0) {
			close(p2[1]);
			close(o[0]);
			usleep(200000);
			static unsigned char b[1 << 20];
			unsigned long long q = 0, all = 0;
			for (;;) {
				ssize_t n = read(p2[0], b, sizeof b);
				if (n <= 0)
					break;
				all += (unsigned long long)n;
				for (ssize_t j = 0; j < n; j++)
					q += b[j] == 'q';
			}
			fprintf(stderr,
			        "third: %llu bytes, %llu of them 'q' (a byte the check refuses)\n",
			        all, q);
			_exit(q ? 3 : 0);
		}
		close(p2[0]), close(p2[1]);
	}
	close(o[0]);
	struct rusage rp, rs, rc, rt;
	int s1, s2, s3, s4 = 0;
	wait4(py, &s1, 0, &rp);
	wait4(sv, &s2, 0, &rs);
	wait4(cl, &s3, 0, &rc);
	if (third > 0)
		wait4(third, &s4, 0, &rt);
	double dt = now_s() - t0;
	double mbytes = mb * 1.048576;
	int ok = s1 == 0 && s2 == 0 && s3 == 0 && s4 == 0;
	printf("%s %s MB/s %.0f server %.4f client %.4f box %.4f (per 100 MB)%s\n", argv[1],
	       ok ? "ok" : "FAILED", mbytes / dt, cpu(&rs) * 100 / mbytes, cpu(&rc) * 100 / mbytes,
	       cpu(&rp) * 100 / mbytes, third > 0 && s4 ? " (third: bytes not the program's)" : "");
	return ok ? 0 : 1;
}
