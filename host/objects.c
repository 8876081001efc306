/*
 * quantbridge host — the host-service objects a plugin holds: JSON trees
 * (host->json parse and constructors) and directory listings
 * (host->list_dir), each with the plugin call that made it, so that
 * plugin-check names a leak by its maker ("1 JSON tree from json->parse
 * during begin"). Blocks of host->alloc are counted by alloc.c already;
 * these objects come from other allocators (cJSON's) or hold many blocks.
 *
 * Off unless plugin-check turns it on (qbh_objects_track): a normal run
 * pays one atomic load per service call.
 */
#include "qbh.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

static atomic_int tracking;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static GHashTable *live;     /* object -> g_strdup'd "what (during call)" */
static char current[512];    /* the plugin call running now, under mu */

void qbh_objects_track(int on)
{
    pthread_mutex_lock(&mu);
    if (on && !live)
        live = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    pthread_mutex_unlock(&mu);
    atomic_store(&tracking, on);
}

void qbh_objects_set_call(const char *call)
{
    if (!atomic_load(&tracking))
        return;
    pthread_mutex_lock(&mu);
    snprintf(current, sizeof current, "%s", call ? call : "");
    pthread_mutex_unlock(&mu);
}

void qbh_objects_add(const void *obj, const char *what)
{
    if (!obj || !atomic_load(&tracking))
        return;
    pthread_mutex_lock(&mu);
    g_hash_table_replace(live, (gpointer)obj,
                         current[0] ? g_strdup_printf("%s during %s", what, current)
                                    : g_strdup(what));
    pthread_mutex_unlock(&mu);
}

void qbh_objects_remove(const void *obj)
{
    if (!obj || !atomic_load(&tracking))
        return;
    pthread_mutex_lock(&mu);
    g_hash_table_remove(live, obj);
    pthread_mutex_unlock(&mu);
}

size_t qbh_objects_live(void)
{
    size_t n;
    if (!atomic_load(&tracking))
        return 0;
    pthread_mutex_lock(&mu);
    n = g_hash_table_size(live);
    pthread_mutex_unlock(&mu);
    return n;
}

size_t qbh_objects_describe(char *buf, size_t cap)
{
    GHashTableIter it;
    gpointer k, v;
    size_t n = 0, used = 0;
    if (cap)
        buf[0] = '\0';
    if (!atomic_load(&tracking))
        return 0;
    pthread_mutex_lock(&mu);
    g_hash_table_iter_init(&it, live);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        if (used < cap)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", n ? "; " : "",
                                     (const char *)v);
        n++;
    }
    pthread_mutex_unlock(&mu);
    return n;
}
