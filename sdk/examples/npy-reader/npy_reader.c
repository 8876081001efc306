/*
 * Example third-party quantbridge reader: a directory of NumPy .npy files.
 *
 * A model directory holds config.json (Hugging Face) and one
 * "<canonical tensor name>.npy" per tensor, little-endian float32 ('<f4') or
 * float16 ('<f2'), C order. It is deliberately small: it shows the whole
 * reader contract (negotiation, probe, open, descriptions, row reads,
 * errors through the host) and builds against the installed SDK only:
 *
 *   cc -shared -fPIC -fvisibility=hidden $(pkg-config --cflags quantbridge-sdk) \
 *      npy_reader.c -o libqb_npy.so
 *
 * Format facts: numpy/lib/format.py (NEP 1): magic "\x93NUMPY", major,
 * minor, header length (u16 LE in 1.0, u32 LE in 2.0/3.0), then a Python
 * dict literal with 'descr', 'fortran_order', 'shape'; data follows.
 */
#include <quantbridge/quantbridge.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const qb_host *npy_host; /* valid for the process lifetime */

typedef struct npy_tensor {
    char *name;        /* canonical name = file name without ".npy" */
    uint32_t n_dims;
    int64_t dims[QB_MAX_DIMS];
    int is_f16;
    const uint8_t *data; /* inside the mapping */
    void *map;
    size_t map_len;
} npy_tensor;

typedef struct npy_model {
    char *config_json;
    char *arch;
    npy_tensor *t;
    size_t n;
} npy_model;

/* Parses the .npy header at `p` (len bytes). Fills dims/is_f16 and the data
 * offset. Returns QB_OK or QB_E_FORMAT/QB_E_UNSUPPORTED with a message. */
static qb_status npy_parse_header(const char *file, const uint8_t *p, size_t len, npy_tensor *t,
                                  size_t *data_off)
{
    size_t hlen, hoff;
    const char *h, *s;
    char hdr[1024];
    int64_t count = 1;

    if (len < 10 || memcmp(p, "\x93NUMPY", 6) != 0)
        return npy_host->set_error(npy_host, QB_E_FORMAT, "%s: not a .npy file (bad magic)", file);
    if (p[6] == 1) {
        hlen = (size_t)p[8] | ((size_t)p[9] << 8);
        hoff = 10;
    } else if ((p[6] == 2 || p[6] == 3) && len >= 12) {
        hlen = (size_t)p[8] | ((size_t)p[9] << 8) | ((size_t)p[10] << 16) | ((size_t)p[11] << 24);
        hoff = 12;
    } else {
        return npy_host->set_error(npy_host, QB_E_UNSUPPORTED, "%s: .npy version %u not supported", file, p[6]);
    }
    if (hlen >= sizeof(hdr) || hoff + hlen > len)
        return npy_host->set_error(npy_host, QB_E_FORMAT, "%s: .npy header length %zu out of range", file, hlen);
    memcpy(hdr, p + hoff, hlen);
    hdr[hlen] = '\0';
    h = hdr;
    if (strstr(h, "'descr': '<f4'"))
        t->is_f16 = 0;
    else if (strstr(h, "'descr': '<f2'"))
        t->is_f16 = 1;
    else
        return npy_host->set_error(npy_host, QB_E_UNSUPPORTED, "%s: only '<f4' and '<f2' arrays are supported", file);
    if (!strstr(h, "'fortran_order': False"))
        return npy_host->set_error(npy_host, QB_E_UNSUPPORTED, "%s: Fortran-order arrays are not supported", file);
    s = strstr(h, "'shape': (");
    if (!s)
        return npy_host->set_error(npy_host, QB_E_FORMAT, "%s: header has no shape", file);
    s += strlen("'shape': (");
    t->n_dims = 0;
    while (*s && *s != ')') {
        char *end;
        long long d = strtoll(s, &end, 10);
        if (end == s || d < 1 || d > (1LL << 40) || t->n_dims == QB_MAX_DIMS)
            return npy_host->set_error(npy_host, QB_E_FORMAT, "%s: bad shape in header", file);
        if (count > ((int64_t)1 << 48) / d)
            return npy_host->set_error(npy_host, QB_E_FORMAT, "%s: shape too large", file);
        count *= d;
        t->dims[t->n_dims++] = d;
        s = end;
        while (*s == ',' || *s == ' ')
            s++;
    }
    if (t->n_dims == 0)
        return npy_host->set_error(npy_host, QB_E_UNSUPPORTED, "%s: scalars are not tensors", file);
    *data_off = hoff + hlen;
    if ((uint64_t)count * (t->is_f16 ? 2u : 4u) != len - *data_off)
        return npy_host->set_error(npy_host, QB_E_FORMAT, "%s: data size does not match shape", file);
    return QB_OK;
}

