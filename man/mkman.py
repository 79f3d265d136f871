#!/usr/bin/env python3
"""The API's manual pages, made from include/rlock.h and man/*.3.in.

The header is the one description of the API: every public function is
declared there with RLOCK_EXTERN under a comment that says what it does.
Each template man/NAME.3.in is a page of section 3 written in man(7)
roff, with directives (lines that begin with '@') that this script fills
from the header, so that what a page says about a call cannot differ from
what the header says:

  @name TEXT        the NAME section: the page's functions (those its
                    @synopsis lists), then TEXT
  @synopsis IDS     the SYNOPSIS: #include <rlock.h>, how to compile and
                    link, and each listed type and prototype as the header
                    writes it (structs without their comments)
  @doc IDS          the header's comment above each listed function, type
                    or macro (a comment shared by several is written once)
  @top WORD         the paragraph of the header's opening comment that
                    begins with WORD
  @fields STRUCT    the struct's fields, each with its comment
  @struct STRUCT    the struct as the header writes it, comments included
  @errors IDS [+ CODES]
                    the codes the comments of IDS name (and CODES), each
                    with its meaning from the header's table of codes
  @codes            every code: name, number, rlock_strerror's text and
                    meaning (RLOCK_ERRNO_MAP and the table below it)
  @index            every page and the functions it covers
  @example ... @end the lines between, a C program, set as written; the
                    check compiles it against the header

Every page gets a .TH line; every function a page covers other than the
page's own name gets a one-line page ".so man3/PAGE.3", so that
`man rlock_unlock` finds rlock_trylock(3).

    mkman.py --header rlock.h --list TEMPLATE_DIR
        prints the names of the files --outdir writes (pages and links)
    mkman.py --list-templates TEMPLATE_DIR
        prints the templates' names
    mkman.py --header rlock.h --templates TEMPLATE_DIR --outdir DIR
             [--version V]
        writes them
    mkman.py --header rlock.h --templates TEMPLATE_DIR --check [--built DIR
             [--configured FILE...]]
        checks, printing "PASS: rule" or "FAIL: rule" per rule (offenders
        on stderr) and exiting 1 on any failure: every public function
        has one page; every name a template uses (directive or text) is
        one of the header's and every page it names exists; each page
        carries the comment of each of its functions; every example
        compiles against the header; and, with --built, the built pages
        are those the templates make (and those the build was configured
        to install, which --configured lists), their SYNOPSIS prototypes
        are the header's, and groff (and mandoc and man, when installed)
        format each page and link with no warning.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

# ---------------------------------------------------------------- header


class Item:
    """A top-level piece of the header: 'comment', 'pp' (a preprocessor
    line, continuations joined) or 'decl' (through its ';')."""

    def __init__(self, kind, text, line):
        self.kind, self.text, self.line = kind, text, line
        self.name = None     # the declared identifier, if any
        self.what = None     # 'function', 'typedef', 'struct', 'macro'
        self.doc = None      # the comment Item that documents it


def _skip_comment(s, i):
    j = s.find("*/", i + 2)
    if j < 0:
        raise ValueError("unterminated comment")
    return j + 2


def tokenize(src):
    items = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
            continue
        line = src.count("\n", 0, i) + 1
        if src.startswith("/*", i):
            j = _skip_comment(src, i)
            items.append(Item("comment", src[i:j], line))
            i = j
            continue
        if c == "#":
            j = i
            while True:
                k = src.find("\n", j)
                k = n if k < 0 else k
                if src[j:k].rstrip().endswith("\\"):
                    j = k + 1
                    continue
                break
            items.append(Item("pp", src[i:k], line))
            i = k
            continue
        if src.startswith('extern "C" {', i) or c == "}":
            k = src.find("\n", i)
            i = n if k < 0 else k
            continue
        # A declaration: to the ';' outside braces, comments skipped.
        j, depth = i, 0
        while j < n:
            if src.startswith("/*", j):
                j = _skip_comment(src, j)
                continue
            ch = src[j]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == ";" and depth == 0:
                break
            elif ch == "\n" and depth == 0 and \
                    src[j:].lstrip().startswith("#"):
                j -= 1   # a macro's use, without ';', ends at its line
                break
            j += 1
        items.append(Item("decl", src[i:j + 1], line))
        i = j + 1
    return items


FUNC = re.compile(r"RLOCK_EXTERN\b[^(]*?\b(\w+)\s*\(", re.S)
FUNCPTR = re.compile(r"typedef[^(]*\(\s*\*\s*(\w+)\s*\)")
TYPEDEF = re.compile(r"typedef\b.*?(\w+)\s*;\s*$", re.S)
DEFINE = re.compile(r"#\s*define\s+(\w+)")


class Header:
    def __init__(self, path):
        self.path = path
        self.src = open(path, encoding="utf-8").read()
        self.items = tokenize(self.src)
        self.names = {}          # identifier -> Item
        self.functions = []      # in the header's order
        for it in self.items:
            if it.kind == "decl":
                m = FUNC.match(it.text)
                if m:
                    it.name, it.what = m.group(1), "function"
                    self.functions.append(it.name)
                elif FUNCPTR.match(it.text):
                    it.name, it.what = FUNCPTR.match(it.text).group(1), "typedef"
                elif it.text.startswith("typedef"):
                    it.name = TYPEDEF.search(it.text).group(1)
                    it.what = "struct" if "{" in it.text else "typedef"
                elif it.text.startswith("struct"):
                    it.name = re.match(r"struct\s+(\w+)", it.text).group(1)
                    it.what = "typedef"
            elif it.kind == "pp":
                m = DEFINE.match(it.text)
                if m:
                    it.name, it.what = m.group(1), "macro"
            if it.name:
                self.names[it.name] = it
        # A name's comment is the nearest one above it; a struct between
        # them (whose comment is its own) cuts it off.
        last = None
        for it in self.items:
            if it.kind == "comment":
                last = it
            elif it.name:
                it.doc = last
                if it.what == "struct":
                    last = None
        self.top = self.items[0] if self.items[0].kind == "comment" else None
        self._codes()

    def _codes(self):
        """The table: [(NAME, number, text)], and NAME -> meaning."""
        m = self.names.get("RLOCK_ERRNO_MAP")
        body = m.text.replace("\\\n", " ") if m else ""
        body = re.sub(r'"\s+"', "", body)  # "a " "b" is one string
        self.codes = [(n, int(c), t) for n, c, t in
                      re.findall(r'XX\((\w+),\s*(-?\d+),\s*"((?:[^"\\]|\\.)*)"\)',
                                 body)]
        for n, _, _ in self.codes:
            self.names["RLOCK_" + n] = m
        self.meaning = {}
        for it in self.items:
            if it.kind == "comment" and "What each code means" in it.text:
                cur = None
                for ln in comment_lines(it.text):
                    mm = re.match(r"(RLOCK_E[A-Z]+)\s+(.*)", ln.strip())
                    if mm and ln.startswith("RLOCK_"):
                        cur = mm.group(1)
                        self.meaning[cur] = mm.group(2)
                    elif cur and ln.strip():
                        self.meaning[cur] += " " + ln.strip()

    def struct_fields(self, name):
        """[(field names, comment lines)] of a struct, in order: a field's
        comment is the one above it, or the one that follows it on its
        line; fields that share one are listed together."""
        it = self.names[name]
        body = it.text[it.text.index("{") + 1:it.text.rindex("}")]
        groups = []          # [names, comment lines or None, above]
        pending, end = None, 0
        for t in re.finditer(r"/\*.*?\*/|[^;/]+;", body, re.S):
            s = t.group(0)
            if s.startswith("/*"):
                if groups and "\n" not in body[end:t.start()] \
                        and groups[-1][1] is None:
                    groups[-1][1] = comment_lines(s)   # on the field's line
                else:
                    pending = comment_lines(s)
                continue
            fname = re.search(r"(\w+)\s*(\[[^\]]*\])?\s*;$", s.strip()).group(1)
            if pending is not None:
                groups.append([[fname], pending, True])
                pending = None
            elif groups and groups[-1][2]:
                groups[-1][0].append(fname)            # shares the one above
            else:
                groups.append([[fname], None, False])
            end = t.end()
        return [(g[0], g[1] or []) for g in groups]


def comment_lines(text):
    """A comment's lines without /*, */ and the leading ' * '."""
    s = text[2:-2]
    lines = s.split("\n")
    out = []
    for ln in lines:
        ln = re.sub(r"^\s*\* ?", "", ln) if re.match(r"^\s*\*", ln) else ln
        out.append(ln.rstrip())
    if out and out[0].strip() == "":
        out = out[1:]
    elif out:
        out[0] = out[0].lstrip()
    while out and out[-1].strip() == "":
        out.pop()
    if not any(re.match(r"^\s*\*", ln) for ln in lines[1:]):
        # A comment written beside a declaration, its lines aligned under
        # its first: one paragraph.
        out = [ln.strip() for ln in out]
    return out


