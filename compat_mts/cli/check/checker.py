"""The checker of `compat-mts check`: walks a script's syntax tree and records a finding per v1 construct.

Standard library only, as the rest of the checker (`check.py`).
"""

from __future__ import annotations

import ast
import bisect
import contextlib
import dataclasses
import gc
import itertools
import os
import pathlib
import re
import stat
from typing import Callable, Iterator, Sequence

if __package__:
    from compat_mts.cli.check import catalogue
    from compat_mts.cli.check import names
    from compat_mts.cli.check import report
else:  # `python compat_mts/cli/check FILE...`: the directory of this file is first on sys.path.
    import catalogue as catalogue
    import names as names
    import report as report


_GRAPH_CONSTRUCTORS = ('tensorflow.Graph', 'tensorflow.compat.v1.Graph', 'tensorflow.python.framework.ops.Graph')
_CLUSTER_CONSTRUCTS = ('tf.compat.v1.train.ClusterSpec', 'tf.compat.v1.train.Server', 'tf.compat.v1.distribute.Server')
_KERAS_READERS = ('tensorflow', 'keras', 'tf_keras')  # the modules that read TF_USE_LEGACY_KERAS on import
# What a name can be bound to, as far as the checker follows it (see `_Checker._bind_values`).
_BOUND_KINDS = (
    'session',
    'iterator',
    'graph',
    'device_function',
    'ps_cluster',
    'shape',
    'foreign',
    'in_process_strategy',
    'strategy',
)
# What runs a program's main function as Python would: no graph around it.
_MAIN_RUNNERS = ('tensorflow.compat.v1.app.run', 'tensorflow.app.run', 'absl.app.run')
_ESTIMATORS = ('tf.estimator.Estimator', 'tf.estimator.tpu.TPUEstimator')
_RUN_CONFIGS = ('tf.estimator.RunConfig', 'tf.estimator.tpu.RunConfig')
_KERAS_LAYERS = re.compile(r'(?:tensorflow\.keras|keras|tf_keras)\.layers\.[A-Z]\w*')


def _has_ps_key(node: ast.AST) -> bool:
    """Whether `node` is a dict literal with a 'ps' key (a v1 cluster with parameter servers)."""
    return isinstance(node, ast.Dict) and any(isinstance(key, ast.Constant) and key.value == 'ps' for key in node.keys)


def _imports_tensorflow(node: ast.AST) -> bool:
    """Whether `node` imports TensorFlow or Keras."""
    if isinstance(node, ast.Import):
        return any(catalogue.root(alias.name) in _KERAS_READERS for alias in node.names)
    return isinstance(node, ast.ImportFrom) and not node.level and catalogue.root(node.module or '') in _KERAS_READERS


def _sets_legacy_keras(node: ast.AST) -> bool:
    """Whether `node` is `os.environ['TF_USE_LEGACY_KERAS'] = '1'` or `os.environ.setdefault(...)` of it."""
    if isinstance(node, ast.Assign):
        pairs = [(target.slice, node.value) for target in node.targets if isinstance(target, ast.Subscript)]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ('setdefault', 'putenv')
        and len(node.args) == 2
    ):
        pairs = [tuple(node.args)]
    else:
        return False
    return any(
        isinstance(key, ast.Constant)
        and key.value == 'TF_USE_LEGACY_KERAS'
        and isinstance(value, ast.Constant)
        and str(value.value).lower() in ('1', 'true')
        for key, value in pairs
    )


def _source(node: ast.AST) -> str:
    """`ast.unparse(node)`, at once for a name (most targets of a script's assignments)."""
    return node.id if node.__class__ is ast.Name else ast.unparse(node)


def _position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset + 1


def _method_position(call: ast.Call) -> tuple[int, int]:
    """Where the method name of `receiver.method(...)` starts, 1-based."""
    func = call.func
    return func.end_lineno, func.end_col_offset - len(func.attr) + 1


_SERVING_RECEIVERS = ('export.ServingInputReceiver', 'export.TensorServingInputReceiver')


