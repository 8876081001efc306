#!/usr/bin/env python3
"""Man pages and shell completion from the `--help` texts, at build time.

    gen_cli_docs.py QUANTBRIDGE VERSION OUT_DIR

One source: the texts `quantbridge --help` and `quantbridge CMD --help`
print. The commands are the ones the main help lists under "commands:", so
a new command gets its page and its completion without touching this file.
Writes
    OUT_DIR/man/man1/quantbridge.1, quantbridge-CMD.1     (roff, man(7))
    OUT_DIR/bash-completion/quantbridge                   (bash)
    OUT_DIR/zsh/_quantbridge                              (zsh, #compdef)
The completion asks the installed binary at completion time for the plugin
names (`quantbridge plugins --json`): readers for --format, writers for
--writer, so a dropped-in plugin completes too.
"""
import os
import re
import subprocess
import sys

QB, VERSION, OUT = sys.argv[1:4]


def help_of(*args):
    p = subprocess.run([QB, *args, "--help"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0 or not p.stdout.strip():
        sys.exit(f"gen_cli_docs: `quantbridge {' '.join(args)} --help` failed ({p.returncode}): {p.stderr}")
    return p.stdout


def commands(main_help):
    """[(name, one-line description)] from the main help's "commands:" block."""
    out, lines, i = [], main_help.splitlines(), 0
    while i < len(lines) and lines[i].strip() != "commands:":
        i += 1
    i += 1
    while i < len(lines) and lines[i].strip():
        m = re.match(r"^  ([a-z][a-z0-9-]*)(.*)$", lines[i])
        if m:
            parts = re.split(r"\s{2,}", m.group(2).strip())
            desc = parts[-1] if len(parts) > 1 else ""
            if not desc and i + 1 < len(lines) and re.match(r"^\s{4,}\S", lines[i + 1]):
                desc = lines[i + 1].strip()
            if m.group(1) != "help":
                out.append((m.group(1), desc))
        i += 1
    if not out:
        sys.exit("gen_cli_docs: no commands found in `quantbridge --help`")
    return out


def options(text):
    found = []
    for o in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])", text):
        if o not in found:
            found.append(o)
    if "--help" not in found:
        found.append("--help")
    return found


def roff(text):
    out = []
    for line in text.rstrip("\n").splitlines():
        line = line.replace("\\", "\\e").replace("-", "\\-")
        if line.startswith(".") or line.startswith("'"):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def man_page(name, desc, text, see_also):
    lines = text.rstrip("\n").splitlines()
    usage = []
    while lines and (lines[0].startswith("usage:") or (usage and lines[0].startswith(" ") and lines[0].strip())):
        usage.append(re.sub(r"^usage: ", "", lines.pop(0)))
    while lines and not lines[0].strip():
        lines.pop(0)
    title = name.upper()
    page = [f'.TH {roff(title)} 1 "" "quantbridge {VERSION}" "User Commands"',
            ".SH NAME", f"{roff(name)} \\- {roff(desc)}"]
    if usage:
        page += [".SH SYNOPSIS", ".nf", roff("\n".join(usage)), ".fi"]
    if lines:
        page += [".SH DESCRIPTION", ".nf", roff("\n".join(lines)), ".fi"]
    page += [".SH SEE ALSO", ",\n".join(f".BR {s} (1)" for s in see_also)]
    return "\n".join(page) + "\n"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


PLUGIN_NAMES = r"""
  "$1" plugins --json 2>/dev/null | awk -v want="$2" '
    /^\t\t\t"name":/ { n = $0; sub(/^[^:]*:[ \t]*"/, "", n); sub(/",?[ \t]*$/, "", n) }
    /^\t\t\t"kind":/ { k = $0; sub(/^[^:]*:[ \t]*"/, "", k); sub(/",?[ \t]*$/, "", k)
                       if (k == want || k == "both") print n }'
"""


