/* The JSON service (qb_json.h, host/json*.c) as a plugin reaches it, through
 * qb_host.json: strict parsing with a reason and byte offset for every
 * refusal, exact numbers both ways, emit formats, the ownership rules of
 * add/append (also when allocations fail) and parsing from many threads. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbh.h"
#include "qbt_check_main.h"
#include "qbt_host.h"

static const qb_host *H;
static const qb_json_api *J;

static void setup(void)
{
    H = qbt_host();
    ck_assert(QB_HAS_FIELD(H, qb_host, json));
    J = H->json;
    ck_assert_ptr_nonnull(J);
    ck_assert_uint_ge(J->struct_size, QB_JSON_API_SIZE_1_1);
    qbt_host_reset();
}

static qb_json *parse_ok(const char *text)
{
    qb_json *j = NULL;
    qb_status rc = J->parse(H, "t.json", text, strlen(text), &j);
    ck_assert_msg(rc == QB_OK, "%s: %s", text, qbt_host_last_error());
    ck_assert_ptr_nonnull(j);
    return j;
}

/* Emits node (compact or indented); the caller frees with H->free. */
static char *emit(const qb_json *j, int indent)
{
    char *out = NULL;
    size_t len = 0;
    qb_status rc = J->emit(H, j, indent, &out, &len);
    ck_assert_msg(rc == QB_OK, "emit: %s", qbt_host_last_error());
    ck_assert_uint_eq(len, strlen(out));
    return out;
}

/* The text is refused with QB_E_FORMAT, a message naming the file, the
 * byte offset and `reason`. */
static void refused_at(const char *text, size_t len, size_t at, const char *reason)
{
    qb_json *j = (qb_json *)1;
    char want[64];
    const char *msg;
    qb_status rc;
    qbt_host_clear_error();
    rc = J->parse(H, "cfg.json", text, len, &j);
    msg = qbt_host_last_error();
    ck_assert_msg(rc == QB_E_FORMAT, "'%.*s' gave %d", (int)len, text, rc);
    ck_assert_ptr_null(j);
    snprintf(want, sizeof want, "cfg.json: invalid JSON at byte %zu: ", at);
    ck_assert_msg(strncmp(msg, want, strlen(want)) == 0, "'%.*s': '%s' does not start '%s'",
                  (int)len, text, msg, want);
    ck_assert_msg(strstr(msg, reason) != NULL, "'%.*s': '%s' lacks '%s'", (int)len, text, msg,
                  reason);
}

static void refused(const char *text, size_t at, const char *reason)
{
    refused_at(text, strlen(text), at, reason);
}

START_TEST(round_trip_compact_and_indented)
{
    const char *doc = " {\"b\": [1, 2.5, -3e-2, true, false, null, \"x\\ny\\u00e9\"],\n"
                      "  \"a\": {}, \"c\": [], \"d\": {\"e\": \"\\\"\\\\/\"}} ";
    qb_json *j, *k;
    char *c, *p, *c2;
    setup();
    j = parse_ok(doc);
    c = emit(j, 0);
    ck_assert_str_eq(c, "{\"b\":[1,2.5,-0.03,true,false,null,\"x\\ny\xc3\xa9\"],\"a\":{},\"c\":[],"
                        "\"d\":{\"e\":\"\\\"\\\\/\"}}");
    p = emit(j, 2);
    ck_assert_str_eq(p, "{\n"
                        "  \"b\": [\n"
                        "    1,\n"
                        "    2.5,\n"
                        "    -0.03,\n"
                        "    true,\n"
                        "    false,\n"
                        "    null,\n"
                        "    \"x\\ny\xc3\xa9\"\n"
                        "  ],\n"
                        "  \"a\": {},\n"
                        "  \"c\": [],\n"
                        "  \"d\": {\n"
                        "    \"e\": \"\\\"\\\\/\"\n"
                        "  }\n"
                        "}\n");
    /* the indented text parses back to the same tree */
    k = parse_ok(p);
    c2 = emit(k, 0);
    ck_assert_str_eq(c, c2);
    H->free(H, c2);
    H->free(H, p);
    p = emit(j, 8);
    ck_assert_ptr_nonnull(strstr(p, "\n        \"b\": [\n                1,"));
    H->free(H, p);
    H->free(H, c);
    J->free(k);
    J->free(j);
}
END_TEST