# The nodes each pass before the visit reads, by kind; a node of any other type is in no list (see `_Nodes`).
_NODE_KINDS = {
    ast.Import: ('names', 'imports'),
    ast.ImportFrom: ('names', 'imports'),
    ast.Assign: ('names', 'bindings', 'assignments'),
    ast.AnnAssign: ('bindings',),
    ast.NamedExpr: ('bindings',),
    ast.With: ('bindings', 'withs'),
    ast.AsyncWith: ('bindings', 'withs'),
    ast.Attribute: ('names',),
    ast.Name: ('names',),
    ast.Call: ('calls',),
    ast.Return: ('returns',),
    ast.FunctionDef: ('functions',),
    ast.AsyncFunctionDef: ('functions',),
    ast.ClassDef: ('functions',),
}
# Nodes without children that the checker has no visitor for: the visit does not descend into them.
_LEAVES = (ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


class _Nodes:
    """The nodes of a tree that the checker's passes read, by kind, each list in `ast.walk`'s order: one walk
    of the tree feeds every pass (a 120,000-line file has millions of nodes, most of which no pass reads)."""

    def __init__(self, tree: ast.Module, walked: Sequence[ast.AST] | None = None, resolved: bool = False):
        self.names: list[ast.AST] = []  # what `names.Names` reads; none when the names are `resolved` already
        self.imports: list[ast.AST] = []
        self.bindings: list[ast.AST] = []  # what may bind a name to a value (`_Checker._bind_values`)
        self.assignments: list[ast.AST] = []
        self.withs: list[ast.AST] = []
        self.calls: list[ast.Call] = []
        self.returns: list[ast.Return] = []
        self.functions: list[ast.AST] = []  # function and class definitions
        lists = {
            kind: [getattr(self, name) for name in names if not (resolved and name == 'names')]
            for kind, names in _NODE_KINDS.items()
        }
        lists = {kind: found for kind, found in lists.items() if found}
        for node in names.walk(tree) if walked is None else walked:
            for found in lists.get(node.__class__, ()):
                found.append(node)


def _start(node: ast.AST) -> tuple[int, int]:
    """Where `node` starts: its first decorator, for a definition."""
    return min([(node.lineno, node.col_offset)] + [_start(d) for d in getattr(node, 'decorator_list', ())])


class _Spans:
    """Nodes by where they start, to find the ones of a statement by its span instead of a walk of it: the
    spans of statements nest, so the nodes that start inside a statement's are the ones `ast.walk` gives of it."""

    def __init__(self, nodes: Sequence[ast.AST]):
        self._nodes = sorted(nodes, key=_start)
        self._starts = [_start(node) for node in self._nodes]

    def inside(self, statement: ast.stmt) -> list[ast.AST]:
        first = bisect.bisect_left(self._starts, _start(statement))
        return self._nodes[first : bisect.bisect_left(self._starts, (statement.end_lineno, statement.end_col_offset))]


class _Checker(ast.NodeVisitor):
    def __init__(
        self,
        filename: str,
        tree: ast.Module,
        walked: Sequence[ast.AST] | None = None,
        resolved: names.Names | None = None,
    ):
        self.filename = filename
        nodes = _Nodes(tree, walked, resolved is not None)
        self.names = names.Names(tree, nodes.names) if resolved is None else resolved
        self.findings: dict[tuple[int, int, str], report.Finding] = {}
        # The names a path can start with: those bound by an import or an alias (any name, given a star import).
        self._heads = None if self.names.star_modules else frozenset(self.names.aliases)
        self._functions = {node.name for node in nodes.functions if not isinstance(node, ast.ClassDef)}
        self._bound: dict[str, set[str]] = {kind: set() for kind in _BOUND_KINDS}
        self._bind_values(nodes.bindings)
        # The calls of catalogued constructs, with the construct: the passes below read these, not every call.
        constructs = [(node, found[0]) for node in nodes.calls if (found := self._rule_for(node.func)) is not None]
        self._graph_functions = self._wrapped_graph_functions(constructs)
        self._in_graph_function = False
        self._settings = self._script_settings(nodes, constructs)
        self._model_fns = self._functions_given_as_model_fn(constructs)
        self._graph_context_unknown = self._functions_run_elsewhere(nodes)
        self._function_stack: list[str] = []

    def visit(self, node: ast.AST) -> None:
        """`ast.NodeVisitor.visit`, each type's visitor looked up once (`_visitor_of`)."""
        (_VISITORS.get(node.__class__) or _visitor_of(node.__class__))(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        """`ast.NodeVisitor.generic_visit`, reading only the fields that may hold nodes (`names.child_fields`)."""
        visitors = _VISITORS
        fields = _CHILD_FIELDS.get(node.__class__)
        if fields is None:
            fields = _CHILD_FIELDS[node.__class__] = names.child_fields(node.__class__)
        for field in fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                for item in value:
                    (visitors.get(item.__class__) or _visitor_of(item.__class__))(self, item)
            else:
                (visitors.get(value.__class__) or _visitor_of(value.__class__))(self, value)

    def findings_in(self, statements: Sequence[ast.stmt]) -> list[report.Finding]:
        """What the visit of `statements` (top-level ones, in order) finds: a part of the module's visit. The
        visitor's state (the function and graph block it is in) starts and ends at the top level."""
        before = len(self.findings)
        for statement in statements:
            self.visit(statement)
        return list(itertools.islice(self.findings.values(), before, None))

    def _may_resolve(self, node: ast.AST) -> bool:
        """False when `node` names no path (`names.Names.resolve` is None): it is no chain of names, or one whose
        first name no import or alias binds. Most of a script's names are its own: this spares looking them up."""
        while node.__class__ is ast.Attribute:
            node = node.value
        return node.__class__ is ast.Name and (self._heads is None or node.id in self._heads)

    def _resolve(self, node: ast.AST) -> str | None:
        return self.names.resolve(node) if self._may_resolve(node) else None

    def _rule_for(self, node: ast.AST) -> tuple[str, catalogue.Rule] | None:
        return self.names.rule_for(node) if self._may_resolve(node) else None

    def _bind_values(self, nodes: Sequence[ast.AST]) -> None:
        """Records in `self._bound` the targets (as source text) bound to each kind of value: 'session',
        'iterator' (v1), 'graph', 'device_function' (a replica_device_setter), 'ps_cluster' (a cluster with a
        'ps' job), 'shape' (a tensor's shape) and 'foreign' (another library's call)."""
        bound = self._bound
        pairs = []
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                pairs.append((node.targets[0], node.value))
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                pairs.append((node.target, node.value))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                pairs.extend((item.optional_vars, item.context_expr) for item in node.items if item.optional_vars)
        # Dicts first: a ClusterSpec may be made from a dict bound earlier.
        bound['ps_cluster'].update(_source(target) for target, value in pairs if _has_ps_key(value))
        for target, value in pairs:
            key = _source(target)
            if isinstance(value, ast.Attribute) and value.attr == 'shape':
                bound['shape'].add(key)
            if not isinstance(value, ast.Call):
                continue
            found = self._rule_for(value.func)
            construct = found[0] if found else ''
            if self._is_session_constructor(value):
                bound['session'].add(key)
            elif self._makes_v1_iterator(value):
                bound['iterator'].add(key)
            elif self._resolve(value.func) in _GRAPH_CONSTRUCTORS:
                bound['graph'].add(key)
            elif construct == 'tf.compat.v1.train.replica_device_setter':
                bound['device_function'].add(key)
            elif construct in _CLUSTER_CONSTRUCTS and self._has_ps_job(value, construct):
                bound['ps_cluster'].add(key)
            elif isinstance(value.func, ast.Attribute) and value.func.attr == 'get_shape':
                bound['shape'].add(key)
            elif (path := self._resolve(value.func) or '').startswith('tensorflow.') and path.endswith('Strategy'):
                in_process = path.rsplit('.', 1)[-1] in catalogue.ESTIMATOR_STRATEGIES
                bound['in_process_strategy' if in_process else 'strategy'].add(key)
            else:
                path = self._resolve(value.func)
                if path and catalogue.root(path) not in ('tensorflow', 'compat_mts'):
                    bound['foreign'].add(key)

    def _script_settings(self, nodes: _Nodes, constructs: Sequence[tuple[ast.Call, str]]) -> set[str]:
        """What the script sets that keeps a blocking construct working (see `catalogue.Rule.unless`):
        v1 shapes by `tf.compat.v1.disable_v2_tensorshape()`, Keras 2 by TF_USE_LEGACY_KERAS=1 set in
        `os.environ` before the first import of TensorFlow or Keras, a parameter-server cluster by
        `compat_mts.parameter_server_strategy(...)`."""
        settings = set()
        first_import = min((node.lineno for node in nodes.imports if _imports_tensorflow(node)), default=None)
        for _, construct in constructs:
            if construct == 'tf.compat.v1.disable_v2_tensorshape':
                settings.add(catalogue.V1_TENSORSHAPE_SETTING)
            if construct == 'compat_mts.parameter_server_strategy':
                settings.add(catalogue.PARAMETER_SERVER_SETTING)
        if first_import is not None and any(
            _sets_legacy_keras(node) and node.lineno < first_import for node in (*nodes.assignments, *nodes.calls)
        ):
            settings.add(catalogue.LEGACY_KERAS_SETTING)
        return settings

    def _wrapped_graph_functions(self, constructs: Sequence[tuple[ast.Call, str]]) -> set[str]:
        """The names of the functions given to `compat_mts.wrap_graph` (its `build_fn`); `constructs`: the calls
        of catalogued constructs, with the construct."""
        functions = set()
        for node, construct in constructs:
            if construct == 'compat_mts.wrap_graph':
                build_fn = [*node.args[:1], *(k.value for k in node.keywords if k.arg == 'build_fn')]
                functions.update(arg.id for arg in build_fn if isinstance(arg, ast.Name))
        return functions

    def _is_graph_block(self, node: ast.AST) -> bool:
        """Whether `node` is `with tf.Graph().as_default():` (or `with graph.as_default():` of a bound graph)."""
        return isinstance(node, (ast.With, ast.AsyncWith)) and any(
            isinstance(item.context_expr, ast.Call)
            and isinstance(item.context_expr.func, ast.Attribute)
            and item.context_expr.func.attr == 'as_default'
            and self._is_graph(item.context_expr.func.value)
            for item in node.items
        )

    def _functions_given_as_model_fn(self, constructs: Sequence[tuple[ast.Call, str]]) -> set[str]:
        """The names of the functions given to an Estimator as its model_fn (of `constructs`, as above)."""
        functions = set()
        for node, construct in constructs:
            if construct in _ESTIMATORS:
                model_fn = [*node.args[:1], *(k.value for k in node.keywords if k.arg == 'model_fn')]
                functions.update(arg.id for arg in model_fn if isinstance(arg, ast.Name))
        return functions

    def _functions_run_elsewhere(self, nodes: _Nodes) -> set[str]:
        """The functions that may run inside a graph the checker does not see around them: those called in a
        graph block or a wrap_graph build_fn (and what they call), and those given to another call as a value
        (a model_fn, an input_fn, a build_fn), which runs them where it will."""
        definitions: dict[str, list[ast.AST]] = {}
        for node in nodes.functions:
            # A class stands for its methods: `model = PTBModel()` in a graph block builds in `__init__`.
            definitions.setdefault(node.name, []).append(node)

        def name_called(call: ast.Call) -> str | None:
            func = call.func
            return func.id if isinstance(func, ast.Name) else getattr(func, 'attr', None)

        calls = _Spans([node for node in nodes.calls if name_called(node) in definitions])

        def called(root: ast.stmt) -> set[str]:
            return {name_called(node) for node in calls.inside(root)}

        elsewhere = set(self._graph_functions) | self._serving_input_fns(definitions, nodes.returns)
        for node in nodes.calls:
            given = [
                value.id
                for value in (*node.args, *(keyword.value for keyword in node.keywords))
                if value.__class__ is ast.Name and value.id in definitions
            ]
            if given and self._resolve(node.func) not in _MAIN_RUNNERS:
                elsewhere.update(given)
        pending = set(elsewhere)
        for node in nodes.withs:
            if self._is_graph_block(node):
                pending |= called(node)
        while pending:
            name = pending.pop()
            elsewhere.add(name)
            for definition in definitions.get(name, ()):
                pending |= called(definition) - elsewhere
                if isinstance(definition, ast.ClassDef):
                    elsewhere.update(
                        method.name
                        for method in definition.body
                        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
                    )
        return elsewhere

    def _serving_input_fns(self, definitions: dict[str, list[ast.AST]], returns: Sequence[ast.Return]) -> set[str]:
        """The functions that return a ServingInputReceiver (or are named as serving input functions): the
        Estimator calls them in a graph of its own at export, so their placeholders are that graph's. `returns`:
        every return statement of the script."""
        found = {name for name in definitions if 'serving_input' in name}
        receivers = _Spans(
            [
                node
                for node in returns
                if isinstance(node.value, ast.Call)
                and (self._resolve(node.value.func) or '').endswith(_SERVING_RECEIVERS)
            ]
        )
        for name, functions in definitions.items():
            if any(receivers.inside(function) for function in functions):
                found.add(name)
        return found

    def _is_session_constructor(self, call: ast.Call) -> bool:
        found = self._rule_for(call.func)
        return found is not None and found[0].rsplit('.', 1)[-1] in catalogue.SESSION_CONSTRUCTORS

    def _makes_v1_iterator(self, call: ast.Call) -> bool:
        if isinstance(call.func, ast.Attribute) and call.func.attr in catalogue.V1_ITERATOR_METHODS:
            return self.names.uses_tensorflow
        found = self._rule_for(call.func)
        if found is None and isinstance(call.func, ast.Attribute):  # tf.compat.v1.data.Iterator.from_structure
            found = self._rule_for(call.func.value)
        return found is not None and found[0] in catalogue.V1_ITERATOR_CONSTRUCTS

    def _is_session(self, receiver: ast.AST) -> bool:
        key = ast.unparse(receiver)
        if key in self._bound['session']:
            return True
        if isinstance(receiver, ast.Call):
            if self._is_session_constructor(receiver):
                return True
            receiver = receiver.func  # sess.raw_session().run(...)
        name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, 'id', '')
        return (
            self.names.uses_tensorflow
            and key not in self._bound['foreign']
            and bool(catalogue.SESSION_NAME.search(name))
            and self._resolve(receiver) is None
        )

    def _has_ps_job(self, call: ast.Call, construct: str) -> bool:
        """Whether a ClusterSpec or Server call describes a cluster with a 'ps' job (or is a ps task)."""
        cluster = [*call.args[:1], *(k.value for k in call.keywords if k.arg in ('cluster', 'server_or_cluster_def'))]
        for value in cluster:
            if _has_ps_key(value) or ast.unparse(value) in self._bound['ps_cluster']:
                return True
            if isinstance(value, ast.Call):
                found = self._rule_for(value.func)
                if found is not None and found[0] in _CLUSTER_CONSTRUCTS and self._has_ps_job(value, found[0]):
                    return True
        if construct.endswith('.Server'):
            job = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == 'job_name')]
            return any(isinstance(value, ast.Constant) and value.value == 'ps' for value in job)
        return False

    def _is_device_function(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Lambda):
            return True
        if isinstance(node, ast.Call):
            found = self._rule_for(node.func)
            return found is not None and found[0] == 'tf.compat.v1.train.replica_device_setter'
        return isinstance(node, ast.Name) and (node.id in self._bound['device_function'] or node.id in self._functions)

    def _is_dimension(self, node: ast.AST) -> bool:
        """Whether `node` reads one dimension of a tensor's shape: `x.shape[i]`, `x.get_shape()[i]`."""
        if not isinstance(node, ast.Subscript) or isinstance(node.slice, ast.Slice):
            return False
        shape = node.value
        return (
            (isinstance(shape, ast.Attribute) and shape.attr == 'shape')
            or (
                isinstance(shape, ast.Call) and isinstance(shape.func, ast.Attribute) and shape.func.attr == 'get_shape'
            )
            or ast.unparse(shape) in self._bound['shape']
        )

    def _add(self, position: tuple[int, int], construct: str, rule: catalogue.Rule) -> None:
        if rule.unless is not None and rule.unless[0] in self._settings:
            rule = rule.unless[1]
        line, col = position
        self.findings.setdefault(
            (line, col, construct),
            report.Finding(self.filename, line, col, construct, rule.replacement, rule.stage, rule.note, rule.blocks),
        )

    # Visitors.

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        """Imports are where names come from, not uses: the uses are reported. The exception is an import
        from a module TensorFlow 2.21 no longer has (`from tensorflow.contrib import slim`), which fails."""
        if isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                return
            paths = [
                (alias, node.module if alias.name == '*' else f'{node.module}.{alias.name}') for alias in node.names
            ]
        else:
            paths = [(alias, alias.name) for alias in node.names]
        for alias, path in paths:
            if catalogue.gone_module(path):
                found = catalogue.lookup(path, v1_style=True)
                if found is not None:
                    self._add(_position(alias), *found)

    visit_ImportFrom = visit_Import

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer = self._in_graph_function
        self._in_graph_function = outer or node.name in self._graph_functions
        self._function_stack.append(node.name)
        self.generic_visit(node)
        self._function_stack.pop()
        self._in_graph_function = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_With(self, node: ast.With) -> None:
        """The body of `with tf.Graph().as_default():` builds the program's own graph, as a wrap_graph build_fn does."""
        graph_block = self._is_graph_block(node)
        outer = self._in_graph_function
        self._in_graph_function = outer or graph_block
        self.generic_visit(node)
        self._in_graph_function = outer

    def _visit_reference(self, node: ast.Attribute | ast.Name) -> None:
        root = node
        while root.__class__ is ast.Attribute:
            root = root.value
        if root.__class__ is ast.Name and self._heads is not None and root.id not in self._heads:
            return  # A chain of names that names no path: nothing in it to find.
        if (
            isinstance(node, ast.Attribute)
            and node.attr == 'value'
            and self.names.uses_tensorflow
            and self._is_dimension(node.value)
        ):
            self._add(_position(node), ast.unparse(node), catalogue.shape_value_rule(ast.unparse(node.value)))
        found = self._rule_for(node)
        if found is not None:
            construct, rule = found
            if self.names.through_gone_module_alias(node, rule):
                return
            if self._in_graph_function and construct in catalogue.GLOBAL_STEP_HELPERS:
                rule = dataclasses.replace(rule, stage=2)  # the graph's own global step, kept by wrap_graph
            if construct == 'tf.compat.v1.placeholder' and not self._in_a_graph():
                self._add(_position(node), f'{construct} outside a graph', catalogue.GRAPH_OUTSIDE_A_GRAPH)
            self._add(_position(node), construct, rule)
            return
        path = self._resolve(node) if self._model_fns.intersection(self._function_stack) else None
        if path and _KERAS_LAYERS.fullmatch(path):
            keras_path = 'tf.keras' + path.split('keras', 1)[1]
            self._add(_position(node), f'{keras_path} in a model_fn', catalogue.KERAS_LAYERS_IN_MODEL_FN)
            return
        if node.__class__ is ast.Attribute:  # A name holds nothing more to visit.
            self.visit(node.value)

    def _in_a_graph(self) -> bool:
        """Whether the code being visited may build a graph of its own: in a graph block, a wrap_graph build_fn,
        or a function that runs somewhere the checker cannot follow (see `_functions_run_elsewhere`)."""
        return self._in_graph_function or bool(self._graph_context_unknown.intersection(self._function_stack))

    visit_Attribute = _visit_reference
    visit_Name = _visit_reference

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            found = self._rule_for(base)
            if found is None:
                self.visit(base)
            else:
                construct, rule = found
                self._add(_position(base), f'class {node.name}({construct})', rule)
        for child in (*node.decorator_list, *node.keywords, *node.body):
            self.visit(child)

    def visit_Call(self, node: ast.Call) -> None:
        found = self._rule_for(node.func)
        construct = found[0] if found else ''
        if construct.endswith('.MonitoredTrainingSession'):
            self._add_session_arguments(node, construct)
        elif construct == 'tf.compat.v1.train.Saver':
            self._add_arguments(node, construct, catalogue.SAVER_ARGUMENT_ORDER, catalogue.SAVER_ARGUMENTS)
        elif construct in _CLUSTER_CONSTRUCTS and self._has_ps_job(node, construct):
            self._add(_position(node), construct, catalogue.PS_CLUSTER)  # before the name's own finding
        elif construct in _RUN_CONFIGS:
            for keyword in node.keywords:
                if keyword.arg in ('train_distribute', 'eval_distribute'):
                    rule = self._strategy_rule(keyword.value)
                    self._add(_position(keyword), f'{construct}({keyword.arg}=...)', rule)
        elif construct == 'tf.estimator.tpu.TPUEstimator':
            self._add_use_tpu(node, construct)
        elif self._resolve(node.func) == 'tensorflow.device' and node.args and self._is_device_function(node.args[0]):
            self._add(_position(node), 'tf.device(<device function>)', catalogue.DEVICE_FUNCTION)
        if isinstance(node.func, ast.Attribute):
            self._check_method_call(node)
        if self.names.uses_tensorflow:
            for keyword in node.keywords:
                if keyword.arg == 'feed_dict':
                    self._add_feed_dict(keyword, keyword.value)
        self.generic_visit(node)

    def _strategy_rule(self, value: ast.AST) -> catalogue.Rule:
        """The rule of a strategy given as train_distribute or eval_distribute."""
        key = ast.unparse(value)
        path = self._resolve(value.func) if isinstance(value, ast.Call) else None
        if key in self._bound['in_process_strategy'] or (
            path and path.rsplit('.', 1)[-1] in catalogue.ESTIMATOR_STRATEGIES
        ):
            return catalogue.TRAIN_DISTRIBUTE_WORKS
        if key in self._bound['strategy'] or (path and catalogue.root(path) == 'tensorflow'):
            return catalogue.TRAIN_DISTRIBUTE_BLOCKS
        return catalogue.TRAIN_DISTRIBUTE_UNKNOWN

    def _add_use_tpu(self, call: ast.Call, construct: str) -> None:
        """A finding for TPUEstimator's use_tpu when it is True (v1's default) or not known to be False."""
        given = [keyword for keyword in call.keywords if keyword.arg == 'use_tpu']
        if len(call.args) > 4:
            given.append(call.args[4])  # model_fn, model_dir, config, params, use_tpu
        if not given:
            if not any(keyword.arg is None for keyword in call.keywords):  # no **kwargs that might hold it
                self._add(_position(call), f'{construct}(use_tpu=True, the default)', catalogue.USE_TPU)
            return
        value = given[0].value if isinstance(given[0], ast.keyword) else given[0]
        if isinstance(value, ast.Constant) and value.value is False:
            return
        blocks = isinstance(value, ast.Constant) and bool(value.value)
        self._add(
            _position(given[0]), f'{construct}(use_tpu=...)', catalogue.USE_TPU if blocks else catalogue.USE_TPU_UNKNOWN
        )

    def _add_session_arguments(self, call: ast.Call, construct: str) -> None:
        rules = {
            name: catalogue.Rule(replacement, 3, note) for name, (replacement, note) in catalogue.MTS_ARGUMENTS.items()
        }
        self._add_arguments(call, construct, catalogue.MTS_ARGUMENT_ORDER, rules)

    def _add_arguments(
        self, call: ast.Call, construct: str, order: Sequence[str], rules: dict[str, catalogue.Rule]
    ) -> None:
        """One finding per argument of `call` that `rules` has, given by keyword or by position (`order`)."""
        positional = itertools.takewhile(lambda arg: not isinstance(arg, ast.Starred), call.args)
        given = list(zip(order, positional))
        given += [(keyword.arg, keyword) for keyword in call.keywords if keyword.arg in rules]
        for name, node in given:
            if name in rules:
                self._add(_position(node), f'{construct}({name}=...)', rules[name])

    def _check_method_call(self, call: ast.Call) -> None:
        method, receiver = call.func.attr, call.func.value
        if method == 'run' and self._is_session(receiver):
            self._add(_method_position(call), f'{ast.unparse(receiver)}.run(...)', catalogue.RUN)
            if len(call.args) > 1:
                self._add_feed_dict(call.args[1], call.args[1])
        elif not self.names.uses_tensorflow or self._resolve(receiver):
            return
        elif method == 'export_savedmodel':
            self._add(_method_position(call), 'Estimator.export_savedmodel(...)', catalogue.EXPORT_SAVEDMODEL)
        elif method == 'as_default' and self._is_graph(receiver):
            self._add(_position(call), f'{ast.unparse(receiver)}.as_default()', catalogue.GRAPH_AS_DEFAULT)
        elif method in ('minimize', 'apply_gradients'):
            for keyword in call.keywords:
                if keyword.arg == 'global_step':
                    self._add(_position(keyword), f'Optimizer.{method}(global_step=...)', catalogue.MINIMIZE)
        elif method in catalogue.V1_ITERATOR_METHODS:
            self._add(_method_position(call), f'Dataset.{method}()', catalogue.ITERATOR_METHOD)
        elif method == 'get_next' and (
            ast.unparse(receiver) in self._bound['iterator']
            or (isinstance(receiver, ast.Call) and self._makes_v1_iterator(receiver))
        ):
            self._add(_method_position(call), 'Iterator.get_next()', catalogue.GET_NEXT)

    def _is_graph(self, receiver: ast.AST) -> bool:
        if isinstance(receiver, ast.Call):
            return self._resolve(receiver.func) in _GRAPH_CONSTRUCTORS
        return ast.unparse(receiver) in self._bound['graph']

    def _add_feed_dict(self, node: ast.AST, value: ast.AST) -> None:
        # Keyword names ('x') feed a step callable; tensor names ('x:0') still feed a graph.
        by_name = (
            isinstance(value, ast.Dict)
            and value.keys
            and all(
                isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.isidentifier()
                for key in value.keys
            )
        )
        self._add(_position(node), 'feed_dict', catalogue.FEED_DICT_BY_NAME if by_name else catalogue.FEED_DICT)


