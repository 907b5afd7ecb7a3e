/*
 * Redis backend (private): pub/sub on one dedicated connection.
 *
 * I/O model: a thread of its own owns the subscriber connection exclusively
 * (hiredis contexts are not thread-safe). Other threads never touch it: a
 * subscribe or unsubscribe updates the listener tables under the mutex and
 * wakes the thread through a self-pipe; the thread poll()s the pipe and the
 * socket together, sends the SUBSCRIBE/UNSUBSCRIBE commands the tables call
 * for, reads replies as they arrive and dispatches messages at once (no
 * polling interval, no busy loop).
 *
 * Per channel, listeners are reference counted: the first one makes the
 * thread send SUBSCRIBE, and subscribe() returns once the server's
 * "subscribe" acknowledgement for that channel arrived (or the command
 * timeout ran out: DLOCK_ETIMEDOUT); later listeners of a confirmed channel
 * return at once. The last one leaving makes the thread send UNSUBSCRIBE
 * (not waited for). Acknowledgements are matched in order against the
 * commands sent, so a quick unsubscribe/subscribe of the same channel is
 * confirmed only by its own SUBSCRIBE's acknowledgement.
 *
 * Dispatch: the thread copies the channel's listeners under the mutex, then
 * calls them without it. unsubscribe() removes the listener and, if it is
 * in the list being delivered, waits for that delivery to end; so when it
 * returns the callback is not running and never will again.
 *
 * Connection loss (I/O error, EOF, or a PING unanswered within the command
 * timeout; the thread PINGs after 5 s of silence): the thread reconnects at
 * once, then with back-off (reconnect_min_ms .. reconnect_max_ms) while
 * attempts fail, and re-subscribes every channel that has listeners. Once a
 * restored channel is confirmed again, its listeners receive one empty
 * message (len 0): a release published while the connection was down is
 * lost, so waiters must look again. A subscribe() while attempts are
 * failing and back-off runs fails fast with DLOCK_ECONN (DLOCK_EAUTH if the
 * credentials were refused); a pending subscribe() fails the same way when a
 * connect attempt fails.
 *
 * The thread and the connection are created on the first subscribe, so a
 * backend that never waits costs no extra thread or connection.
 */
#ifndef DLOCK_REDIS_SUBSCRIBER_H
#define DLOCK_REDIS_SUBSCRIBER_H

#include "dlock/sys/backend.h"
#include "internal.h"

typedef struct dlock__redis_subscriber dlock__redis_subscriber;

/* cfg is borrowed and must outlive the subscriber. 0 or DLOCK_ENOMEM. */
int dlock__redis_subscriber_new(dlock__redis_subscriber **out,
                                const dlock__redis_config *cfg);

/* Stops and joins the thread, closes the connection. Listeners still
 * registered (a caller bug) are dropped without being called. */
void dlock__redis_subscriber_free(dlock__redis_subscriber *s);

/* The backend's subscribe_until slot: waits for the confirmation until the
 * command timeout (plus the connect timeout while disconnected) or
 * deadline_ms (monotonic; INT64_MAX: no other bound), whichever comes
 * first; errbuf (may be NULL) gets the detail of a failure. DLOCK_EINVAL
 * for a NULL or empty channel or
 * a NULL fn; otherwise 0, DLOCK_ETIMEDOUT, DLOCK_ECONN, DLOCK_EAUTH,
 * DLOCK_EPROTO (the server refused the SUBSCRIBE), DLOCK_ENOMEM, or
 * DLOCK_EDEADLK when called from a message callback for a channel not yet
 * confirmed (only the calling thread could read the confirmation). */
int dlock__redis_subscriber_add(dlock__redis_subscriber *s,
                                dlock_subscription **out, const char *channel,
                                dlock_message_fn fn, void *arg,
                                int64_t deadline_ms, char *errbuf,
                                size_t errlen);

/* fn(arg) is called on the subscriber's thread, no lock held, each time
 * the connection is lost by an error (not by a retarget): with Sentinel,
 * a hint to look for the master again. Set before the first subscribe. */
void dlock__redis_subscriber_on_lost(dlock__redis_subscriber *s,
                                     void (*fn)(void *), void *arg);

/* Sharded pub/sub (Redis Cluster): SSUBSCRIBE / SUNSUBSCRIBE, "smessage".
 * When the server drops a channel because its slot migrated away (an
 * unrequested "sunsubscribe"), or refuses it with MOVED, the channel is
 * not asked for on this connection again: its listeners get the empty
 * "look again" message, pending subscribes fail with DLOCK_ECONN, and
 * on_moved(arg, channel, len) is called on the subscriber's thread (no
 * lock held; it must not block) so that the cluster moves the listeners
 * to the slot's new node. A later subscribe of that channel here asks for
 * it again. Set before the first subscribe. */
void dlock__redis_subscriber_set_sharded(dlock__redis_subscriber *s,
                                         void (*on_moved)(void *, const char *,
                                                          size_t),
                                         void *arg);

/* Moves the subscriber to another address (cfg borrowed; it must outlive
 * the subscriber): the thread drops its connection, connects to cfg's
 * address at once (no back-off inherited), restores every channel there,
 * and each restored channel's listeners get the empty "look again"
 * message, exactly as after a lost connection. Never blocks on I/O. */
void dlock__redis_subscriber_retarget(dlock__redis_subscriber *s,
                                      const dlock__redis_config *cfg);

/* The backend's unsubscribe slot. NULL is a no-op. */
void dlock__redis_subscriber_remove(dlock__redis_subscriber *s,
                                    dlock_subscription *sub);

#endif /* DLOCK_REDIS_SUBSCRIBER_H */