START_TEST(numbers_round_trip_exactly)
{
    static const double v[] = {0.1, 1.0 / 3.0, 1e300, -1e-300, 5e-324, 1.7976931348623157e308,
                               9007199254740992.0, -9007199254740992.0, 9007199254740994.0,
                               123456789012.0, 1.5e-7, 2.5, 0.0, 1e17, 4503599627370496.5};
    size_t i;
    setup();
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        qb_json *n = J->new_number(v[i]), *back;
        char *t;
        double got;
        ck_assert_ptr_nonnull(n);
        t = emit(n, 0);
        back = parse_ok(t);
        ck_assert(J->get_number(back, &got));
        ck_assert_msg(memcmp(&got, &v[i], sizeof got) == 0, "%.17g -> '%s' -> %.17g", v[i], t,
                      got);
        H->free(H, t);
        J->free(back);
        J->free(n);
    }
    {
        /* integral values print as integers; -0 keeps its sign */
        qb_json *a = parse_ok("[100, 1e2, 32.0, -0, 9007199254740992, 0.5]");
        char *t = emit(a, 0);
        ck_assert_str_eq(t, "[100,100,32,-0,9007199254740992,0.5]");
        H->free(H, t);
        J->free(a);
    }
}
END_TEST

START_TEST(get_int_only_exact_integers)
{
    static const struct {
        const char *text;
        int ok;
        int64_t v;
    } cases[] = {
        {"0", 1, 0},
        {"-0", 1, 0},
        {"42", 1, 42},
        {"32.0", 1, 32},
        {"1e2", 1, 100},
        {"100e-2", 1, 1},
        {"-9007199254740992", 1, -9007199254740992LL},
        {"9007199254740992", 1, 9007199254740992LL},
        {"9007199254740993", 0, 0},  /* rounds to 2^53: not held exactly */
        {"9007199254740994", 0, 0},  /* 2^53 + 2: exact, outside the range */
        {"-9007199254740994", 0, 0},
        {"4503599627370496.5", 0, 0}, /* rounds to an integer; the text is not one */
        {"1.5", 0, 0},
        {"1e-1", 0, 0},
        {"1e300", 0, 0},
        {"12345678901234567890", 0, 0},
        {"\"5\"", 0, 0},
        {"true", 0, 0},
    };
    size_t i;
    setup();
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qb_json *j = parse_ok(cases[i].text);
        int64_t v = -7;
        int ok = J->get_int(j, &v);
        ck_assert_msg(ok == cases[i].ok, "%s: get_int %d", cases[i].text, ok);
        if (ok)
            ck_assert_msg(v == cases[i].v, "%s: %lld", cases[i].text, (long long)v);
        J->free(j);
    }
    {
        qb_json *big = J->new_number(9007199254740994.0), *ok = J->new_number(-7.0);
        qb_json *half = J->new_number(0.5);
        int64_t v = 0;
        double d = 0;
        ck_assert(!J->get_int(big, &v));
        ck_assert(J->get_number(big, &d));
        ck_assert(d == 9007199254740994.0);
        ck_assert(J->get_int(ok, &v));
        ck_assert_int_eq(v, -7);
        ck_assert(!J->get_int(half, &v));
        J->free(big);
        J->free(ok);
        J->free(half);
    }
    /* not JSON numbers at all */
    ck_assert_ptr_null(J->new_number(NAN));
    ck_assert_ptr_null(J->new_number(INFINITY));
    ck_assert_ptr_null(J->new_number(-INFINITY));
}
END_TEST