def _skip(checker: _Checker, node: object) -> None:
    """The visitor of what holds nothing to check: a leaf (`_LEAVES`), or a field's value that is not a node."""


# Each type's visitor (a function of `_Checker`, given the checker), looked up once. Functions, not methods bound
# to a checker: those would hold it in a reference cycle (its findings, its names and the nodes they keep, freed
# only by the cyclic collector, a second of a long file's upgrade).
_VISITORS: dict[type, Callable[[_Checker, object], None]] = {}
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _visitor_of(node_class: type) -> Callable[[_Checker, object], None]:
    if not issubclass(node_class, ast.AST) or issubclass(node_class, _LEAVES):
        visitor = _skip
    else:
        visitor = getattr(_Checker, f'visit_{node_class.__name__}', _Checker.generic_visit)
    _VISITORS[node_class] = visitor
    return visitor


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside the block (as it was, after it).

    A syntax tree holds no reference cycles (its nodes go when their count drops), but the collector still walks
    every object it holds each time enough new ones were made: a fifth of the time to check a large file, and
    as much again of `upgrade`'s edits, for nothing to collect.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def check_source(text: str | bytes, filename: str = '<string>') -> list[report.Finding]:
    """The constructs to migrate in the Python source `text`, in line order. The source is parsed, never run.

    Raises:
      CheckError: `text` is not valid Python (the error's line and column say where), or nests deeper than
        Python's parser or this checker can follow.
    """
    with collector_paused():
        return _check_source(text, filename)


