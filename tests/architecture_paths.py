#!/usr/bin/env python3
"""The map stays true: every path docs/ARCHITECTURE.md names exists.

Checks two things in the document (or the ones given):
  - every `folder/file` token that starts at one of the repository's top folders
    (server/rpc/raw_rpc.h, deploy/pki/, docs/*.md, server/core/job_manager.h/.cc): the file,
    the folder, or for a glob at least one match;
  - every file named in the first column of a "### folder/ — ..." (or "####") section's
    table (benchd.h/.cc, "test_pki.h, test_secure_benchd.h"), under that folder.
and that every table row is whole and in its table: a line that starts with "|" ends with
"|" (a row is one line) and follows a row or opens a table (its next line is "|---").
Prints one line per missing path, "DOC:LINE: NAME does not exist", or per broken row,
"DOC:LINE: ...", and exits 1; exit 0 with a count when all exist. ctest:
house.architecture_paths.

Usage: tests/architecture_paths.py [ROOT [DOC...]]   (ROOT default: this repository;
DOC default: docs/ARCHITECTURE.md)
"""
import glob
import os
import re
import sys

TOP = ("server", "httpd", "worker", "ctl", "common", "report", "web", "tests", "deploy",
       "docs", "proto", "cmake", ".ci")
TOKEN = re.compile(r"(?<![\w/.:~$-])((?:%s)/[A-Za-z0-9_.*{}/-]*)" %
                   "|".join(re.escape(t) for t in TOP))
SECTION = re.compile(r"^#{3,4} ([A-Za-z0-9_./-]+/)(?: |$)")


def expand(name):
    """'x.h/.cc' -> ['x.h', 'x.cc']; 'x.h' -> ['x.h']."""
    m = re.fullmatch(r"(.*)\.([a-z]+)/\.([a-z]+)", name)
    if m:
        return [f"{m.group(1)}.{m.group(2)}", f"{m.group(1)}.{m.group(3)}"]
    return [name]


def exists(root, path):
    full = os.path.join(root, path)
    if any(c in path for c in "*{"):
        return bool(glob.glob(re.sub(r"\{[^}]*\}", "*", full)))
    return os.path.exists(full)


def check(root, doc):
    missing, checked = [], 0
    folder = None
    text = open(os.path.join(root, doc), encoding="utf-8").read().split("\n")
    for n, line in enumerate(text, 1):
        if line.startswith("|"):
            if not line.rstrip().endswith("|"):
                missing.append(f"{doc}:{n}: a table row that does not end with '|' "
                               "(a row is one line)")
            opens = n < len(text) and text[n].startswith("|---")
            if not opens and not (n > 1 and text[n - 2].startswith("|")):
                missing.append(f"{doc}:{n}: a table row outside a table (after a line "
                               "that is not a row)")
        heading = SECTION.match(line)
        if heading:
            folder = heading.group(1)
        elif line.startswith("#"):
            folder = None
        for token in TOKEN.findall(line):
            token = token.rstrip(".,;:")
            for path in expand(token):
                checked += 1
                if not exists(root, path):
                    missing.append(f"{doc}:{n}: {path} does not exist")
        cells = line.split("|")
        if folder and len(cells) > 2 and line.startswith("| ") and not line.startswith("|---"):
            first = cells[1].strip()
            if first in ("file", "folder", "rule"):
                continue
            for name in (c.strip() for c in first.split(",")):
                if (name.endswith("/") or "/" in name.replace("/.", "")
                        or not re.fullmatch(r"[A-Za-z0-9_.*/-]+", name)):
                    continue  # a folder or path token, checked above, or not a file name
                for path in expand(name):
                    checked += 1
                    if not exists(root, folder + path):
                        missing.append(f"{doc}:{n}: {folder}{path} does not exist")
    return missing, checked


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    docs = sys.argv[2:] or ["docs/ARCHITECTURE.md"]
    missing, checked = [], 0
    for doc in docs:
        if not os.path.isfile(os.path.join(root, doc)):
            print(f"architecture_paths: no {doc} under {root}", file=sys.stderr)
            return 2
        m, c = check(root, doc)
        missing += m
        checked += c
    for line in missing:
        print(line)
    if missing:
        print(f"architecture_paths: {len(missing)} problems ({checked} named paths checked)")
        return 1
    print(f"architecture_paths: OK: {checked} named paths exist ({', '.join(docs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