START_TEST(every_refusal_has_reason_and_offset)
{
    setup();
    refused("{\"a\": 1, \"b\": 2, \"a\": 3}", 17, "duplicate key \"a\"");
    refused("{\"x\": {\"k\": 1, \"k\": 2}}", 15, "duplicate key \"k\"");
    refused("[1, 2,]", 6, "trailing comma");
    refused("{\"a\": 1,}", 8, "trailing comma");
    refused("{\"a\": 1 /* c */}", 8, "comments are not JSON");
    refused("// c\n{}", 0, "comments are not JSON");
    refused("\"a\\u0000b\"", 2, "U+0000");
    refused("{\"k\\u0000\": 1}", 3, "U+0000");
    refused("{} x", 3, "more data after the JSON value");
    refused("[1] [2]", 4, "more data after the JSON value");
    refused("NaN", 0, "expected a JSON value");
    refused("[Infinity]", 1, "expected a JSON value");
    refused("1e400", 0, "out of the range of a double");
    refused("01", 0, "leading zero");
    refused("1.", 2, "a digit after the decimal point");
    refused("-", 1, "a digit");
    refused("[1e]", 3, "a digit in the exponent");
    refused("\"a\tb\"", 2, "control character 0x09");
    refused("\"\xff\"", 1, "invalid UTF-8");
    refused("\"\xc0\xaf\"", 1, "invalid UTF-8"); /* overlong '/' */
    refused("\"\xed\xa0\x80\"", 1, "invalid UTF-8"); /* encoded surrogate */
    refused("\"\\ud800\"", 1, "unpaired high surrogate");
    refused("\"\\udc00\"", 1, "unpaired low surrogate");
    refused("\"\\x41\"", 1, "invalid escape");
    refused("\"abc", 0, "unterminated string");
    refused("{\"a\" 1}", 5, "expected ':'");
    refused("{1: 2}", 1, "expected a string key");
    refused("[1 2]", 3, "expected ',' or ']'");
    refused("tru", 0, "expected a JSON value");
    refused("", 0, "no JSON value");
    refused(" \n\t ", 4, "no JSON value");
    refused("\xef\xbb\xbf{}", 0, "byte order mark");
    refused_at("[1,\0 2]", 7, 3, "expected a JSON value");
}
END_TEST

START_TEST(nesting_limit)
{
    char *deep = malloc(2 * 1001 + 1);
    qb_json *j = NULL;
    size_t i;
    setup();
    for (i = 0; i < 1000; i++) {
        deep[i] = '[';
        deep[1000 + i] = ']';
    }
    deep[2000] = '\0';
    ck_assert_int_eq(J->parse(H, NULL, deep, 2000, &j), QB_OK);
    J->free(j);
    memmove(deep + 1, deep, 2001);
    deep[0] = '[';
    strcat(deep, "]");
    ck_assert_int_eq(J->parse(H, NULL, deep, 2002, &j), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "JSON text: invalid JSON at byte 1000: "
                                                        "nested deeper than 1000 levels"));
    free(deep);
}
END_TEST

START_TEST(parse_reads_len_bytes_only)
{
    static const char buf[] = {'[', '1', ']', 'x', 'y'}; /* no NUL anywhere */
    qb_json *j = NULL;
    setup();
    ck_assert_int_eq(J->parse(H, "b", buf, 3, &j), QB_OK);
    ck_assert_uint_eq(J->count(j), 1);
    J->free(j);
    ck_assert_int_eq(J->parse(H, "b", buf, 2, &j), QB_E_FORMAT);
    ck_assert_ptr_null(j);
    ck_assert_int_eq(J->parse(H, "b", NULL, 0, &j), QB_E_INVALID);
    ck_assert_int_eq(J->parse(H, "b", "1", 1, NULL), QB_E_INVALID);
}
END_TEST