def _check_source(text: str | bytes, filename: str) -> list[report.Finding]:
    try:
        tree = ast.parse(text, filename=filename)
    except (SyntaxError, ValueError) as error:  # ValueError: null bytes in the source
        line = getattr(error, 'lineno', None) or 0
        col = getattr(error, 'offset', None) or 0
        message = getattr(error, 'msg', None) or str(error)
        raise report.CheckError(filename, f'syntax error: {message}', line, col) from None
    except (RecursionError, MemoryError):
        raise report.CheckError(filename, _TOO_DEEP) from None
    return _checked(filename, tree)


def check_tree(
    tree: ast.Module,
    nodes: Sequence[ast.AST],
    resolved: names.Names,
    filename: str = '<string>',
    *,
    parts: int = 1,
    map_parts: Callable[[Callable[[list[ast.stmt]], list[report.Finding]], list[list[ast.stmt]]], list] | None = None,
) -> list[report.Finding]:
    """`check_source` of the text whose syntax tree is `tree`, given every node of it (`names.walk(tree)`) and its
    `names.Names` (made from those nodes), which a caller that has them saves a parse and two passes over it.

    What the visit finds in one top-level statement does not depend on the others: with `map_parts`, the
    module's statements are cut into `parts` runs of about equal lines, and `map_parts(function, runs)` (the
    list of `function(run)` for each run, such as `upgrade.forked.forked_map` computes in forked processes) gives
    the findings of each run. The findings are the same.

    Raises:
      CheckError: the tree nests deeper than this checker can follow.
    """
    with collector_paused():
        return _checked(filename, tree, nodes, resolved, parts if map_parts is not None else 1, map_parts)