def bash_completion(cmds, global_opts, cmd_opts):
    case = "\n".join(f"    {c}) opts=\"{' '.join(cmd_opts[c])}\" ;;" for c, _ in cmds)
    return f"""# bash completion for quantbridge; generated from its --help texts
# (packaging/gen_cli_docs.py). Plugin names come from `quantbridge plugins --json`.
_quantbridge_plugins() {{ # QUANTBRIDGE reader|writer{PLUGIN_NAMES}}}

_quantbridge() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} qb=${{COMP_WORDS[0]}}
  local cmd="" i=1 opts
  COMPREPLY=()
  while [ $i -lt $COMP_CWORD ]; do
    case ${{COMP_WORDS[i]}} in
      --config|--plugin-dir|--threads) i=$((i + 1)) ;;
      -*) ;;
      *) cmd=${{COMP_WORDS[i]}}; break ;;
    esac
    i=$((i + 1))
  done
  case $prev in
    --format) COMPREPLY=($(compgen -W "auto $(_quantbridge_plugins "$qb" reader)" -- "$cur")); return ;;
    --writer) COMPREPLY=($(compgen -W "$(_quantbridge_plugins "$qb" writer)" -- "$cur")); return ;;
  esac
  if [ -z "$cmd" ]; then
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "{' '.join(global_opts)}" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "{' '.join(c for c, _ in cmds)} help" -- "$cur"))
    fi
    return
  fi
  case $cmd in
{case}
    help) COMPREPLY=($(compgen -W "{' '.join(c for c, _ in cmds)}" -- "$cur")); return ;;
    *) return ;;
  esac
  [[ $cur == -* ]] && COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}}
complete -o default -F _quantbridge quantbridge
"""


def zsh_completion(cmds, global_opts, cmd_opts):
    def q(s):
        return s.replace("'", "'\\''").replace(":", "\\:")
    descs = "\n".join(f"    '{q(c)}:{q(d)}'" for c, d in cmds)
    case = "\n".join(f"    {c}) opts=({' '.join(cmd_opts[c])}) ;;" for c, _ in cmds)
    return f"""#compdef quantbridge
# zsh completion for quantbridge; generated from its --help texts
# (packaging/gen_cli_docs.py). Plugin names come from `quantbridge plugins --json`.
_quantbridge_plugins() {{ # QUANTBRIDGE reader|writer{PLUGIN_NAMES}}}

_quantbridge() {{
  local -a cmds opts
  local cmd="" i=2
  cmds=(
{descs}
  )
  while (( i < CURRENT )); do
    case ${{words[i]}} in
      --config|--plugin-dir|--threads) (( i++ )) ;;
      -*) ;;
      *) cmd=${{words[i]}}; break ;;
    esac
    (( i++ ))
  done
  case ${{words[CURRENT-1]}} in
    --format) compadd -- auto ${{(f)"$(_quantbridge_plugins ${{words[1]}} reader)"}}; return ;;
    --writer) compadd -- ${{(f)"$(_quantbridge_plugins ${{words[1]}} writer)"}}; return ;;
  esac
  if [[ -z $cmd ]]; then
    if [[ ${{words[CURRENT]}} == -* ]]; then
      compadd -- {' '.join(global_opts)}
    else
      _describe 'command' cmds
    fi
    return
  fi
  case $cmd in
{case}
    *) opts=() ;;
  esac
  if [[ ${{words[CURRENT]}} == -* ]]; then
    compadd -- $opts
  else
    _files
  fi
}}

_quantbridge "$@"
"""


def main():
    main_help = help_of()
    cmds = commands(main_help)
    helps = {c: help_of(c) for c, _ in cmds}
    cmd_opts = {c: options(helps[c]) for c, _ in cmds}
    global_opts = options(main_help[:main_help.find("commands:")] + main_help[main_help.find("global options:"):])
    names = [f"quantbridge-{c}" for c, _ in cmds]
    write(os.path.join(OUT, "man/man1/quantbridge.1"),
          man_page("quantbridge", "convert quantized LLM checkpoints into the native W4A16 format",
                   main_help, names))
    for c, d in cmds:
        write(os.path.join(OUT, f"man/man1/quantbridge-{c}.1"),
              man_page(f"quantbridge-{c}", d or f"the {c} command", helps[c], ["quantbridge"]))
    write(os.path.join(OUT, "bash-completion/quantbridge"), bash_completion(cmds, global_opts, cmd_opts))
    write(os.path.join(OUT, "zsh/_quantbridge"), zsh_completion(cmds, global_opts, cmd_opts))


main()