START_TEST(reading)
{
    qb_json *j;
    const qb_json *v, *e;
    const char *key = (const char *)1, *s;
    int64_t i = 0;
    int32_t b = -1;
    double d = 0;
    setup();
    j = parse_ok("{\"s\": \"\\ud83d\\ude00 \\u00e9\", \"n\": 1.25, \"t\": true, \"z\": null,"
                 " \"arr\": [10, 20, 30]}");
    ck_assert_int_eq(J->type(j), QB_JSON_OBJECT);
    ck_assert_int_eq(J->type(NULL), QB_JSON_INVALID);
    ck_assert_uint_eq(J->count(j), 5);
    /* a surrogate pair is one 4-byte UTF-8 character */
    s = J->get_string(J->get(j, "s"));
    ck_assert_str_eq(s, "\xf0\x9f\x98\x80 \xc3\xa9");
    ck_assert(J->get_number(J->get(j, "n"), &d));
    ck_assert(d == 1.25);
    ck_assert(J->get_bool(J->get(j, "t"), &b));
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(J->type(J->get(j, "z")), QB_JSON_NULL);
    ck_assert_ptr_null(J->get(j, "missing"));
    ck_assert_ptr_null(J->get(j, NULL));
    ck_assert_ptr_null(J->get_string(J->get(j, "n")));
    ck_assert(!J->get_number(J->get(j, "s"), &d));
    ck_assert(!J->get_bool(J->get(j, "z"), &b));
    /* members in document order, with their keys */
    e = J->at(j, 4, &key);
    ck_assert_str_eq(key, "arr");
    ck_assert_int_eq(J->type(e), QB_JSON_ARRAY);
    e = J->at(j, 0, &key);
    ck_assert_str_eq(key, "s");
    ck_assert_ptr_null(J->at(j, 5, &key));
    ck_assert_ptr_null(key);
    v = J->get(j, "arr");
    ck_assert_uint_eq(J->count(v), 3);
    ck_assert(J->get_int(J->at(v, 2, &key), &i));
    ck_assert_int_eq(i, 30);
    ck_assert_ptr_null(key); /* array elements have no key */
    ck_assert(J->get_int(J->at(v, 0, NULL), &i));
    ck_assert_int_eq(i, 10);
    ck_assert_ptr_null(J->get(v, "0")); /* not an object */
    ck_assert_uint_eq(J->count(J->get(j, "n")), 0);
    ck_assert_ptr_null(J->at(J->get(j, "n"), 0, NULL));
    J->free(j);
    J->free(NULL);
}
END_TEST

START_TEST(large_object_walk)
{
    /* at() in order stays linear: 50000 members walked forward. */
    size_t n = 50000, i, len = 0;
    char *text = malloc(n * 24 + 8);
    qb_json *j;
    len += (size_t)sprintf(text, "{");
    for (i = 0; i < n; i++)
        len += (size_t)sprintf(text + len, "%s\"k%zu\":%zu", i ? "," : "", i, i);
    text[len++] = '}';
    setup();
    ck_assert_int_eq(J->parse(H, "big", text, len, &j), QB_OK);
    ck_assert_uint_eq(J->count(j), n);
    for (i = 0; i < n; i++) {
        const char *key;
        int64_t v;
        char want[32];
        ck_assert(J->get_int(J->at(j, i, &key), &v));
        ck_assert_int_eq(v, (int64_t)i);
        snprintf(want, sizeof want, "k%zu", i);
        ck_assert_str_eq(key, want);
    }
    J->free(j);
    free(text);
}
END_TEST