def _checked(
    filename: str,
    tree: ast.Module,
    nodes: Sequence[ast.AST] | None = None,
    resolved: names.Names | None = None,
    parts: int = 1,
    map_parts: Callable | None = None,
) -> list[report.Finding]:
    try:
        checker = _Checker(filename, tree, nodes, resolved)
        runs = _runs(tree.body, parts)
        if map_parts is not None and len(runs) > 1:
            for findings in map_parts(checker.findings_in, runs):
                for finding in findings:
                    checker.findings.setdefault((finding.line, finding.col, finding.construct), finding)
        else:
            checker.visit(tree)
    except RecursionError:
        raise report.CheckError(filename, _TOO_DEEP) from None
    return sorted(checker.findings.values(), key=lambda f: (f.line, f.col, f.construct))


def _runs(body: list[ast.stmt], count: int) -> list[list[ast.stmt]]:
    """`body` cut into at most `count` runs of statements of about equal lines, in order."""
    if count <= 1 or not body:
        return [body]
    size = body[-1].end_lineno / count
    runs: list[list[ast.stmt]] = [[]]
    for statement in body:
        if runs[-1] and statement.lineno > size * len(runs):
            runs.append([])
        runs[-1].append(statement)
    return runs


_TOO_DEEP = 'nested too deeply to check (an expression of hundreds of levels, such as a very long chain of calls)'
MAX_FILE_BYTES = 16 * 2**20
_FILE_KINDS = {
    stat.S_IFIFO: 'a FIFO (named pipe)',
    stat.S_IFCHR: 'a character device',
    stat.S_IFBLK: 'a block device',
    stat.S_IFSOCK: 'a socket',
    stat.S_IFDIR: 'a directory',
}