def unexport(decl):
    """A prototype as a caller sees it: without RLOCK_EXTERN, the lines
    that continue it moved left by as much, to stay under its '('."""
    if not decl.startswith("RLOCK_EXTERN "):
        return decl
    cut = len("RLOCK_EXTERN ")
    lines = decl[cut:].split("\n")
    return "\n".join(lines[:1] + [ln[cut:] if ln[:cut].strip() == "" else ln
                                  for ln in lines[1:]])


def strip_comments(decl):
    """A declaration as the header writes it, without its comments: a line
    left blank by a removed comment goes, a line shortened loses its
    trailing space."""
    out = []
    for ln in re.sub(r"/\*.*?\*/", "\x00", decl, flags=re.S).split("\n"):
        if "\x00" in ln:
            ln = ln.replace("\x00", "").rstrip()
            if not ln.strip():
                continue
        out.append(ln)
    return "\n".join(out)


# ---------------------------------------------------------------- roff


def esc(s):
    s = s.replace("\\", "\\e")
    s = re.sub(r"(?<![\w-])-(?=[\d\w.])", r"\\-", s)  # minus signs, options
    return s


def line_start(s):
    return "\\&" + s if s.startswith((".", "'")) else s


class Roff:
    def __init__(self, header):
        self.h = header
        self.fnames = set(header.functions)

    def words(self, s):
        """Running text: escaped, functions and RLOCK_ names in bold."""
        s = esc(s)

        def bold(m):
            w = m.group(0)
            if w in self.fnames or (w.startswith("RLOCK_") and w in self.h.names):
                return "\\fB%s\\fR" % w
            return w
        return re.sub(r"\b(?:rlock|RLOCK)_\w+", bold, s)

    def prose(self, lines, sep=".PP"):
        """Comment lines as paragraphs: a blank line starts one, a line
        indented deeper than the paragraph's first is kept as written."""
        out, para = [], []

        def flush():
            if not para:
                return
            base = len(para[0]) - len(para[0].lstrip())
            pre = False
            for ln in para:
                deeper = len(ln) - len(ln.lstrip()) > base
                if deeper and not pre:
                    # .in, not .RS: it keeps to a .TP's indent.
                    out.extend([".in +2n", ".nf"])
                    pre = True
                elif not deeper and pre:
                    out.extend([".fi", ".in"])
                    pre = False
                out.append(line_start(self.words(ln.strip() if not pre else
                                                 ln[base:].rstrip())))
            if pre:
                out.extend([".fi", ".in"])
            para.clear()

        for ln in lines:
            if ln.strip():
                para.append(ln)
            else:
                flush()
                out.append(sep)
        flush()
        return out

    def verbatim(self, text):
        out = [".nf"]
        for ln in text.split("\n"):
            out.append(line_start(esc(ln)) if ln.strip() else "")
        out.append(".fi")
        return [ln if ln else ".sp" for ln in out]