START_TEST(building_and_ownership)
{
    qb_json *o, *a, *s;
    char *t;
    setup();
    o = J->new_object();
    a = J->new_array();
    ck_assert_int_eq(J->append(a, J->new_number(1)), QB_OK);
    ck_assert_int_eq(J->append(a, J->new_string("two")), QB_OK);
    ck_assert_int_eq(J->append(a, J->new_null()), QB_OK);
    ck_assert_int_eq(J->add(o, "first", J->new_bool(1)), QB_OK);
    ck_assert_int_eq(J->add(o, "list", a), QB_OK);
    ck_assert_int_eq(J->add(o, "last", J->new_string("z")), QB_OK);
    /* replacing keeps the member's place and frees the old value */
    ck_assert_int_eq(J->add(o, "first", J->new_bool(0)), QB_OK);
    ck_assert_int_eq(J->add(o, "last", J->new_number(9)), QB_OK);
    ck_assert_uint_eq(J->count(o), 3);
    t = emit(o, 0);
    ck_assert_str_eq(t, "{\"first\":false,\"list\":[1,\"two\",null],\"last\":9}");
    H->free(H, t);

    /* refusals: the item is freed (ASan reports a leak otherwise) ... */
    ck_assert_int_eq(J->add(o, NULL, J->new_null()), QB_E_INVALID);
    ck_assert_int_eq(J->add(a, "k", J->new_null()), QB_E_INVALID);      /* not an object */
    ck_assert_int_eq(J->append(o, J->new_null()), QB_E_INVALID);        /* not an array */
    ck_assert_int_eq(J->add(NULL, "k", J->new_string("x")), QB_E_INVALID);
    ck_assert_int_eq(J->append(NULL, J->new_object()), QB_E_INVALID);
    ck_assert_int_eq(J->add(o, "k", NULL), QB_E_INVALID);
    ck_assert_int_eq(J->append(a, NULL), QB_E_INVALID);
    /* ... except when it belongs to a tree the caller still holds */
    ck_assert_int_eq(J->add(o, "self", o), QB_E_INVALID);
    ck_assert_int_eq(J->append(a, (qb_json *)J->at(a, 0, NULL)), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "not a root"));
    ck_assert_int_eq(J->add(o, "k", (qb_json *)J->get(o, "list")), QB_E_INVALID);
    /* freeing a node inside a tree is ignored, not a corruption */
    J->free((qb_json *)J->get(o, "list"));
    ck_assert_uint_eq(J->count(o), 3);
    ck_assert_uint_eq(J->count(a), 3);

    /* a string that is not UTF-8 cannot be emitted as JSON */
    s = J->new_object();
    ck_assert_int_eq(J->add(s, "bad", J->new_string("\xff")), QB_OK);
    t = (char *)1;
    ck_assert_int_eq(J->emit(H, s, 0, &t, NULL), QB_E_INVALID);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "not valid UTF-8"));
    J->free(s);
    /* emit arguments */
    ck_assert_int_eq(J->emit(H, o, 9, &t, NULL), QB_E_INVALID);
    ck_assert_int_eq(J->emit(H, o, -1, &t, NULL), QB_E_INVALID);
    ck_assert_int_eq(J->emit(H, NULL, 0, &t, NULL), QB_E_INVALID);
    ck_assert_int_eq(J->emit(H, o, 0, NULL, NULL), QB_E_INVALID);
    /* control characters escaped */
    s = J->new_string("a\x01\x1f\"\\\t");
    t = emit(s, 0);
    ck_assert_str_eq(t, "\"a\\u0001\\u001f\\\"\\\\\\t\"");
    H->free(H, t);
    J->free(s);
    J->free(o);
}
END_TEST

/* Builds {"k": [1, "s"], "m": {"x": true}} step by step; every step may
 * fail under injection. Returns the tree or NULL; never leaks. */
static qb_json *build_under_injection(void)
{
    qb_json *o = J->new_object(), *a = NULL, *m = NULL;
    if (!o)
        return NULL;
    a = J->new_array();
    if (!a)
        goto fail;
    if (J->append(a, J->new_number(1)) || J->append(a, J->new_string("s"))) {
        J->free(a);
        goto fail;
    }
    if (J->add(o, "k", a))
        goto fail; /* a was freed by add */
    m = J->new_object();
    if (!m)
        goto fail;
    if (J->add(m, "x", J->new_bool(1))) {
        J->free(m);
        goto fail;
    }
    if (J->add(o, "m", m))
        goto fail;
    return o;
fail:
    J->free(o);
    return NULL;
}

