#!/bin/sh
# Fails when a source comment cites a Markdown document that is not in the
# repository, or a quoted section of a repository document that has no such
# heading. Rule (docs/CONTRIBUTING.md): comments cite documents in the repo or
# upstream functions by name. A cited name resolves relative to the repo root,
# docs/ or the citing file's folder. Usage: check_citations.sh [repo-root]
set -eu
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"

find . \( -name .git -o -name 'build*' -o -name shared -o -name node_modules \) -prune -o \
    -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cmake' \
    -o -name CMakeLists.txt -o -name '*.sh' -o -name '*.py' \) -print | sort |
while IFS= read -r f; do
    case "$f" in
    *.c | *.h | *.cu | *.cuh) style=c ;;
    *) style=hash ;;
    esac
    # Print "line<TAB>comment text of that line" for every line holding a comment.
    awk -v style="$style" '
    function flush() { if (txt != "") printf "%d\t%s\n", NR, txt; txt = "" }
    {
        txt = ""; line = $0; n = length(line); i = 1
        if (style == "hash") {
            q = ""
            for (; i <= n; i++) {
                ch = substr(line, i, 1)
                if (q != "") { if (ch == "\\") i++; else if (ch == q) q = ""; continue }
                if (ch == "\"" || ch == "\047") { q = ch; continue }
                if (ch == "#") { txt = substr(line, i + 1); break }
            }
            flush(); next
        }
        while (i <= n) {
            ch = substr(line, i, 1); two = substr(line, i, 2)
            if (inblk) {
                if (two == "*/") { inblk = 0; i += 2; continue }
                txt = txt ch; i++; continue
            }
            if (q != "") { if (ch == "\\") i += 2; else { if (ch == q) q = ""; i++ } continue }
            if (two == "//") { txt = txt " " substr(line, i + 2); break }
            if (two == "/*") { inblk = 1; i += 2; continue }
            if (ch == "\"" || ch == "\047") q = ch
            i++
        }
        q = ""  # a string literal never spans lines here
        flush()
    }' "$f" | sed "s|^|$f	|"
done >"${TMPDIR:-/tmp}/qb_citations.$$"

status=0
dir_of() { d=${1%/*}; echo "${d#./}"; }
resolve() { # $1 citing file, $2 name -> prints the repo path or nothing
    for base in . docs "$(dir_of "$1")"; do
        if [ -f "$base/$2" ]; then
            p="$base/$2"; p=${p#./}
            echo "$p"; return
        fi
    done
}
# Each record: file, line, this line's comment text, and that text joined
# with the next comment line of the same file (minus its leading "*"), so a
# section title that wraps onto the next line is still checked. Names are
# taken from the line's own text only.
awk -F '\t' '
    function out(x) { sub(/^[ \t]*\*+[ \t]*/, "", x); print pf "\t" pl "\t" pt "\t" pt " " x }
    { if (NR > 1) out(pf == $1 ? $3 : "")
      pf = $1; pl = $2; pt = $3 }
    END { if (NR) out("") }' \
    "${TMPDIR:-/tmp}/qb_citations.$$" >"${TMPDIR:-/tmp}/qb_citations2.$$"
rm -f "${TMPDIR:-/tmp}/qb_citations.$$"
while IFS='	' read -r f l own t; do
    case "$own" in *.md*) ;; *) continue ;; esac
    for name in $(printf '%s\n' "$own" | grep -oE '[A-Za-z0-9_./-]+\.md' | sort -u); do
        p=$(resolve "$f" "$name")
        if [ -z "$p" ]; then
            echo "${f#./}:$l: cites $name, which is not in the repository"
            status=1
            continue
        fi
        # Quoted section titles right after the name: name "A", "B" / name, "A".
        # A title matches a heading that starts with it (the heading may go on
        # with a parenthesis or a colon).
        printf '%s\n' "$t" | tr -s ' ' | grep -oE "$(printf '%s' "$name" | sed 's/[.]/[.]/g')"',? *("[^"]+"(,? *(and )?"[^"]+")*)' |
            grep -oE '"[^"]+"' | tr -d '"' | while IFS= read -r sec; do
            re=$(printf '%s' "$sec" | sed 's/[][().*+?^$|\\/{}]/\\&/g')
            if ! grep -qE "^#+ +$re *([(:].*)?$" "$p"; then
                echo "${f#./}:$l: cites section \"$sec\" of $p, which has no such heading"
                exit 1
            fi
        done || status=1
    done
done <"${TMPDIR:-/tmp}/qb_citations2.$$"
rm -f "${TMPDIR:-/tmp}/qb_citations2.$$"
[ "$status" -eq 0 ] && echo "check_citations: every cited document and section exists"
exit "$status"
