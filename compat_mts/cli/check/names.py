"""Name resolution for `compat-mts check`: what each name of a script stands for (`tf` → `tensorflow.compat.v1`).

Standard library only, as the rest of the checker (`check.py`).
"""

from __future__ import annotations

import ast
from typing import Iterable, Sequence

if __package__:
    from compat_mts.cli.check import catalogue
else:  # `python compat_mts/cli/check FILE...`: the directory of this file is first on sys.path.
    import catalogue as catalogue


# The fields that hold a name, a number or a constant, never a node (Python's grammar, `ast`'s ASDL): `walk` does not
# read them.
_NOT_NODES = frozenset(
    {
        ('Name', 'id'),
        ('Attribute', 'attr'),
        ('Constant', 'value'),
        ('Constant', 'kind'),
        ('FunctionDef', 'name'),
        ('FunctionDef', 'type_comment'),
        ('AsyncFunctionDef', 'name'),
        ('AsyncFunctionDef', 'type_comment'),
        ('ClassDef', 'name'),
        ('Assign', 'type_comment'),
        ('For', 'type_comment'),
        ('AsyncFor', 'type_comment'),
        ('With', 'type_comment'),
        ('AsyncWith', 'type_comment'),
        ('arg', 'arg'),
        ('arg', 'type_comment'),
        ('keyword', 'arg'),
        ('alias', 'name'),
        ('alias', 'asname'),
        ('ImportFrom', 'module'),
        ('ImportFrom', 'level'),
        ('Global', 'names'),
        ('Nonlocal', 'names'),
        ('ExceptHandler', 'name'),
        ('comprehension', 'is_async'),
        ('FormattedValue', 'conversion'),
        ('AnnAssign', 'simple'),
    }
)
_child_fields_cache: dict[type, tuple[str, ...]] = {}


def child_fields(node_class: type) -> tuple[str, ...]:
    """The fields of an `ast` node class that may hold nodes, in `_fields` order."""
    fields = _child_fields_cache.get(node_class)
    if fields is None:
        name = node_class.__name__
        fields = _child_fields_cache[node_class] = tuple(
            field for field in node_class._fields if (name, field) not in _NOT_NODES
        )
    return fields


def walk(tree: ast.AST) -> list[ast.AST]:
    """Every node of `tree`, in `ast.walk`'s order (breadth first), as a list: made faster than
    `list(ast.walk(tree))`, which the passes over a long file's millions of nodes pay for each walk."""
    return [node for level in walk_levels(tree) for node in level]


def walk_levels(tree: ast.AST) -> list[list[ast.AST]]:
    """Every node of `tree` by depth: `walk(tree)` is these lists joined. The nodes of a module are its statements'
    levels joined level by level (`joined_levels`), so a caller that keeps each statement's levels can list a
    module made partly of the same statements without walking those again."""
    levels = []
    level = [tree]
    fields_of = _child_fields_cache.get
    node_type = ast.AST
    while level:
        levels.append(level)
        below: list[ast.AST] = []
        append = below.append
        for node in level:
            fields = fields_of(node.__class__) or child_fields(node.__class__)
            for field in fields:
                value = getattr(node, field, None)
                if value.__class__ is list:
                    for child in value:
                        if isinstance(child, node_type):
                            append(child)
                elif isinstance(value, node_type):
                    append(value)
        level = below
    return levels


def joined_levels(module: ast.Module, levels: Sequence[list[list[ast.AST]]]) -> list[ast.AST]:
    """`walk(module)`, from `walk_levels` of each of its statements (`levels`, in `module.body`'s order): breadth
    first, a level's nodes are each statement's nodes of that depth, statement after statement."""
    nodes: list[ast.AST] = [module]
    extend = nodes.extend
    depth = 0
    reaching = list(levels)
    while reaching:
        for statement_levels in reaching:
            extend(statement_levels[depth])
        depth += 1
        reaching = [statement_levels for statement_levels in reaching if len(statement_levels) > depth]
    return nodes


# The fields that hold statements (or the except handlers and match cases that hold them), by node class.
_STATEMENT_FIELDS = ('body', 'handlers', 'orelse', 'finalbody', 'cases')
_statement_fields_cache: dict[type, tuple[str, ...]] = {}


