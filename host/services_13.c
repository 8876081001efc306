/*
 * quantbridge host — the ABI 1.3 services of qb_host (issue 30): streaming
 * SHA-256, a data file mapped under the host's SIGBUS policy, and the
 * Hugging Face config.json clean-up, each once here instead of once per
 * plugin. The JSON additions live in json.c, the sink's write_file in
 * sink.c. Every fallible one meets plugin-check's fault injection
 * (qbh_testhook_fault) and its objects are tracked (host/objects.c).
 */
#include "qbh.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qbk_alloc.h"
#include "qbk_hf_sidefiles.h"
#include "qbk_json_edit.h"

/* qb_sha256 is the kit's context; the SDK keeps it opaque. */
struct qb_sha256 {
    qbk_sha256 c;
};

static qb_sha256 *svc_sha256_new(const qb_host *h)
{
    qb_sha256 *c;
    (void)h;
    if (qbh_testhook_fault(QBH_FAULT_SERVICE, "sha256_new"))
        return NULL;
    c = qbh_alloc(sizeof *c);
    if (c)
        qbk_sha256_init(&c->c);
    return c;
}

static void svc_sha256_update(qb_sha256 *c, const void *data, size_t len)
{
    if (c && len)
        qbk_sha256_update(&c->c, data, len);
}

static void svc_sha256_final(qb_sha256 *c, uint8_t digest[32])
{
    uint8_t d[32];
    if (!c)
        return;
    qbk_sha256_final(&c->c, d);
    if (digest)
        memcpy(digest, d, sizeof d);
    qbh_free(c);
}

/* The mapping's own record, behind qb_mapped_file.host_private. */
typedef struct mapped {
    void *base;
    size_t len;
} mapped;

static qb_status svc_map_file(const qb_host *h, const char *path, qb_mapped_file *out)
{
    uint32_t size = out->struct_size;
    struct stat st;
    mapped *m = NULL;
    int fd = -1;
    qb_status rc = QB_OK;
    (void)h;
    memset(out, 0, sizeof *out > size ? size : sizeof *out);
    out->struct_size = size;
    if (!path)
        return qbh_error_set(QB_E_INVALID, "map_file: path is NULL");
    if (qbh_testhook_fault(QBH_FAULT_SERVICE, "map_file"))
        return qbh_error_set(QB_E_IO, "%s: input/output error (injected by plugin-check)", path);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return qbh_error_set(errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", path,
                             strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = qbh_error_set(QB_E_IO, "%s: %s", path,
                           S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
        goto out;
    }
    m = qbh_calloc(1, sizeof *m);
    if (!m) {
        rc = qbh_error_set(QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    m->len = (size_t)st.st_size;
    if (m->len) {
        /* Private and read-only: the plugin sees the file as it is; a
         * file cut short later faults on access (SIGBUS), which the host's
         * handler turns into its one line (fatal.c). */
        m->base = mmap(NULL, m->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m->base == MAP_FAILED) {
            rc = qbh_error_set(errno == ENOMEM ? QB_E_NOMEM : QB_E_IO, "%s: mmap failed: %s",
                               path, strerror(errno));
            goto out;
        }
    }
    out->data = m->base;
    out->size = (uint64_t)m->len;
    out->host_private = m;
    qbh_objects_add(m, "mapped file from map_file");
    m = NULL;
out:
    qbh_free(m);
    close(fd);
    return rc;
}

static void svc_unmap_file(const qb_host *h, qb_mapped_file *f)
{
    mapped *m;
    (void)h;
    if (!f || !f->host_private)
        return;
    m = f->host_private;
    if (m->len)
        munmap(m->base, m->len);
    qbh_objects_remove(m);
    qbh_free(m);
    f->data = NULL;
    f->size = 0;
    f->host_private = NULL;
}

static qb_status svc_hf_config_clean(const qb_host *h, const char *what, const char *config_json,
                                     const char *const *set_keys, const char *const *set_values,
                                     char **out, size_t *len)
{
    char *edited = NULL, *copy;
    size_t n;
    qb_status rc;
    *out = NULL;
    if (len)
        *len = 0;
    if (!config_json)
        return qbh_error_set(QB_E_FORMAT, "%s: no config.json text", what ? what : "config.json");
    if (qbh_testhook_fault(QBH_FAULT_SERVICE, "hf_config_clean"))
        return qbh_error_set(QB_E_NOMEM, "%s: out of memory (injected by plugin-check)",
                             what ? what : "config.json");
    /* The kit's one rule (qbk_hf_sidefiles.h), the text edited in place. */
    rc = qbk_json_edit(h, what ? what : "config.json", config_json, qbk_hf_quant_config_keys,
                       set_keys, set_values, &edited);
    if (rc)
        return rc;
    n = strlen(edited);
    copy = qbh_alloc(n + 2);
    if (!copy) {
        qbk_free(edited);
        return qbh_error_set(QB_E_NOMEM, "%s: out of memory", what ? what : "config.json");
    }
    memcpy(copy, edited, n);
    if (!n || copy[n - 1] != '\n')
        copy[n++] = '\n';
    copy[n] = '\0';
    qbk_free(edited);
    *out = copy;
    if (len)
        *len = n;
    return QB_OK;
}

void qbh_services_13_fill(qb_host *h)
{
    h->sha256_new = svc_sha256_new;
    h->sha256_update = svc_sha256_update;
    h->sha256_final = svc_sha256_final;
    h->map_file = svc_map_file;
    h->unmap_file = svc_unmap_file;
    h->hf_config_clean = svc_hf_config_clean;
}