def read_source(path: str | pathlib.Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file at `path`, at most `max_bytes` of them.

    The file is opened without blocking and checked before anything is read, so a FIFO (which would wait for
    a writer) or a device (`/dev/zero` never ends) is refused at once, as is a file over the cap.

    Raises:
      CheckError: `path` cannot be opened, is not a regular file, or holds more than `max_bytes` bytes.
    """
    filename = str(path)
    try:
        descriptor = os.open(filename, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0))
    except OSError as error:
        raise report.CheckError(filename, f'cannot read: {error.strerror or error}') from None
    with os.fdopen(descriptor, 'rb') as file:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = _FILE_KINDS.get(stat.S_IFMT(mode), 'not a regular file')
            raise report.CheckError(filename, f'not checked: {kind}, not a regular file; check reads Python files only')
        try:
            source = file.read(max_bytes + 1)
        except OSError as error:
            raise report.CheckError(filename, f'cannot read: {error.strerror or error}') from None
    if len(source) > max_bytes:
        cap = f'{max_bytes // 2**20} MiB ({max_bytes} bytes)' if max_bytes >= 2**20 else f'{max_bytes} bytes'
        raise report.CheckError(
            filename,
            f'not checked: larger than the {cap} that check reads of a file; a training script is far '
            'smaller, so this is likely generated code or data',
        )
    return source


def check_file(path: str | pathlib.Path, max_bytes: int = MAX_FILE_BYTES) -> list[report.Finding]:
    """The constructs to migrate in the Python file at `path` (see `check_source`).

    Only a regular file of at most `max_bytes` bytes is read (see `read_source`).

    Raises:
      CheckError: the file cannot be read, is not a regular file, is over `max_bytes`, or is not valid Python.
    """
    return check_source(read_source(path, max_bytes), str(path))