# ---------------------------------------------------------------- pages


class Page:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)[:-len(".3.in")]
        self.lines = open(path, encoding="utf-8").read().split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.synopsis = []
        self.summary = ""
        self.examples = []   # (first line, code)
        code = None
        for i, ln in enumerate(self.lines, 1):
            if code is not None:
                if ln == "@end":
                    self.examples.append((first, "\n".join(code) + "\n"))
                    code = None
                else:
                    code.append(ln)
                continue
            if ln == "@example":
                code, first = [], i + 1
            if ln.startswith("@synopsis "):
                self.synopsis += ln.split()[1:]
            elif ln.startswith("@name "):
                self.summary = ln[len("@name "):].strip()

    def functions(self, header):
        return [n for n in self.synopsis if n in header.functions]


def load_pages(tdir):
    return [Page(os.path.join(tdir, f)) for f in sorted(os.listdir(tdir))
            if f.endswith(".3.in")]


def outputs(pages, header):
    """{file name: page name} of every page and link."""
    out = {}
    for p in pages:
        out[p.name + ".3"] = p.name
        for f in p.functions(header):
            if f != p.name:
                out[f + ".3"] = p.name
    return out


def render(page, header, pages, version, date):
    r = Roff(header)
    out = [".\\\" Made by man/mkman.py from man/%s.3.in and include/rlock.h:"
           % page.name,
           ".\\\" edit those, not this file.",
           '.TH %s 3 "%s" "rlock %s" "rlock Library Functions"'
           % (page.name.upper().replace("_", "\\_"), date, version)]
    done = set()   # comments already written on this page
    in_example = False
    for i, ln in enumerate(page.lines, 1):
        if in_example:
            if ln == "@end":
                in_example = False
                out += [".fi", ".in"]
            else:
                out.append(line_start(esc(ln)) if ln.strip() else ".sp")
            continue
        if ln == "@example":
            in_example = True
            out += [".PP", ".in +4n", ".nf"]
            continue
        if ln.startswith(("@synopsis", "@doc", "@fields", "@struct",
                          "@errors")):
            for n in ln.partition("+")[0].split()[1:]:
                if n not in header.names:
                    sys.exit("%s:%d: %s is not declared in %s (mkman.py "
                             "--check says what else is amiss)"
                             % (page.path, i, n, header.path))
        if ln.startswith(".\\\"") and not out[3:]:
            continue   # the template's own comment lines
        if not ln.startswith("@"):
            out.append(ln)
            continue
        d, _, arg = ln.partition(" ")
        args = arg.split()
        if d == "@name":
            out += [".SH NAME",
                    ", ".join(f for f in page.functions(header)
                              or [page.name]) + " \\- " + arg]
        elif d == "@synopsis":
            if not any(x.startswith(".SH SYNOPSIS") for x in out):
                out += [".SH SYNOPSIS", ".nf", ".B #include <rlock.h>", ".fi",
                        ".PP", "Compile and link with",
                        ".IR \"pkg\\-config \\-\\-cflags \\-\\-libs rlock\" .",
                        ".PP"]
            for n in args:
                it = header.names[n]
                text = strip_comments(it.text) if it.what == "struct" else it.text
                out += r.verbatim(unexport(text))
                out.append(".PP")
        elif d == "@doc":
            for n in args:
                c = header.names[n].doc
                if c is None or id(c) in done:
                    continue
                done.add(id(c))
                lines = comment_lines(c.text)
                # A comment that opens with a heading of its own ("Several
                # locks at once.") goes on to name its functions itself.
                heading = len(lines) > 1 and lines[1] == "" and \
                    len(lines[0]) < 40
                if header.names[n].what == "function" and not heading:
                    fns = [f for f in header.functions if header.names[f].doc is c]
                    lines[0] = ", ".join(f + "()" for f in fns) + ": " + lines[0]
                # Under a tag of the template's (.TP and its line), the
                # comment is the tag's paragraph.
                tagged = len(out) > 1 and out[-2] == ".TP"
                out += ([] if tagged else [".PP"]) + \
                    r.prose(lines, ".IP" if tagged else ".PP")
        elif d == "@top":
            paras = "\n".join(comment_lines(header.top.text)).split("\n\n")
            for p in paras:
                if p.startswith(arg):
                    out += [".PP"] + r.prose(p.split("\n"))
        elif d == "@fields":
            for names, lines in header.struct_fields(args[0]):
                out += [".TP", ".B " + ", ".join(names)]
                out += r.prose(lines, ".IP") if lines else [
                    "(No comment in the header.)"]
        elif d == "@struct":
            out += r.verbatim(header.names[args[0]].text)
        elif d == "@errors":
            ids, _, extra = arg.partition("+")
            named = set(extra.split())
            for n in ids.split():
                c = header.names[n].doc
                named |= set(re.findall(r"RLOCK_(E[A-Z]+)", c.text if c else ""))
            for code, num, _ in header.codes:
                if code in named:
                    out += [".TP", ".B RLOCK_" + code,
                            line_start(r.words(header.meaning.get(
                                "RLOCK_" + code, "")))]
        elif d == "@codes":
            for code, num, text in header.codes:
                out += [".TP", ".BR RLOCK_%s \" (%s)\"" % (code, esc(str(num))),
                        line_start(r.words(header.meaning.get("RLOCK_" + code, ""))),
                        "rlock_strerror: \\(lq%s\\(rq." % esc(text)]
        elif d == "@index":
            for p in pages:
                if p.name == page.name:
                    continue
                out += [".TP", ".BR %s (3)" % p.name,
                        r.words(p.summary) + ":",
                        r.words(", ".join(p.functions(header)) or p.name) + "."]
        else:
            raise ValueError("%s: unknown directive %s" % (page.path, d))
    # A .PP right before a heading or at the end is noise (and a warning
    # for some formatters).
    clean = []
    for ln in out:
        if ln.startswith((".SH", ".SS", ".TP", ".PP", ".IP")) and clean and \
                clean[-1] in (".PP", ".IP"):
            clean.pop()
        if ln in (".PP", ".IP") and clean and \
                clean[-1].startswith((".SH", ".SS")):
            continue   # a heading starts a paragraph already
        clean.append(ln)
    while clean[-1] in (".PP", ".IP"):
        clean.pop()
    # Text lines of at most 80 bytes (the roff sources' convention; the
    # formatter fills them anyway), except where .nf keeps lines as they
    # are.
    wrapped, nofill = [], False
    for ln in clean:
        if ln.startswith(".nf"):
            nofill = True
        elif ln.startswith(".fi"):
            nofill = False
        if nofill or ln.startswith((".", "'")) or len(ln) <= 80:
            wrapped.append(ln)
            continue
        for part in textwrap.wrap(ln, 80, break_long_words=False,
                                  break_on_hyphens=False):
            wrapped.append(line_start(part))
    return "\n".join(wrapped) + "\n"


