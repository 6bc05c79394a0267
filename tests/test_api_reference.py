"""The API reference, built from the docstrings with pdoc exactly as the README's command builds it.

Building it here keeps it from rotting: every public name has a page or an anchor with a docstring, the build
warns about nothing, and every public hook and Keras adapter documents each constructor argument by name in an
`Args:` section.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import re
import warnings

import pdoc  # The `test` and `docs` extras.
import pdoc.doc
import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
# The README's command: `pdoc --docformat google compat_mts -o api-reference`.
BUILD_COMMAND = 'pdoc --docformat google compat_mts -o api-reference'
PUBLIC_MODULES = (
    'compat_mts',
    'compat_mts.deploy.distribute',
    'compat_mts.hooks',
    'compat_mts.keras',
    'compat_mts.estimator',
    'compat_mts.legacy',
    'compat_mts.legacy.horovod',
)
# Where each documented module's page is, relative to the output directory.
_PAGE = {module: pathlib.Path(*module.split('.')).with_suffix('.html') for module in PUBLIC_MODULES}
_SECTION = re.compile(r'^(Args|Arguments|Returns|Yields|Raises|Example|Examples|Attributes|Note|Notes):\s*$')


@pytest.fixture(scope='module')
def reference(tmp_path_factory):
    """Builds the reference into a temporary directory; returns it and the warnings the build gave."""
    import pdoc.render

    output = tmp_path_factory.mktemp('api-reference')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        pdoc.render.configure(docformat='google')
        try:
            pdoc.pdoc('compat_mts', output_directory=output)
        finally:
            pdoc.render.configure()
    return output, [str(warning.message) for warning in caught if 'pdoc' in warning.filename]


def test_the_readme_gives_the_command_that_builds_the_reference():
    assert BUILD_COMMAND in (REPO / 'README.md').read_text(encoding='utf-8')


@pytest.mark.slow
def test_building_the_reference_warns_about_nothing(reference):
    _, caught = reference
    assert caught == []


@pytest.mark.slow
@pytest.mark.parametrize('module_name', PUBLIC_MODULES)
def test_every_public_name_has_an_anchor_and_a_docstring(module_name, reference):
    output, _ = reference
    module = importlib.import_module(module_name)
    page = output / _PAGE[module_name]
    assert page.is_file(), sorted(path.relative_to(output).as_posix() for path in output.rglob('*.html'))
    html = page.read_text(encoding='utf-8')
    documented = pdoc.doc.Module(module)
    assert documented.docstring.strip(), module_name
    undocumented, missing = [], []
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.ismodule(value):
            if not (
                output / _PAGE.get(value.__name__, pathlib.Path(*value.__name__.split('.')).with_suffix('.html'))
            ).is_file():
                missing.append(name)
            continue
        if f'id="{name}"' not in html:
            missing.append(name)
        if not _docstring(documented, name):
            undocumented.append(name)
    assert missing == [], f'{module_name}: no anchor or page for {missing}'
    assert undocumented == [], f'{module_name}: no docstring for {undocumented}'


def _docstring(documented: 'pdoc.doc.Module', name: str) -> str:
    """The docstring pdoc gives `name`; for a constant, the one where it is defined.

    pdoc reads a variable's docstring (the string literal after its assignment) from the module that
    assigns it, and a lazily re-exported constant (`USE_DEFAULT`) is assigned in its own module only.
    """
    member = documented.get(name)
    if member is None:
        return ''
    if not member.docstring.strip() and isinstance(member, pdoc.doc.Variable):
        module_name, qualname = member.taken_from
        defined = pdoc.doc.Module.from_name(module_name).get(qualname)
        return defined.docstring.strip() if defined is not None else ''
    return member.docstring.strip()


def _constructor_classes() -> list[type]:
    """The public hooks, timers and Keras adapters whose constructors take arguments."""
    import compat_mts.hooks
    import compat_mts.keras

    classes = []
    for module in (compat_mts.hooks, compat_mts.keras):
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and _parameters(value):
                classes.append(value)
    return classes


def _parameters(cls: type) -> list[str]:
    if '__init__' not in vars(cls):
        return []
    return [
        name
        for name, parameter in inspect.signature(cls.__init__).parameters.items()
        if name != 'self' and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
    ]


def documented_arguments(docstring: str) -> list[str]:
    """The argument names of the `Args:` section of a Google-style docstring, in order."""
    names, in_args, indent = [], False, None
    for line in inspect.cleandoc(docstring).splitlines():
        header = _SECTION.match(line)
        if header:
            in_args, indent = header.group(1) in ('Args', 'Arguments'), None
            continue
        if not in_args or not line.strip():
            continue
        width = len(line) - len(line.lstrip())
        if width == 0:
            in_args = False
            continue
        indent = indent if indent is not None else width
        match = re.match(r'(\*{0,2}\w+)\s*(\([^)]*\))?:', line.strip())
        if width == indent and match:
            names.append(match.group(1).lstrip('*'))
    return names


def test_the_args_parser_reads_google_style_sections():
    docstring = """Summary.

    Args:
      first: What it is,
        over two lines: with a colon.
      second (int): Another.

    Raises:
      ValueError: not an argument.
    """
    assert documented_arguments(docstring) == ['first', 'second']


@pytest.mark.parametrize('cls', _constructor_classes(), ids=lambda cls: cls.__name__)
def test_each_constructor_argument_is_documented_by_name(cls):
    documented = documented_arguments(inspect.getdoc(cls) or '') + documented_arguments(cls.__init__.__doc__ or '')
    missing = [name for name in _parameters(cls) if name not in documented]
    assert missing == [], f'{cls.__name__}: the Args: section does not document {missing}'
