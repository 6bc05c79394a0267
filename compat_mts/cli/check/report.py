"""What `compat-mts check` reports: a finding, a file it could not read, and the text and JSON it prints.

Standard library only, as the rest of the checker (`check.py`).
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from typing import Sequence

STAGES = {
    1: 'run eagerly on compat_mts',
    2: 'Keras / tf.function model, same session loop',
    3: 'model.fit, hooks in compat_mts.keras.HooksCallback',
    4: 'native Keras callbacks, no compat_mts',
}


@dataclasses.dataclass(frozen=True)
class Finding:
    """One construct to migrate: where it is, what replaces it, and at which stage (1-4).

    `line` and `col` are 1-based, as editors count. `construct` names the v1 (or compat_mts) API in its
    canonical spelling (`tf.compat.v1.train.StopAtStepHook` however the script imported it). `blocks`: the
    line fails on TensorFlow 2.21 as written (`tf.contrib`, a premade Estimator, `x.shape[i].value`, ...), so
    the script cannot run at stage 1 until it changes; `replacement` is then the edit that makes it run.
    """

    file: str
    line: int
    col: int
    construct: str
    replacement: str
    stage: int
    note: str
    blocks: bool = False


class CheckError(Exception):
    """A file that could not be read or parsed; `line`/`col` locate a syntax error (0 when unknown)."""

    def __init__(self, file: str, message: str, line: int = 0, col: int = 0):
        super().__init__(f'{file}:{line}:{col}: {message}' if line else f'{file}: {message}')
        self.file = file
        self.message = message
        self.line = line
        self.col = col


def format_text(findings: Sequence[Finding], files_checked: int | None = None, files_failed: int = 0) -> str:
    """Findings for people, one explanation per kind: `file:line:col: stage N: construct -> replacement`
    (`blocks stage 1:` in place of `stage 1:` for what must change before the script runs) at the first place
    the construct occurs, its note indented below, and `also at line:col, ...` for every other place (with the
    file named when it is another). Then a one-line count by stage (over `files_checked` files, when given)
    and, when some findings block stage 1, a line counting them. `files_failed` files could not be read or
    parsed: a last line says so, and when no file was checked at all there is nothing to summarize (''), only
    the errors the caller prints."""
    if files_failed and not files_checked:
        return ''
    groups: dict[tuple, list[Finding]] = {}
    for finding in findings:
        key = (finding.construct, finding.replacement, finding.stage, finding.note, finding.blocks)
        groups.setdefault(key, []).append(finding)
    lines = []
    for first, *others in groups.values():
        stage = 'blocks stage 1' if first.blocks else f'stage {first.stage}'
        lines.append(f'{first.file}:{first.line}:{first.col}: {stage}: {first.construct} -> {first.replacement}')
        lines.append(textwrap.fill(first.note, width=110, initial_indent='    ', subsequent_indent='    '))
        if others:
            places = ', '.join(
                f'{other.line}:{other.col}' if other.file == first.file else f'{other.file}:{other.line}:{other.col}'
                for other in others
            )
            lines.append(
                textwrap.fill(f'also at {places}', width=110, initial_indent='    ', subsequent_indent='      ')
            )
    in_files = ''
    if files_checked is not None:
        files = f'{files_checked} file{"s" if files_checked != 1 else ""}'
        in_files = f' in the {files} checked' if files_failed else f' in {files}'
    if not findings:
        lines.append(f'No constructs found{in_files}.' if files_failed else f'Nothing to migrate{in_files}.')
    else:
        stages = sorted({finding.stage for finding in findings})
        counts = ', '.join(f'stage {stage}: {sum(f.stage == stage for f in findings)}' for stage in stages)
        plural = 's' if len(findings) != 1 else ''
        lines.append(f'{len(findings)} construct{plural} to migrate{in_files} ({counts}).')
        blocking = sum(finding.blocks for finding in findings)
        if blocking == 1:
            lines.append('1 construct blocks stage 1: the script cannot run on compat_mts until it changes.')
        elif blocking:
            lines.append(f'{blocking} constructs block stage 1: the script cannot run on compat_mts until they change.')
    if files_failed:
        files, were = ('files', 'they were') if files_failed != 1 else ('file', 'it was')
        lines.append(f'{files_failed} {files} could not be read or parsed, so {were} not checked.')
    return '\n'.join(lines) + '\n'


def format_json(findings: Sequence[Finding], errors: Sequence[CheckError] = ()) -> str:
    """Findings for tools: `{"findings": [{file, line, col, construct, replacement, stage, note, blocks}, ...],
    "errors": [{file, line, col, message}, ...]}`; `blocks` is true for what must change before stage 1 runs."""
    document = {
        'findings': [dataclasses.asdict(finding) for finding in findings],
        'errors': [
            {'file': error.file, 'line': error.line, 'col': error.col, 'message': error.message} for error in errors
        ],
    }
    return json.dumps(document, indent=2) + '\n'
