"""Edits of a statement's text at the spans of its `ast` nodes, for the edits that only replace a dotted name.

libcst and `tf_upgrade_v2`'s formatting library (pasta) parse a statement into a tree of their own and print it
back, a few milliseconds per statement; most statements of a long TensorFlow 1.x script need only a name
replaced (`tf.train.AdamOptimizer` -> `tf.compat.v1.train.AdamOptimizer`), which the standard library's parser
finds and a replacement of the name's text makes. A replacement is made only where the name is spelled as one
token run, `tf.train.AdamOptimizer` with nothing between its parts and no parentheses of its own around it:
there those libraries print the new name where the old one stood and keep every other character; elsewhere
(`spliced` gives None) the caller edits the statement with them.
"""

from __future__ import annotations

import ast
import io
import re
from typing import Sequence

from compat_mts.cli.check import names as check_names


def statement_nodes(source: str) -> list[ast.AST] | None:
    """Every node of `ast.parse(source)`, in `ast.walk`'s order (the module first), or None when a name
    replacement cannot be made on `source`'s text: it is not valid Python, or it has a carriage return (its lines
    would not be `ast`'s) or an f-string (whose nodes' columns Python 3.11 does not give exactly)."""
    if '\r' in source:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    nodes = check_names.walk(tree)
    if any(isinstance(node, ast.JoinedStr) for node in nodes):
        return None
    return nodes


def spliced(source: str, replacements: Sequence[tuple[ast.AST, str, str]], nodes: Sequence[ast.AST] = ()) -> str | None:
    """`source` with each `(node, spelled, new)` of `replacements` made: the text of `node` (of
    `statement_nodes(source)`, whose list is `nodes`), which must read `spelled`, becomes `new`. None when one
    does not read `spelled` (spaces, comments or line breaks inside it), has parentheses of its own, or the nodes
    overlap. The parentheses of a one-line call of one argument, or of a class's one base, on its line, are the
    call's or the class's (found among `nodes`), not the argument's."""
    if not replacements:
        return source
    lines = [line.encode('utf-8') for line in io.StringIO(source, newline='').readlines()]  # `ast`'s lines
    enclosed = _enclosed(nodes, lines)
    ordered = sorted(replacements, key=lambda item: (item[0].lineno, item[0].col_offset))
    edited: dict[int, list[tuple[int, int, bytes]]] = {}
    end = (0, -1)
    for node, spelled, new in ordered:
        if node.lineno != node.end_lineno or (node.lineno, node.col_offset) < end:
            return None
        line = lines[node.lineno - 1]
        start, stop = node.col_offset, node.end_col_offset
        if line[start:stop] != spelled.encode('utf-8') or (
            _parenthesized(lines, node.lineno - 1, start, stop) and id(node) not in enclosed
        ):
            return None
        edited.setdefault(node.lineno - 1, []).append((start, stop, new.encode('utf-8')))
        end = (node.lineno, stop)
    for index, spans in edited.items():
        line = lines[index]
        for start, stop, new in reversed(spans):
            line = line[:start] + new + line[stop:]
        lines[index] = line
    return b''.join(lines).decode('utf-8')


def _parenthesized(lines: list[bytes], index: int, start: int, stop: int) -> bool:
    """Whether the text at `start:stop` of line `index` may stand in parentheses of its own: `(` the nearest
    character before it and `)` the nearest after it, over blank space and line breaks."""
    before = lines[index][:start].rstrip()
    row = index
    while not before and row > 0:
        row -= 1
        before = lines[row].rstrip()
    after = lines[index][stop:].lstrip()
    row = index
    while not after and row + 1 < len(lines):
        row += 1
        after = lines[row].lstrip()
    return before.endswith(b'(') and after.startswith(b')')


_CLASS_HEAD = re.compile(rb'[ \t]*class[ \t]+\w+[ \t]*\([ \t]*')
_CLASS_TAIL = re.compile(rb'[ \t]*\)[ \t]*:')


def _enclosed(nodes: Sequence[ast.AST], lines: list[bytes]) -> set[int]:
    """The ids of the nodes that are the one argument of a one-line call (`f(x)`) or the one base of a class on
    one line (`class A(x):`), with nothing but blank space between them and its parentheses."""
    found = set()
    for node in nodes:
        if isinstance(node, ast.Call) and len(node.args) + len(node.keywords) == 1 and node.args:
            argument = node.args[0]
            if isinstance(argument, (ast.Starred, ast.GeneratorExp)) or node.lineno != node.end_lineno:
                continue
            line = lines[node.lineno - 1]
            if (
                line[node.func.end_col_offset : argument.col_offset].strip() == b'('
                and line[argument.end_col_offset : node.end_col_offset].strip() == b')'
                and node.func.end_lineno == node.lineno
            ):
                found.add(id(argument))
        elif isinstance(node, ast.ClassDef) and len(node.bases) == 1 and not node.keywords:
            base = node.bases[0]
            if base.lineno != node.lineno or base.end_lineno != node.lineno:
                continue
            line = lines[node.lineno - 1]
            if _CLASS_HEAD.fullmatch(line[: base.col_offset]) and _CLASS_TAIL.match(line, base.end_col_offset):
                found.add(id(base))
    return found
