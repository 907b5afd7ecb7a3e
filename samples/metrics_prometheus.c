/*
 * metrics_prometheus — a client's metrics served to Prometheus.
 *
 *   metrics_prometheus                              print one scrape, on the mock
 *   metrics_prometheus redis://127.0.0.1:6379       ... on a Redis server
 *   metrics_prometheus mock: 9464                   serve GET /metrics on
 *                                                   127.0.0.1:9464 until killed
 *
 * Two threads take turns on two locks (so there is contention), then the
 * client's metrics are rendered by the library in Prometheus's text format
 * (dlock_client_metrics_prometheus_write, api/dlock/metrics.h): the
 * client is named "metrics-sample" (the client_name option: the label
 * every series carries, the same after a restart) and counts per lock
 * name for up to 16 names. serve() is the whole HTTP endpoint: the
 * rendering never blocks, so it runs in the request's handler, writing
 * straight to the socket. Warnings from the library (the log hook,
 * api/dlock/log.h) go to stderr.
 */
#include <dlock.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void check(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "%s: %s (%s)\n", what, dlock_errname(rc), dlock_strerror(rc));
        exit(1);
    }
}

static void to_stderr(void *arg, int level, const char *msg)
{
    (void)arg;
    fprintf(stderr, "[%s] %s\n", dlock_log_level_name(level), msg);
}

static void *worker(void *arg)
{
    struct timespec hold = {0, 2000000}; /* 2 ms of "work" under the lock */
    dlock_rlock **locks = arg;
    int i;

    for (i = 0; i < 25; i++) {
        dlock_rlock *l = locks[i % 2];
        /* a first look without waiting (refused while the other thread
         * holds it: counted as busy), then a blocking lock */
        if (dlock_try_lock(l, 0, 5000) != 0 && dlock_lock(l, 5000) != 0)
            continue;
        nanosleep(&hold, NULL);
        dlock_unlock(l);
    }
    return NULL;
}

/* Writes a piece of the text to the file descriptor *arg. */
static int to_fd(void *arg, const char *data, size_t len)
{
    return write(*(int *)arg, data, len) == (ssize_t)len ? 0 : -1;
}

/* The HTTP endpoint: every request on 127.0.0.1:port gets the metrics. */
static void serve(dlock_client *c, int port)
{
    static const char head[] = "HTTP/1.0 200 OK\r\nContent-Type: text/plain; "
                               "version=0.0.4; charset=utf-8\r\n\r\n";
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int one = 1, s = socket(AF_INET, SOCK_STREAM, 0), fd;
    char req[4096];

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    signal(SIGPIPE, SIG_IGN); /* a scraper that hangs up is no reason to die */
    if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s, 16) != 0) {
        perror("listen");
        exit(1);
    }
    fprintf(stderr, "serving http://127.0.0.1:%d/metrics\n", port);
    while ((fd = accept(s, NULL, NULL)) >= 0) {
        if (read(fd, req, sizeof(req)) > 0 && to_fd(&fd, head, sizeof(head) - 1) == 0)
            dlock_client_metrics_prometheus_write(c, to_fd, &fd);
        close(fd);
    }
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "mock:";
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *client = NULL;
    dlock_rlock *locks[2] = {NULL, NULL};
    pthread_t a, b;
    char err[256] = "";
    int rc, out = 1;

    opts.client_name = "metrics-sample";
    opts.metrics_names_max = 16;
    check(dlock_set_log(to_stderr, NULL, DLOCK_LOG_WARN), "set_log");
    rc = dlock_client_connect(&client, url, &opts, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "connect %s: %s: %s\n", url, dlock_errname(rc), err);
        return 1;
    }
    check(dlock_reentrant_new(&locks[0], client, "metrics:orders"), "reentrant_new");
    check(dlock_reentrant_new(&locks[1], client, "metrics:invoices"), "reentrant_new");
    pthread_create(&a, NULL, worker, locks);
    pthread_create(&b, NULL, worker, locks);
    pthread_join(a, NULL);
    pthread_join(b, NULL);

    if (argc > 2)
        serve(client, atoi(argv[2]));
    else
        check(dlock_client_metrics_prometheus_write(client, to_fd, &out), "metrics");

    dlock_rlock_free(locks[0]);
    dlock_rlock_free(locks[1]);
    dlock_client_free(client);
    dlock_set_log(NULL, NULL, 0);
    return 0;
}