def statements(tree: ast.AST) -> list[ast.stmt]:
    """Every statement of `tree`, in `walk(tree)`'s order (breadth first, a handler's or a case's statements one
    level deeper than their list suggests), without walking the expressions: a long file's statements are a tenth
    of its nodes, and the only nodes that bind an import or an alias."""
    found: list[ast.stmt] = []
    level: list[ast.AST] = [tree]
    fields_of = _statement_fields_cache.get
    statement_type = ast.stmt
    while level:
        below: list[ast.AST] = []
        extend = below.extend
        for node in level:
            fields = fields_of(node.__class__)
            if fields is None:
                fields = _statement_fields_cache[node.__class__] = tuple(
                    field for field in _STATEMENT_FIELDS if field in node._fields
                )
            for field in fields:
                extend(getattr(node, field))
        found.extend(node for node in below if isinstance(node, statement_type))
        level = below
    return found


def _dotted(node: ast.AST) -> list[str] | None:
    """`a.b.c` as ['a', 'b', 'c']; None for anything but a chain of names."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


class Names:
    """What each name of a script stands for: import aliases (`tf` → `tensorflow.compat.v1`), module aliases
    (`tf1 = tf.compat.v1`), star imports, and whether a bare `tensorflow` is TF 1.x there.

    Scopes are ignored: an alias made anywhere in the file counts everywhere, as it does in practice.
    The imports and aliases are read from the statements (`statements`, kept as `statements` for the callers'
    passes over them). `nodes` is every node of `tree`, in any order (a list, or an iterable that gives them each
    time), when the caller has them: `bare_tensorflow_is_v1` is then a loop over them, not another walk of the tree.
    """

    def __init__(self, tree: ast.Module, nodes: Iterable[ast.AST] | None = None):
        self._paths: dict[int, tuple[ast.AST, str | None]] | None = None  # None while the aliases are bound
        self.aliases: dict[str, str] = {}
        self.star_modules: list[str] = []
        # Only statements bind: the imports and the aliases are read from them, not from every node.
        self.statements = statements(tree)
        for node in self.statements:
            kind = node.__class__
            if kind is ast.Import:
                for alias in node.names:
                    if alias.asname:
                        self._bind(alias.asname, alias.name)
                    else:
                        self._bind(catalogue.root(alias.name), catalogue.root(alias.name))
            elif kind is ast.ImportFrom:
                module = node.module or ''
                if node.level:
                    module = '.' * node.level + module  # a local module: never TensorFlow
                for alias in node.names:
                    if alias.name == '*':
                        self.star_modules.append(module)
                    else:
                        self._bind(alias.asname or alias.name, f'{module}.{alias.name}')
        self.uses_tensorflow = any(
            catalogue.root(path) in ('tensorflow', 'compat_mts')
            for path in (*self.aliases.values(), *self.star_modules)
        )
        self._bind_module_aliases(self.statements)
        # The names are all bound now: each node's path and rule are looked up once, however many passes ask.
        self._paths = {}
        self._tree, self._nodes = tree, nodes
        self._bare_v1: bool | None = None
        self._rules: dict[int, tuple[ast.AST, tuple[str, catalogue.Rule] | None]] = {}

    @property
    def bare_tensorflow_is_v1(self) -> bool:
        """Whether a bare `tensorflow` is TF 1.x in the script: it names a name TF2 moved or removed. Found when
        first asked for (a pass over every node, which a script after `tf_upgrade_v2`'s renames is not asked)."""
        if self._bare_v1 is None:
            self._bare_v1 = self._bare_tensorflow_is_v1(walk(self._tree) if self._nodes is None else self._nodes)
        return self._bare_v1

    def _bind(self, name: str, path: str) -> None:
        # `try: import tensorflow.compat.v1 as tf / except ImportError: import tensorflow as tf`: the v1
        # binding is what the script means.
        if self.aliases.get(name, '').startswith(catalogue.V1_ROOT[:-1]) and catalogue.root(path) == 'tensorflow':
            return
        self.aliases[name] = path

    def _bind_module_aliases(self, statements: Sequence[ast.stmt]) -> None:
        # Only `name = a.dotted.name` may make an alias (`resolve` of anything else is None).
        dotted = (ast.Attribute, ast.Name)
        assignments = sorted(
            (
                node
                for node in statements
                if node.__class__ is ast.Assign
                and len(node.targets) == 1
                and node.targets[0].__class__ is ast.Name
                and node.value.__class__ in dotted
            ),
            key=lambda node: (node.lineno, node.col_offset),
        )
        for node in assignments:
            path = self.resolve(node.value)
            if (
                path
                and catalogue.root(path) in ('tensorflow', 'compat_mts')
                and (catalogue.lookup(path, v1_style=True) is None or catalogue.gone_module(path))
            ):
                self.aliases[node.targets[0].id] = path

    def _bare_tensorflow_is_v1(self, nodes: Iterable[ast.AST]) -> bool:
        # Without star imports, only a name bound to a path in TensorFlow can resolve to one: the others are
        # skipped without resolving them (most names of a script are its own variables).
        only_in_tf1 = frozenset(catalogue.TF1_ONLY_PREFIXES)
        below_only_in_tf1 = tuple(prefix + '.' for prefix in catalogue.TF1_ONLY_PREFIXES)
        heads = None
        if not self.star_modules:
            heads = {name for name, path in self.aliases.items() if path.startswith('tensorflow')}
        attribute, name = ast.Attribute, ast.Name
        for node in nodes:
            kind = node.__class__
            if kind is attribute:
                if heads is not None:
                    root = node.value
                    while root.__class__ is attribute:
                        root = root.value
                    if root.__class__ is not name or root.id not in heads:
                        continue
            elif kind is not name or (heads is not None and node.id not in heads):
                continue
            path = self.resolve(node)
            if path and path.startswith('tensorflow.') and not path.startswith('tensorflow.compat.'):
                relative = path[len('tensorflow.') :]
                if (
                    (relative in catalogue.V1_RULES and relative not in catalogue.ALSO_IN_TF2)
                    or relative in only_in_tf1
                    or relative.startswith(below_only_in_tf1)
                ):
                    return True
        return False

    def resolve(self, node: ast.AST) -> str | None:
        """The full dotted path `node` names (`tensorflow.compat.v1.train.Saver`), or None."""
        if self._paths is None:
            return self._resolve(node)
        cached = self._paths.get(id(node))
        if cached is None:
            cached = self._paths[id(node)] = (node, self._resolve(node))  # The node is kept: its id is not reused.
        return cached[1]

    def _resolve(self, node: ast.AST) -> str | None:
        parts = _dotted(node)
        if parts is None:
            return None
        head, rest = parts[0], parts[1:]
        if head in self.aliases:
            return '.'.join([self.aliases[head], *rest])
        for module in self.star_modules:
            candidate = '.'.join([module, head, *rest])
            if catalogue.lookup(candidate, v1_style=True) is not None:
                return candidate
        return None

    def rule_for(self, node: ast.AST) -> tuple[str, catalogue.Rule] | None:
        """(canonical construct, rule) when `node` names a catalogued construct."""
        cached = self._rules.get(id(node))
        if cached is not None:
            return cached[1]
        path = self.resolve(node)
        found = catalogue.lookup(path, v1_style=True) if path else None
        # A bare `tensorflow` being TF 1.x only widens what is found (a name TF2 has too): it is asked (a pass over
        # every node) only for a path found in v1 style and not in TF2's.
        if found is not None and self._bare_v1 is not True:
            found = catalogue.lookup(path, v1_style=False) or (found if self.bare_tensorflow_is_v1 else None)
        self._rules[id(node)] = (node, found)  # The node is kept, so its id is not reused meanwhile.
        return found

    def through_gone_module_alias(self, node: ast.AST, rule: catalogue.Rule) -> bool:
        """Whether `node` is a use, through an alias of a module TensorFlow 2.21 no longer has, that the
        finding at that alias (its import or assignment) already covers: the imported name itself, or a name
        that the module's replacement also has (`slim.conv2d` once `import tf_slim as slim`)."""
        parts = _dotted(node)
        bound = self.aliases.get(parts[0]) if parts else None
        gone = catalogue.gone_module(bound) if bound else None
        if gone is None:
            return False
        return len(parts) == 1 or gone == rule.module
