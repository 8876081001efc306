/*
 * qbk_path.h — file system paths (internal kit). The one path join of the
 * plugins; the host keeps GLib's g_build_filename.
 */
#ifndef QBK_PATH_H
#define QBK_PATH_H

/* Joins directory `dir` and the relative `name` with one '/': "a" + "b"
 * gives "a/b", "a/" + "b" gives "a/b", "" + "b" gives "b". No other
 * normalisation (no "..", no symlinks); `name` is taken as given.
 * Returns: a new string owned by the caller (qbk_free), or NULL when
 * memory is short (no message is set: the caller names the file).
 * Both arguments must be non-NULL. Pure, thread-safe. */
char *qbk_path_join(const char *dir, const char *name);

#endif /* QBK_PATH_H */
