/*
 * quantbridge host — what a writer declares about itself (qb_writer_caps,
 * ABI 1.1): reading the declaration, validating it when the plugin loads,
 * and checking a model against it before the writer is asked anything
 * (docs/plugin-design.md, "Writer capabilities and side files").
 */
#include "qbh.h"

#include <assert.h>
#include <string.h>

/* Indexed by bit number; the names are the QB_FACT_* suffixes. */
static const char *const fact_names[] = {
    "layers", "hidden", "vocab", "heads", "kv_heads", "head_dim", "intermediate",
    "tied_embeddings", "experts",
};

const char *qbh_fact_name(uint32_t bit)
{
    size_t i;
    for (i = 0; i < sizeof fact_names / sizeof fact_names[0]; i++)
        if (bit == (1u << i))
            return fact_names[i];
    return NULL;
}

void qbh_fact_names(uint32_t facts, char *buf, size_t size)
{
    size_t len = 0, i;
    assert(size > 0);
    buf[0] = '\0';
    for (i = 0; i < 32 && len < size; i++) {
        const char *n;
        if (!(facts & (1u << i)))
            continue;
        n = qbh_fact_name(1u << i);
        if (n)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", n);
        else
            len += (size_t)snprintf(buf + len, size - len, "%sbit %zu", len ? ", " : "", i);
    }
}

const qb_writer_caps *qbh_writer_caps(const qb_plugin *d)
{
    if (!d || !d->writer || !QB_HAS_FIELD(d, qb_plugin, writer_caps))
        return NULL;
    return d->writer_caps;
}

uint32_t qbh_writer_side_files(const qb_plugin *d)
{
    const qb_writer_caps *c = qbh_writer_caps(d);
    return c ? c->flags & (QB_WRITER_SIDE_FILES_SELF | QB_WRITER_SIDE_FILES_HOST) : 0;
}

static int plugin_name_ok(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
            return 0;
    return 1;
}

qb_status qbh_writer_caps_validate(const qb_plugin *d, const char *file)
{
    const qb_writer_caps *c = qbh_writer_caps(d);
    const uint32_t known = QB_WRITER_SIDE_FILES_SELF | QB_WRITER_SIDE_FILES_HOST;
    size_t i;

    if (!c)
        return QB_OK;
    if (c->struct_size < QB_WRITER_CAPS_SIZE_1_1)
        return qbh_error_set(QB_E_INVALID, "%s: writer_caps struct_size %u is smaller than the "
                             "ABI 1.1 size %zu", file, c->struct_size,
                             (size_t)QB_WRITER_CAPS_SIZE_1_1);
    if (c->flags & ~known)
        return qbh_error_set(QB_E_INVALID, "%s: writer_caps: unknown flag bits 0x%x", file,
                             c->flags & ~known);
    if ((c->flags & known) == known)
        return qbh_error_set(QB_E_INVALID, "%s: writer_caps: both QB_WRITER_SIDE_FILES_SELF and "
                             "QB_WRITER_SIDE_FILES_HOST set (one party writes the side files)",
                             file);
    /* A fact this host cannot fill would reach the writer as "known". */
    if (c->required_facts & ~(uint32_t)QB_FACT_ALL)
        return qbh_error_set(QB_E_INVALID, "%s: writer_caps: requires model facts this host "
                             "does not know (bits 0x%x)", file,
                             c->required_facts & ~(uint32_t)QB_FACT_ALL);
    if (c->architectures) {
        if (!c->architectures[0])
            return qbh_error_set(QB_E_INVALID, "%s: writer_caps: empty architecture list (NULL "
                                 "means any)", file);
        for (i = 0; c->architectures[i]; i++)
            if (!*c->architectures[i])
                return qbh_error_set(QB_E_INVALID, "%s: writer_caps: architecture %zu is an "
                                     "empty string", file, i);
    }
    if (c->verify_reader && !plugin_name_ok(c->verify_reader))
        return qbh_error_set(QB_E_INVALID, "%s: writer_caps: verify_reader '%s' is not a plugin "
                             "name ([a-z0-9-]+)", file, c->verify_reader);
    return QB_OK;
}

void qbh_writer_archs(const qb_writer_caps *c, char *buf, size_t size)
{
    size_t len = 0, i;
    assert(size > 0);
    buf[0] = '\0';
    for (i = 0; c && c->architectures && c->architectures[i] && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
                                c->architectures[i]);
}

qb_status qbh_writer_check_arch(const qbh_plugin *w, const qb_model_info *mi, const char *source)
{
    const qb_writer_caps *c = qbh_writer_caps(w->desc);
    const char *arch = mi->architecture ? mi->architecture : "";
    char list[1024];
    size_t i;
    if (!c || !c->architectures)
        return QB_OK;
    for (i = 0; c->architectures[i]; i++)
        if (strcmp(c->architectures[i], arch) == 0)
            return QB_OK;
    qbh_writer_archs(c, list, sizeof list);
    return qbh_error_set(QB_E_UNSUPPORTED, "%s: writer %s cannot write this '%s' model: it "
                         "declares the architectures %s", source, w->name, arch, list);
}

qb_status qbh_writer_check_facts(const qbh_plugin *w, const qb_model_info *mi, const char *source)
{
    const qb_writer_caps *c = qbh_writer_caps(w->desc);
    const qb_model_facts *f = mi->facts;
    uint32_t known = 0, missing;
    char names[256];
    if (!c || !c->required_facts)
        return QB_OK;
    if (f && f->struct_size >= QB_MODEL_FACTS_SIZE_1_1)
        known = f->known;
    missing = c->required_facts & ~known;
    if (!missing)
        return QB_OK;
    qbh_fact_names(missing, names, sizeof names);
    return qbh_error_set(QB_E_UNSUPPORTED, "%s: writer %s requires model facts the source does "
                         "not state: %s", source, w->name, names);
}