static int npy_has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a > b && strcmp(s + a - b, suf) == 0;
}

static int npy_probe(void *ctx, const qb_probe_input *in)
{
    const char *const *s;
    int npy = 0, st = 0;
    (void)ctx;
    if (!in->is_dir || !in->config_json || !in->siblings)
        return QB_PROBE_NONE;
    for (s = in->siblings; *s; s++) {
        npy += npy_has_suffix(*s, ".npy");
        st += npy_has_suffix(*s, ".safetensors");
    }
    return npy > 0 && st == 0 ? QB_PROBE_LIKELY : QB_PROBE_NONE;
}

static void npy_close(qb_reader_handle r)
{
    npy_model *m = r;
    size_t i;
    if (!m)
        return;
    for (i = 0; i < m->n; i++) {
        if (m->t[i].map)
            munmap(m->t[i].map, m->t[i].map_len);
        free(m->t[i].name);
    }
    free(m->t);
    npy_host->free(npy_host, m->config_json);
    free(m->arch);
    free(m);
}

/* Opens one .npy file into t (mapping it). */
static qb_status npy_open_file(const char *dir, const char *fname, npy_tensor *t)
{
    char path[4096];
    struct stat stb;
    size_t off = 0; /* set_error is the host's: the compiler cannot see it returns the code */
    int fd;
    qb_status rc;

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, fname) >= sizeof(path))
        return npy_host->set_error(npy_host, QB_E_INVALID, "%s/%s: path too long", dir, fname);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return npy_host->set_error(npy_host, QB_E_IO, "%s: %s", path, strerror(errno));
    if (fstat(fd, &stb) != 0 || !S_ISREG(stb.st_mode) || stb.st_size < 10) {
        close(fd);
        return npy_host->set_error(npy_host, QB_E_FORMAT, "%s: not a regular .npy file", path);
    }
    t->map_len = (size_t)stb.st_size;
    t->map = mmap(NULL, t->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (t->map == MAP_FAILED) {
        t->map = NULL;
        return npy_host->set_error(npy_host, QB_E_IO, "%s: mmap: %s", path, strerror(errno));
    }
    rc = npy_parse_header(path, t->map, t->map_len, t, &off);
    if (rc == QB_OK)
        t->data = (const uint8_t *)t->map + off;
    return rc;
}

static qb_status npy_open(void *ctx, const char *path, const qb_param *params, qb_reader_handle *out)
{
    npy_model *m;
    char **names = NULL, cfgpath[4096];
    size_t i, len;
    qb_status rc;
    const char *mt;
    (void)ctx;
    (void)params;

    *out = NULL;
    m = calloc(1, sizeof(*m));
    if (!m)
        return npy_host->set_error(npy_host, QB_E_NOMEM, "out of memory");
    snprintf(cfgpath, sizeof(cfgpath), "%s/config.json", path);
    rc = npy_host->read_small_file(npy_host, cfgpath, 4u << 20, (void **)&m->config_json, &len);
    if (rc != QB_OK)
        goto fail;
    /* A full JSON parser is not needed for this example: take "model_type". */
    mt = strstr(m->config_json, "\"model_type\"");
    if (mt && (mt = strchr(mt + 12, '"')) != NULL) {
        const char *e = strchr(mt + 1, '"');
        if (e)
            m->arch = strndup(mt + 1, (size_t)(e - mt - 1));
    }
    if (!m->arch) {
        rc = npy_host->set_error(npy_host, QB_E_FORMAT, "%s: no model_type", cfgpath);
        goto fail;
    }
    rc = npy_host->list_dir(npy_host, path, &names);
    if (rc != QB_OK)
        goto fail;
    for (i = 0; names[i]; i++)
        if (npy_has_suffix(names[i], ".npy"))
            m->n++;
    m->t = calloc(m->n ? m->n : 1, sizeof(npy_tensor));
    if (!m->t) {
        rc = npy_host->set_error(npy_host, QB_E_NOMEM, "out of memory");
        goto fail;
    }
    m->n = 0;
    for (i = 0; names[i]; i++) {
        npy_tensor *t;
        if (!npy_has_suffix(names[i], ".npy"))
            continue;
        t = &m->t[m->n++];
        t->name = strndup(names[i], strlen(names[i]) - 4);
        if (!t->name) {
            rc = npy_host->set_error(npy_host, QB_E_NOMEM, "out of memory");
            goto fail;
        }
        rc = npy_open_file(path, names[i], t);
        if (rc != QB_OK)
            goto fail;
    }
    npy_host->free_list(npy_host, names);
    *out = m;
    return QB_OK;
fail:
    npy_host->free_list(npy_host, names);
    npy_close(m);
    return rc;
}

