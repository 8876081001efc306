/*
 * A text file through a sink. See qbk_sink_text.h.
 */
#include "qbk_sink_text.h"

#include <string.h>

static qb_status write_text(const qb_sink *sink, const char *name, const char *text, int nl)
{
    qb_sink_file *f = NULL;
    qb_status st = sink->create(sink->handle, name, &f);
    if (st != QB_OK)
        return st;
    st = sink->write(f, text, strlen(text));
    if (st == QB_OK && nl)
        st = sink->write(f, "\n", 1);
    if (st == QB_OK)
        return sink->close(f, NULL, NULL);
    sink->close(f, NULL, NULL);
    return st;
}

qb_status qbk_sink_write_text(const qb_sink *sink, const char *name, const char *text)
{
    return write_text(sink, name, text, 1);
}

qb_status qbk_sink_write_text_raw(const qb_sink *sink, const char *name, const char *text)
{
    return write_text(sink, name, text, 0);
}