START_TEST(allocation_failures)
{
    static const char doc[] = "{\"a\": [1, \"two\", {\"b\": null}], \"c\": \"d\", \"e\": 1e5}";
    long n;
    int parsed = 0, built = 0, emitted = 0;
    setup();
    for (n = 0; n < 200 && !parsed; n++) {
        qb_json *j = (qb_json *)1;
        qb_status rc;
        qbh_alloc_fail_after(n);
        rc = J->parse(H, "doc", doc, sizeof doc - 1, &j);
        qbh_alloc_fail_after(-1);
        ck_assert_msg(rc == QB_OK || rc == QB_E_NOMEM, "n=%ld rc=%d", n, rc);
        if (rc == QB_E_NOMEM) {
            ck_assert_ptr_null(j);
            ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "doc: out of memory"));
        }
        parsed = rc == QB_OK;
        J->free(j);
    }
    ck_assert(parsed);
    ck_assert_int_gt(n, 5); /* the failures did reach the parser */
    for (n = 0; n < 200 && !built; n++) {
        qb_json *j;
        qbh_alloc_fail_after(n);
        j = build_under_injection();
        qbh_alloc_fail_after(-1);
        if (j) {
            char *t = emit(j, 0);
            ck_assert_str_eq(t, "{\"k\":[1,\"s\"],\"m\":{\"x\":true}}");
            H->free(H, t);
            built = 1;
        }
        J->free(j);
    }
    ck_assert(built);
    ck_assert_int_gt(n, 5);
    for (n = 0; n < 20 && !emitted; n++) {
        qb_json *j = parse_ok(doc);
        char *t = (char *)1;
        size_t len = 7;
        qb_status rc;
        qbh_alloc_fail_after(n);
        rc = J->emit(H, j, 2, &t, &len);
        qbh_alloc_fail_after(-1);
        ck_assert_msg(rc == QB_OK || rc == QB_E_NOMEM, "n=%ld rc=%d", n, rc);
        if (rc) {
            ck_assert_ptr_null(t);
            ck_assert_uint_eq(len, 0);
        } else {
            emitted = 1;
            H->free(H, t);
        }
        J->free(j);
    }
    ck_assert(emitted);
    ck_assert_int_eq(n, 2); /* emit allocates once, through host->alloc */
}
END_TEST

#define N_THREADS 8
static const char *shared_text =
    "{\"model_type\": \"llama\", \"num_hidden_layers\": 32, \"rope\": {\"theta\": 500000.0},"
    " \"ids\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], \"name\": \"m\\u00e9\"}";
static qb_json *shared_tree;

static void *parse_many(void *arg)
{
    size_t t = (size_t)arg, i, k;
    long bad = 0;
    for (i = 0; i < 300; i++) {
        qb_json *j = NULL, *no = NULL;
        char *out = NULL;
        const qb_json *ids;
        int64_t v;
        if (J->parse(H, "thread", shared_text, strlen(shared_text), &j) != QB_OK) {
            bad++;
            continue;
        }
        if (J->emit(H, j, (int)(t % 3), &out, NULL) != QB_OK)
            bad++;
        H->free(H, out);
        /* a failure on this thread has its own message */
        if (J->parse(H, "thread", "[1,]", 4, &no) == QB_OK ||
            !strstr(qbh_error_message(), "at byte 3"))
            bad++;
        /* concurrent reads of one shared tree, each walking forward */
        ids = J->get(shared_tree, "ids");
        for (k = 0; k < J->count(ids); k++)
            if (!J->get_int(J->at(ids, k, NULL), &v) || v != (int64_t)k + 1)
                bad++;
        if (!J->get_int(J->get(j, "num_hidden_layers"), &v) || v != 32)
            bad++;
        J->free(j);
    }
    return (void *)bad;
}

START_TEST(concurrent_parses)
{
    pthread_t th[N_THREADS];
    size_t i;
    setup();
    shared_tree = parse_ok(shared_text);
    for (i = 0; i < N_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, parse_many, (void *)i), 0);
    for (i = 0; i < N_THREADS; i++) {
        void *bad = NULL;
        ck_assert_int_eq(pthread_join(th[i], &bad), 0);
        ck_assert_msg(bad == NULL, "thread %zu: %ld failures", i, (long)bad);
    }
    J->free(shared_tree);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("service");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, round_trip_compact_and_indented);
    tcase_add_test(tc, numbers_round_trip_exactly);
    tcase_add_test(tc, get_int_only_exact_integers);
    tcase_add_test(tc, every_refusal_has_reason_and_offset);
    tcase_add_test(tc, nesting_limit);
    tcase_add_test(tc, parse_reads_len_bytes_only);
    tcase_add_test(tc, reading);
    tcase_add_test(tc, large_object_walk);
    tcase_add_test(tc, building_and_ownership);
    tcase_add_test(tc, allocation_failures);
    tcase_add_test(tc, concurrent_parses);
    suite_add_tcase(s, tc);
    return s;
}
