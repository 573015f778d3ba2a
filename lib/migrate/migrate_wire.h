/* SPDX-License-Identifier: MIT */
/*
 * The control connection of `memlens migrate` between the source and the
 * receiver (`memlens migrate --receive`): text lines, and image files sent
 * as "FILE NAME SIZE\n" followed by SIZE bytes. The pages themselves go
 * from CRIU to a `criu page-server` the receiver starts for each round.
 *
 *   source                          receiver
 *   MEMLENS-MIGRATE 1            -> OK CRIU-VERSION
 *   ROUND K                      -> PORT P          (page server for K listening)
 *   (criu pre-dump/dump --page-server to P)
 *   DONE K                       -> STORED K BYTES  (page server finished)
 *   FILE NAME SIZE + bytes ...   -> (none)          (the final dump's other images)
 *   RESTORE K SHELLJOB           -> RESTORED PID MS
 *   any request                  -> ERR MESSAGE     (on failure)
 *
 * Post-copy (`--postcopy`): every round's images are written at the source
 * and sent as FILE records; the final dump's pages partly stay there.
 *   CANLAZY                      -> OK              (userfaultfd works here)
 *   IMAGES K                     -> READY K         (DIR/K, its parent linked)
 *   FILE NAME SIZE + bytes ...   -> (none)
 *   DONE K                       -> STORED K BYTES
 *   LAZY K SHELLJOB ADDR PORT    -> RESTORED PID MS (criu lazy-pages fetching
 *                                                    from ADDR:PORT, restored)
 *                                -> LAZYDONE COPIED TOTAL COPYBYTES FAULTS
 *                                   SERVED WAITSUM_US WAITMAX_US AFTER_MS
 *                                   (every page arrived), or LAZYFAILED WHY
 *   ABORT WHY                    -> (none: the source refused the migration
 *                                   before its first round; the receiver
 *                                   says WHY and exits)
 */
#ifndef MEMLENS_MIGRATE_WIRE_H
#define MEMLENS_MIGRATE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MIGRATE_HELLO "MEMLENS-MIGRATE 1"

struct wire {
	FILE *in, *out;
};

/* Both directions on a connected socket (the fd is owned by @w). */
int mli_wire_open(struct wire *w, int fd);
void mli_wire_close(struct wire *w);
/* One line, printf-style, flushed. 0 or -EIO. */
int mli_wire_send(struct wire *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line without its newline into @buf. 0, -EPIPE at end of stream, -E2BIG. */
int mli_wire_recv(struct wire *w, char *buf, size_t len);
/* Send @dir/@name as a FILE record. */
int mli_wire_send_file(struct wire *w, const char *dir, const char *name);
/* Receive @size bytes of a FILE record into @dir/@name (created 0600). */
int mli_wire_recv_file(struct wire *w, const char *dir, const char *name, uint64_t size);
/* A file name the receiver accepts: no '/', not "." or "..", no leading '.'. */
bool mli_wire_name_ok(const char *name);

/* "HOST:PORT" into @host (brackets of "[v6]:port" removed) and @port. */
int mli_wire_parse_hostport(const char *s, char *host, size_t len, int *port);
/* Listening TCP socket on @host:@port (0: any free port); *bound gets the port. */
int mli_wire_listen(const char *host, int port, int *bound);
/* Connected TCP socket to @host:@port, or -errno. */
int mli_wire_connect(const char *host, int port);
/* The same, the connect and later reads and writes bounded by @timeout_ms. */
int mli_wire_connect_timeout(const char *host, int port, int timeout_ms);
/* A free TCP port on @host (bound and released), or -errno. */
int mli_wire_free_port(const char *host);

#endif