static qb_status npy_get_model_info(qb_reader_handle r, qb_model_info *out)
{
    npy_model *m = r;
    out->architecture = m->arch;
    out->config_json = m->config_json;
    out->generation_config_json = NULL;
    out->n_tensors = m->n;
    out->source_format = "npy";
    out->source_summary = "NumPy .npy directory (example plugin)";
    out->tokenizer_dir = NULL;
    out->chat_template = NULL;
    return QB_OK;
}

static qb_status npy_get_tensor_info(qb_reader_handle r, size_t index, qb_tensor_info *out)
{
    npy_model *m = r;
    const npy_tensor *t;
    if (index >= m->n)
        return npy_host->set_error(npy_host, QB_E_RANGE, "npy: tensor index %zu out of range", index);
    t = &m->t[index];
    out->name = t->name;
    out->n_dims = t->n_dims;
    memcpy(out->dims, t->dims, sizeof(out->dims));
    out->source_dtype = t->is_f16 ? QB_DT_F16 : QB_DT_F32;
    out->source_encoding = t->is_f16 ? "f16" : "f32";
    out->has_grid = 0;
    return QB_OK;
}

static qb_status npy_read_rows(qb_reader_handle r, size_t index, int64_t row0, int64_t n_rows, float *dst)
{
    npy_model *m = r;
    qb_tensor_info ti;
    int64_t rows, cols, i;
    const npy_tensor *t;
    qb_status rc;

    memset(&ti, 0, sizeof(ti)); /* likewise: filled on success only */
    ti.struct_size = sizeof(ti);
    rc = npy_get_tensor_info(r, index, &ti);
    if (rc != QB_OK)
        return rc;
    t = &m->t[index];
    rows = qb_tensor_rows(&ti);
    cols = qb_tensor_cols(&ti);
    if (row0 < 0 || n_rows < 0 || row0 > rows || n_rows > rows - row0)
        return npy_host->set_error(npy_host, QB_E_RANGE, "%s: rows [%lld, +%lld) out of range", t->name,
                                   (long long)row0, (long long)n_rows);
    for (i = 0; i < n_rows * cols; i++) {
        size_t e = (size_t)(row0 * cols + i);
        if (t->is_f16) {
            uint16_t h;
            memcpy(&h, t->data + 2 * e, 2);
            dst[i] = qb_f16_to_f32(h);
        } else {
            memcpy(&dst[i], t->data + 4 * e, 4);
        }
    }
    return QB_OK;
}

/* Designated initializers: a field appended in a later minor is simply
 * zero here, and the order of fields never matters. */
static const qb_reader_vtable npy_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = npy_probe,
    .open = npy_open,
    .close = npy_close,
    .get_model_info = npy_get_model_info,
    .get_tensor_info = npy_get_tensor_info,
    .read_rows = npy_read_rows,
    /* no integer grid: get_grid_info and read_grid stay NULL */
};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin npy_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = "npy",
    .version = "1.0.0",
    .description = "Example: directory of NumPy .npy tensors + config.json",
    .vendor = "quantbridge examples",
    .license = "MIT",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .reader = &npy_reader,
};

QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host, const qb_plugin **out)
{
    /* Uses nothing newer than ABI 1.0, so any 1.x host serves it. */
    qb_status rc = qb_negotiate(neg, QB_MAKE_ABI(1, 0));
    if (rc)
        return rc;
    if (!host || !out)
        return QB_E_INVALID;
    npy_plugin.abi = neg->plugin_abi;
    npy_host = host;
    *out = &npy_plugin;
    return QB_OK;
}
