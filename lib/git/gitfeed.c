#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "gitfeed.h"

struct ab_git_feed {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ab_git_fed *head, *tail;
	size_t bytes, cap, n;
	struct ab_git_big *bhead, *btail;
	int bigrefs;		/* references held: at most one */
	int closed;
};

/* The taker is woken when this many offers wait, not for each: a wake a
 * blob was a futex call each side. */
#define BATCH 64

struct ab_git_feed *ab_git_feed_new(size_t cap)
{
	struct ab_git_feed *f = calloc(1, sizeof *f);

	if (f == NULL)
		return NULL;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	f->cap = cap;
	return f;
}

void ab_git_feed_offer(struct ab_git_feed *f,
    const unsigned char id[AB_OID_RAW], const void *p, size_t n)
{
	struct ab_git_fed *d;
	int fits;

	pthread_mutex_lock(&f->mu);
	fits = !f->closed && n <= f->cap - f->bytes;
	if (fits)
		f->bytes += n;	/* held before the copy, so the cap holds */
	pthread_mutex_unlock(&f->mu);
	if (!fits)
		return;
	if ((d = malloc(sizeof *d + n)) != NULL) {
		d->next = NULL;
		memcpy(d->id, id, AB_OID_RAW);
		d->n = n;
		memcpy(d->data, p, n);
	}
	pthread_mutex_lock(&f->mu);
	if (d == NULL)
		f->bytes -= n;
	else {
		if (f->tail != NULL)
			f->tail->next = d;
		else
			f->head = d;
		f->tail = d;
		if (++f->n == BATCH)
			pthread_cond_signal(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
}

void ab_git_feed_close(struct ab_git_feed *f)
{
	pthread_mutex_lock(&f->mu);
	f->closed = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

struct ab_git_fed *ab_git_feed_take(struct ab_git_feed *f, int wait_ms)
{
	struct ab_git_fed *d;
	struct timespec until;

	ab_abstime_in(&until, wait_ms);
	pthread_mutex_lock(&f->mu);
	while (f->head == NULL && !f->closed &&
	    pthread_cond_timedwait(&f->cv, &f->mu, &until) == 0)
		;
	if ((d = f->head) != NULL) {
		if ((f->head = d->next) == NULL)
			f->tail = NULL;
		f->bytes -= d->n;
		f->n--;
	}
	pthread_mutex_unlock(&f->mu);
	return d;
}

void ab_git_feed_big(struct ab_git_feed *f,
    const unsigned char id[AB_OID_RAW], const void *p, size_t n, void *ref,
    void (*release)(void *ref))
{
	struct ab_git_big *b = calloc(1, sizeof *b);

	pthread_mutex_lock(&f->mu);
	if (b == NULL || f->closed) {
		pthread_mutex_unlock(&f->mu);
		free(b);
		if (ref != NULL)
			release(ref);
		return;
	}
	memcpy(b->id, id, AB_OID_RAW);
	if (p != NULL && f->bigrefs == 0) {
		f->bigrefs++;
		b->data = p;
		b->n = n;
		b->ref = ref;
		b->release = release;
	} else if (ref != NULL)
		release(ref);
	if (f->btail != NULL)
		f->btail->next = b;
	else
		f->bhead = b;
	f->btail = b;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

struct ab_git_big *ab_git_feed_take_big(struct ab_git_feed *f, int wait_ms)
{
	struct ab_git_big *b;
	struct timespec until;

	ab_abstime_in(&until, wait_ms);
	pthread_mutex_lock(&f->mu);
	while (f->bhead == NULL && !f->closed &&
	    pthread_cond_timedwait(&f->cv, &f->mu, &until) == 0)
		;
	if ((b = f->bhead) != NULL && (f->bhead = b->next) == NULL)
		f->btail = NULL;
	pthread_mutex_unlock(&f->mu);
	return b;
}

void ab_git_feed_big_done(struct ab_git_feed *f, struct ab_git_big *b)
{
	if (b->ref != NULL) {
		b->release(b->ref);
		pthread_mutex_lock(&f->mu);
		f->bigrefs--;
		pthread_mutex_unlock(&f->mu);
	}
	free(b);
}

int ab_git_feed_closed(struct ab_git_feed *f)
{
	int c;

	pthread_mutex_lock(&f->mu);
	c = f->closed;
	pthread_mutex_unlock(&f->mu);
	return c;
}

void ab_git_feed_free(struct ab_git_feed *f)
{
	struct ab_git_fed *d, *next;
	struct ab_git_big *b, *bnext;

	if (f == NULL)
		return;
	for (d = f->head; d != NULL; d = next) {
		next = d->next;
		free(d);
	}
	for (b = f->bhead; b != NULL; b = bnext) {
		bnext = b->next;
		ab_git_feed_big_done(f, b);
	}
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	free(f);
}
