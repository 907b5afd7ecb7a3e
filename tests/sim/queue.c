/* Simulator: the due-time queue (tests/sim/queue.h). */
#include <stdlib.h>

#include "tests/sim/grow.h"
#include "tests/sim/queue.h"

static int before(const sim_item *a, const sim_item *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void sift_down(sim_queue *q, size_t i)
{
    sim_item it = q->q[i];
    size_t c;

    while ((c = 2 * i + 1) < q->n) {
        if (c + 1 < q->n && before(&q->q[c + 1], &q->q[c]))
            c++;
        if (!before(&q->q[c], &it))
            break;
        q->q[i] = q->q[c];
        i = c;
    }
    q->q[i] = it;
}

void sim_queue_push(sim_queue *q, sim_item it)
{
    size_t i;

    q->q = sim_grow(q->q, &q->cap, q->n, sizeof(*q->q));
    it.seq = q->seq++;
    i = q->n++;
    while (i > 0 && before(&it, &q->q[(i - 1) / 2])) {
        q->q[i] = q->q[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->q[i] = it;
}

sim_item sim_queue_pop(sim_queue *q)
{
    sim_item top = q->q[0];

    q->q[0] = q->q[--q->n];
    if (q->n > 0)
        sift_down(q, 0);
    return top;
}

void sim_queue_filter(sim_queue *q, int (*keep)(const sim_item *, void *), void *arg,
                      void (*drop)(sim_item *))
{
    size_t i, kept = 0;

    for (i = 0; i < q->n; i++) {
        if (keep(&q->q[i], arg))
            q->q[kept++] = q->q[i];
        else if (drop)
            drop(&q->q[i]);
    }
    if (kept == q->n)
        return;
    q->n = kept;
    for (i = kept / 2; i-- > 0;)
        sift_down(q, i); /* the items keep their seq: ties stay in order */
}

void sim_queue_fini(sim_queue *q, void (*drop)(sim_item *))
{
    size_t i;

    if (drop)
        for (i = 0; i < q->n; i++)
            drop(&q->q[i]);
    free(q->q);
    q->q = NULL;
    q->n = q->cap = 0;
}