def write(args):
    header = Header(args.header)
    pages = load_pages(args.templates)
    # The date the pages' sources last changed: SOURCE_DATE_EPOCH when the
    # build sets it (reproducible builds), else the newest of the header's
    # and the templates' times.
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if not epoch:
        epoch = max(os.path.getmtime(f) for f in
                    [args.header] + [p.path for p in pages])
    date = time.strftime("%Y-%m-%d", time.gmtime(int(float(epoch))))
    by = {p.name: p for p in pages}
    for fname, pname in outputs(pages, header).items():
        if fname == pname + ".3":
            text = render(by[pname], header, pages, args.version, date)
        else:
            text = ".so man3/%s.3\n" % pname
        path = os.path.join(args.outdir, fname)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)


# ---------------------------------------------------------------- checks


def unroff(s):
    s = re.sub(r"\\f[BIRP]", "", s)
    s = s.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")
    return s


def synopsis_of(text):
    m = re.search(r"^\.SH SYNOPSIS\n(.*?)^\.SH ", text, re.S | re.M)
    if not m:
        return ""
    lines = [unroff(ln) for ln in m.group(1).split("\n")
             if not ln.startswith(".")]
    return " ".join(" ".join(lines).split())


def check(args):
    header = Header(args.header)
    pages = load_pages(args.templates)
    status = 0

    def report(rule, bad):
        nonlocal status
        for b in bad:
            print("  " + b, file=sys.stderr)
        print(("FAIL: " if bad else "PASS: ") + rule, flush=True)
        status |= bool(bad)

    bad = []
    if not header.functions:
        bad.append("%s: no RLOCK_EXTERN function found" % args.header)
    if not header.codes:
        bad.append("%s: no RLOCK_ERRNO_MAP entries found" % args.header)
    for code, _, _ in header.codes:
        if "RLOCK_" + code not in header.meaning:
            bad.append("RLOCK_%s: not in the header's table of meanings" % code)
    report("the header parses (functions, codes and their meanings)", bad)

    covered = {}
    for p in pages:
        for f in p.functions(header):
            covered.setdefault(f, []).append(p.name)
    bad = ["%s: no page lists it in @synopsis" % f
           for f in header.functions if f not in covered]
    bad += ["%s: on more than one page (%s)" % (f, ", ".join(ps))
            for f, ps in covered.items() if len(ps) > 1]
    report("every public function of rlock.h has one page", bad)

    bad = []
    known_pages = set(outputs(pages, header)) | {"rlock.1"}
    for p in pages:
        in_example = False
        for i, ln in enumerate(p.lines, 1):
            where = "%s:%d" % (os.path.relpath(p.path), i)
            if ln in ("@example", "@end"):
                in_example = ln == "@example"
                continue
            if in_example:
                continue   # the compiler checks examples
            if ln.startswith("@"):
                d, _, arg = ln.partition(" ")
                ids = arg.replace("+", " ").split()
                if d in ("@synopsis", "@doc", "@fields", "@struct"):
                    for n in ids:
                        if n not in header.names:
                            bad.append("%s: %s names %s, which rlock.h does "
                                       "not declare" % (where, d, n))
                elif d == "@errors":
                    names, _, extra = arg.partition("+")
                    for n in names.split():
                        if n not in header.names:
                            bad.append("%s: @errors names %s, which rlock.h "
                                       "does not declare" % (where, n))
                    for c in extra.split():
                        if "RLOCK_" + c not in header.names:
                            bad.append("%s: no code RLOCK_%s" % (where, c))
                continue
            if ln.startswith(".\\\""):
                continue
            text = unroff(ln)
            for w in sorted(set(re.findall(r"\b(?:rlock|RLOCK)_\w+(?!\w|\*)",
                                           text))):
                if w not in header.names and w + ".3" not in known_pages:
                    bad.append("%s: %s is not a name of rlock.h" % (where, w))
            for ref, sec in sorted(set(re.findall(
                    r"\b(rlock\w*)\s*\((\d)\)", text))):
                if "%s.%s" % (ref, sec) not in known_pages:
                    bad.append("%s: %s(%s) is not a page" % (where, ref, sec))
    report("every name a page uses is one of rlock.h's, every page named "
           "exists", bad)

    bad = []
    for p in pages:
        docs = set()
        for ln in p.lines:
            if ln.startswith("@doc "):
                for n in ln.split()[1:]:
                    if n in header.names and header.names[n].doc:
                        docs.add(id(header.names[n].doc))
        for f in p.functions(header):
            d = header.names[f].doc
            if d is not None and id(d) not in docs:
                bad.append("%s: the page does not carry %s's comment "
                           "(rlock.h:%d); add @doc %s" % (p.name, f, d.line, f))
            if d is None:
                bad.append("%s: %s has no comment in rlock.h" % (p.name, f))
    report("each page carries the header's comment of each of its "
           "functions", bad)

    bad = []
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    nex = 0
    for p in pages:
        for first, code in p.examples:
            nex += 1
            if not cc:
                continue
            with tempfile.TemporaryDirectory(prefix="rlock-man-") as tmp:
                src = os.path.join(tmp, "example.c")
                open(src, "w").write(code)
                r = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra",
                                    "-Werror", "-fsyntax-only", "-I",
                                    os.path.dirname(os.path.abspath(
                                        args.header)), src],
                                   capture_output=True, text=True)
                if r.returncode or r.stderr.strip():
                    bad.append("%s:%d: the example does not compile "
                               "against rlock.h:" % (os.path.relpath(p.path),
                                                     first))
                    bad += ["    " + x.replace(src, "example.c")
                            for x in r.stderr.strip().split("\n")]
    if not cc and nex:
        bad.append("no C compiler (cc) to compile the examples with")
    report("every example compiles against rlock.h (-Wall -Wextra -Werror)",
           bad)

    if not args.built:
        return status

    want = outputs(pages, header)
    bad = []
    for f in sorted(want):
        if not os.path.exists(os.path.join(args.built, f)):
            bad.append("%s: not built (a new template? reconfigure)" % f)
    have = {f for f in os.listdir(args.built) if re.match(r"\w+\.3$", f)}
    bad += ["%s: built, but no template makes it (reconfigure)" % f
            for f in sorted(have - set(want))]
    if args.configured is not None:
        conf = set(args.configured)
        bad += ["%s: made, but not in the build's list of pages to install "
                "(meson setup --reconfigure)" % f for f in sorted(set(want) - conf)]
        bad += ["%s: in the build's list of pages to install, but not made "
                "(meson setup --reconfigure)" % f for f in sorted(conf - set(want))]
    report("the built pages and links are those the templates make", bad)

    bad = []
    for f, pname in sorted(want.items()):
        path = os.path.join(args.built, f)
        if not os.path.exists(path):
            continue
        text = open(path, encoding="utf-8").read()
        if f != pname + ".3":
            if text != ".so man3/%s.3\n" % pname:
                bad.append("%s: not a link to %s.3" % (f, pname))
            continue
        syn = synopsis_of(text)
        for fn in [x for x in header.functions if want.get(x + ".3") == pname]:
            proto = " ".join(unexport(header.names[fn].text).split())
            if proto not in syn:
                bad.append("%s: SYNOPSIS lacks rlock.h's prototype of %s: %s"
                           % (f, fn, proto))
        for fn in re.findall(r"\b(rlock_\w+)\s*\(", syn):
            if fn not in header.functions:
                bad.append("%s: SYNOPSIS declares %s, which rlock.h does not"
                           % (f, fn))
    report("each page's SYNOPSIS has its functions' prototypes, as rlock.h "
           "has them", bad)

    bad = []
    groff = shutil.which("groff")
    if not groff:
        bad.append("groff is not installed (scripts/deps installs groff-base)")
    for f, pname in sorted(want.items()):
        path = os.path.join(args.built, f)
        if f != pname + ".3" or not os.path.exists(path) or not groff:
            continue
        r = subprocess.run([groff, "-man", "-ww", "-z", path],
                           capture_output=True, text=True)
        for ln in (r.stderr.strip().split("\n") if r.stderr.strip() else []):
            bad.append("groff: " + ln)
        if r.returncode:
            bad.append("groff: %s: exit %d" % (f, r.returncode))
    report("groff -man -ww formats every page without a warning", bad)

    mandoc = shutil.which("mandoc")
    if mandoc:
        bad = []
        for f, pname in sorted(want.items()):
            path = os.path.join(args.built, f)
            if f != pname + ".3" or not os.path.exists(path):
                continue
            r = subprocess.run([mandoc, "-T", "lint", "-W", "warning", path],
                               capture_output=True, text=True)
            out = (r.stdout + r.stderr).strip()
            if out:
                bad += ["mandoc: " + x for x in out.split("\n")]
        report("mandoc -T lint finds no warning in any page", bad)
    else:
        print("SKIP: mandoc -T lint (mandoc is not installed)")

    man = shutil.which("man")
    if man:
        bad = []
        env = dict(os.environ, MANWIDTH="80")
        # As installed: a link's ".so man3/PAGE.3" is read from the folder
        # above man3/, so the pages are read from a copy in a man3/.
        tmp = tempfile.mkdtemp(prefix="rlock-man-")
        os.mkdir(os.path.join(tmp, "man3"))
        for f in want:
            if os.path.exists(os.path.join(args.built, f)):
                shutil.copy(os.path.join(args.built, f),
                            os.path.join(tmp, "man3", f))
        for f in sorted(want):
            path = os.path.join("man3", f)
            if not os.path.exists(os.path.join(tmp, path)):
                continue
            r = subprocess.run([man, "--warnings", "-l", "-E", "UTF-8",
                                "-Tutf8", path],
                               capture_output=True, text=True, env=env,
                               cwd=tmp)
            if r.stderr.strip():
                bad += ["man: %s: %s" % (f, ln) for ln in
                        r.stderr.strip().split("\n")]
            if r.returncode or want[f] + ".3" == f and not r.stdout.strip():
                bad.append("man: %s: exit %d, %d bytes" %
                           (f, r.returncode, len(r.stdout)))
        shutil.rmtree(tmp)
        report("man --warnings -l renders every page and link without a "
               "warning", bad)
    else:
        print("SKIP: man --warnings (man is not installed)")
    return status


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", metavar="TEMPLATE_DIR")
    ap.add_argument("--list-templates", metavar="TEMPLATE_DIR")
    ap.add_argument("--header")
    ap.add_argument("--templates")
    ap.add_argument("--outdir")
    ap.add_argument("--version", default="")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--built")
    ap.add_argument("--configured", nargs="*")
    args = ap.parse_args()
    if args.list_templates:
        print("\n".join(os.path.basename(p.path)
                        for p in load_pages(args.list_templates)))
        return 0
    if args.list:
        print("\n".join(sorted(outputs(load_pages(args.list),
                                        Header(args.header)))))
        return 0
    if args.check:
        return check(args)
    write(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
