"""Compile the spec (`spec/`) to C extension modules with mypyc (mypy's compiler, which
compiles mypy itself): the model checker runs 2.5-3x faster on the same source.

Usage: python -m kafkaspec.native [--jobs N] [--if-stale]     (`make native`; the install step of
`make run` and `make test` runs it with `--if-stale`, which keeps a build of the same source)

The spec stays plain, readable Python (frozen dataclasses, pure functions) and is never
changed: this build compiles a copy of it. mypyc turns attribute reads into struct loads and
calls between spec functions into C calls, but what `@dataclass` generates at run time stays
interpreted: each class's `__init__`, `__eq__` and `__hash__`, which the checker calls for
every state it builds, hashes and looks up (a transition costs 26,000 instructions in them
and the checker's loop alone, `bench.model_check --floor`). So the copy spells them out
in each `@fast_init` class and each plain frozen dataclass (`_spelled_out`), as `@dataclass`
and `spec._frozen` generate them, and mypyc compiles them too (`@dataclass` keeps the methods
a class defines; fields, `repr`, `dataclasses.fields` are unchanged). A frozen object keeps
its hash once computed (in `_hash` under `@cache_hash`, else in an attribute of the compiled
object that is no field), and hands it over as the object it keeps. The copy also has

* `__replace__`, what `spec._frozen.replace` generates per class, compiled, with one
  keyword-only parameter per field: where mypy knows the class of the object a `replace`
  call copies, mypyc calls it directly (`_specialize_replace`), with no dictionary of
  changes, and `replace` uses it for the other calls;
* each module-level `@memoized` function as a lookup in a dictionary of its module in front
  of the function (`_memo_edits`): `lru_cache` called from compiled code is a generic call
  that packs the arguments twice; the memos are emptied together by
  `spec._native_support.clear_memos`, as `bench.model_check` empties the `lru_cache`s;
* three rewrites of expressions mypyc compiles slowly (`_rewrite_expressions`): a tuple
  with one item replaced (`(*items[:i], value, *items[i + 1 :])`) built by one copy,
  `zip(a, b, strict=True)` in a plain `zip` mypyc turns into an indexed loop, with the lengths
  checked (`spec._native_support`, a module of the copy alone), and module constants marked
  `Final` (inlined or kept in a C static instead of looked up in the module's dictionary);
* `__reduce__` in every frozen dataclass: the checker's processes exchange states by pickle,
  and a compiled class has no `__dict__` to restore (a frozen one refuses `setattr`);
* the comparisons of `order=True` classes written out (that option refuses a class's own);
* `@mypyc_attr(native_class=False)` on the classes mypyc cannot compile: generic dataclasses
  (mypyc/mypyc#827, "Dataclass + Generic fails during sleight of hand") and subclasses of
  built-in exceptions other than `Exception`.

mypyc keeps only the text signature of a function or class as its docstring; the spec reads
docstrings at run time (an invariant explains a counterexample with its own), so the build
writes each one back into the generated C before compiling it.

The same build compiles `spec._compiled.ALSO_COMPILED`, the linearizability search and the
stages of `kafkaspec verify` over a Kafka history, as they are but for the classes mypyc cannot
keep native (`also_compiled_copy`); `ALSO_COMPILED` says what each gains, measured.

The result goes to `build/native/` with a manifest (a digest of every `spec/**/*.py`), and a
record of the source files' stats that lets a process check the digest without reading them;
`spec._compiled` imports it instead of the source, by default, while the digest is the
source's, so a stale build never shadows an edited module (`KAFKASPEC_NATIVE=0` forces the
source).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

from spec._compiled import (
    ALSO_COMPILED,
    BUILD,
    MANIFEST,
    compiled_modules,
    record_source_stats,
    source_digest,
)

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec"

_NON_NATIVE = "@mypyc_attr(native_class=False)"
_BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
    if name not in ("Exception", "BaseException")
}


@dataclass(frozen=True)
class _Field:
    name: str
    annotation: str
    default: str | None  # source of the default (a factory's call included); None: required
    init: bool
    compare: bool


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((item.value for item in call.keywords if item.arg == name), None)


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def _segment(lines: list[str], node: ast.expr) -> str:
    """The source of `node` (`ast.get_source_segment` splits the whole module on every call)."""
    assert node.end_lineno is not None and node.end_col_offset is not None
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first].encode()[node.col_offset : node.end_col_offset].decode()
    text = [lines[first].encode()[node.col_offset :].decode(), *lines[first + 1 : last]]
    return "\n".join([*text, lines[last].encode()[: node.end_col_offset].decode()])


def _fields(lines: list[str], cls: ast.ClassDef) -> list[_Field]:
    fields = []
    for item in cls.body:
        if not isinstance(item, ast.AnnAssign) or not isinstance(item.target, ast.Name):
            continue
        annotation = _segment(lines, item.annotation)
        if annotation.startswith(("ClassVar", "typing.ClassVar")):
            continue
        default: str | None = None
        init, compare = True, True
        value = item.value
        if isinstance(value, ast.Call) and _decorator_name(value) == "field":
            given = _keyword(value, "default")
            factory = _keyword(value, "default_factory")
            if given is not None:
                default = _segment(lines, given)
            elif factory is not None:
                default = f"{_segment(lines, factory)}()"
            init_flag = _keyword(value, "init")
            compare_flag = _keyword(value, "compare")
            init = not (isinstance(init_flag, ast.Constant) and init_flag.value is False)
            compare = not (isinstance(compare_flag, ast.Constant) and compare_flag.value is False)
        elif value is not None:
            default = _segment(lines, value)
        fields.append(_Field(item.target.id, annotation, default, init, compare))
    return fields


def _reduce(name: str, fields: list[_Field], indent: str) -> list[str]:
    """`__reduce__`: the class and its init fields, so unpickling calls the constructor."""
    arguments = "".join(f"self.{item.name}, " for item in fields if item.init)
    return [
        f"{indent}def __reduce__(self) -> tuple[object, tuple[object, ...]]:",
        f"{indent}    return ({name}, ({arguments}))",
    ]


HIDDEN_HASH = "_native_hash"
HASH_WORD = "_native_hash_word"
"""The hash once computed again, as a machine word (0: not yet) the compiled `tp_hash` slot
returns without a call (`_hash_slot_reads_the_word`)."""
_NUMBERS = frozenset({"int", "bool"})
"""Field types mypyc compares in C (`number_aliases` adds the spec's aliases of them)."""


def number_aliases(source: str) -> set[str]:
    """The module's names for `int` and `bool` (`BrokerId = int`, `ReplicaId: TypeAlias = int`)."""
    found = set()
    for statement in ast.parse(source).body:
        value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) else None
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        if isinstance(value, ast.Name) and value.id in _NUMBERS:
            found |= {target.id for target in targets if isinstance(target, ast.Name)}
    return found


def _methods(
    cls: ast.ClassDef,
    fields: list[_Field],
    cached_hash: bool,
    frozen: bool,
    order: bool,
    indent: str,
    numbers: frozenset[str] = _NUMBERS,
) -> list[str]:
    """`__init__`, `__eq__` and (frozen) `__hash__` as `@dataclass` and `spec._frozen` make them."""
    defined = {item.name for item in cls.body if isinstance(item, ast.FunctionDef)}
    name = cls.name
    lines: list[str] = []
    # A frozen class without `@cache_hash` keeps its hash in an attribute of the compiled
    # object that is no dataclass field (`__init__` declares it): the same value, computed
    # once (a state's requests and messages are hashed again with every state that holds them).
    hidden_hash = frozen and not cached_hash and "__init__" not in defined and "__hash__" not in defined
    if "__init__" not in defined:
        parameters = "".join(
            f", {item.name}: {item.annotation}" + (f" = {item.default}" if item.default is not None else "")
            for item in fields
            if item.init
        )
        lines.append(f"{indent}def __init__(self{parameters}) -> None:")
        for item in fields:
            value = item.name if item.init else item.default
            lines.append(f"{indent}    self.{item.name} = {value}  # type: ignore[misc]")
        # (mypy refuses an attribute outside a slotted dataclass's `__slots__`; mypyc gives it
        # a place in the object's struct as to any other attribute)
        if hidden_hash:
            lines.append(
                f"{indent}    self.{HIDDEN_HASH}: int | None = None  # type: ignore[misc, unused-ignore]"
            )
        if frozen and (cached_hash or hidden_hash) and "__hash__" not in defined:
            lines.append(
                f"{indent}    self.{HASH_WORD}: _native_i64 = 0  # type: ignore[misc, unused-ignore]"
            )
        elif not fields:
            lines.append(f"{indent}    pass")
    compared = [item for item in fields if item.compare]
    if "__eq__" not in defined:
        lines.append(f"{indent}def __eq__(self, other: object) -> bool:")
        lines.append(f"{indent}    if type(other) is not {name}:")
        lines.append(f"{indent}        return NotImplemented")
        # identity first, as the tuple comparison of the generated `__eq__` does: two states
        # share most of their parts, so most comparisons end there; numbers (compared in C)
        # before the parts, so that two different objects differ at the cheapest test
        scalars = [item for item in compared if item.annotation in numbers]
        tests = [f"self.{item.name} == other.{item.name}" for item in scalars] + [
            f"(self.{item.name} is other.{item.name} or self.{item.name} == other.{item.name})"
            for item in compared
            if item not in scalars
        ]
        lines.append(f"{indent}    return " + (" and ".join(tests) if tests else "True"))
    if order:
        # `order=True` is dropped from the copy (it refuses a class's own comparisons): the
        # four comparisons of the tuples of compared fields, as `@dataclass` generates them
        mine = "".join(f"self.{item.name}, " for item in compared)
        theirs = "".join(f"other.{item.name}, " for item in compared)
        for method, operator in (("__lt__", "<"), ("__le__", "<="), ("__gt__", ">"), ("__ge__", ">=")):
            lines.append(f"{indent}def {method}(self, other: object) -> bool:")
            lines.append(f"{indent}    if type(other) is not {name}:")
            lines.append(f"{indent}        return NotImplemented")
            lines.append(f"{indent}    return ({mine}) {operator} ({theirs})")
    if "__replace__" not in defined:
        # what `spec._frozen.replace` generates per class, compiled: one keyword-only parameter
        # per init field, `KEEP` when not given, so a call whose object's class mypyc knows
        # becomes a direct C call without a dictionary of changes (`_specialize_replace`); an
        # unknown field is a TypeError, as for the constructor
        initialized = [item for item in fields if item.init]
        parameters = "".join(f", {item.name}: object = _native_KEEP" for item in initialized)
        lines.append(f"{indent}def __replace__(self, /{', *' if initialized else ''}{parameters}) -> {name}:")
        lines.append(f"{indent}    return {name}(")
        lines.extend(
            f"{indent}        self.{item.name} if {item.name} is _native_KEEP"
            f" else _native_cast({item.annotation!r}, {item.name}),"
            for item in initialized
        )
        lines.append(f"{indent}    )")
    if "__reduce__" not in defined:
        lines += _reduce(name, fields, indent)
    if frozen and "__hash__" not in defined:
        fields_tuple = "".join(f"self.{item.name}, " for item in compared)
        if cached_hash or hidden_hash:
            # the cached hash is returned as the object it is kept as (`Any`, which is `int`
            # to the type checker): declared `int`, mypyc would convert it to its own integer
            # and back on every call (a state's cached hash is read three to four times per
            # transition: the memos' keys, the checker's lookup)
            kept = "_hash" if cached_hash else HIDDEN_HASH
            # (`object`, not `int | None`: narrowed to `int`, it would be converted too)
            lines.append(f"{indent}def __hash__(self) -> _NativeAny:")
            lines.append(f"{indent}    cached: object = self.{kept}")
            lines.append(f"{indent}    if cached is not None:")
            lines.append(f"{indent}        return cached")
            lines.append(f"{indent}    value = hash(({fields_tuple}))")
            lines.append(f"{indent}    self.{kept} = value  # type: ignore[misc, unused-ignore]")
            if "__init__" not in defined:
                lines.append(f"{indent}    self.{HASH_WORD} = value  # type: ignore[misc, unused-ignore]")
            lines.append(f"{indent}    return value")
        else:
            lines.append(f"{indent}def __hash__(self) -> int:")
            lines.append(f"{indent}    return hash(({fields_tuple}))")
    return lines


_CONSTANT = re.compile(r"^_*[A-Z][A-Z0-9_]*[A-Z0-9]$")
_NOT_FINAL = {"TypeVar", "ParamSpec", "NewType", "NamedTuple", "TypedDict", "TypeAlias"}


def _literal(node: ast.expr) -> bool:
    """A value made of literals only (`-1`, `1 << 16`, `"name"`)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    return isinstance(node, ast.BinOp) and _literal(node.left) and _literal(node.right)


def _final_candidate(value: ast.expr | None) -> bool:
    """A module constant's value that `Final` keeps its meaning for: a literal, a container
    display, or a call that makes no type (not a type alias, `TypeVar` and the like)."""
    if value is None:
        return False
    if isinstance(value, ast.Dict | ast.Set | ast.Tuple | ast.List):
        return True
    if isinstance(value, ast.Call):
        return _decorator_name(value) not in _NOT_FINAL
    return _literal(value)


def _simple(node: ast.expr) -> bool:
    """A name or a chain of attributes of a name: evaluating it twice reads the same value."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _replaced_item(node: ast.AST) -> tuple[ast.expr, ast.expr, ast.expr] | None:
    """(`items`, `index`, `value`) of a tuple display `(*items[:index], value, *items[index + 1 :])`
    (the tuple `items` with one item replaced), where `items` and `index` read the same when read
    twice and `value` holds no display of its own to rewrite; None for any other node."""
    if not isinstance(node, ast.Tuple) or len(node.elts) != 3:
        return None
    before, value, after = node.elts
    if not (
        isinstance(before, ast.Starred)
        and isinstance(after, ast.Starred)
        and isinstance(before.value, ast.Subscript)
        and isinstance(after.value, ast.Subscript)
        and isinstance(head := before.value.slice, ast.Slice)
        and isinstance(tail := after.value.slice, ast.Slice)
    ):
        return None
    items, index = before.value.value, head.upper
    if (
        head.lower is not None
        or head.step is not None
        or index is None
        or not _simple(items)
        or not _simple(index)
        or ast.dump(after.value.value) != ast.dump(items)
        or tail.upper is not None
        or tail.step is not None
        or not isinstance(tail.lower, ast.BinOp)
        or not isinstance(tail.lower.op, ast.Add)
        or ast.dump(tail.lower.left) != ast.dump(index)
        or not (isinstance(tail.lower.right, ast.Constant) and tail.lower.right.value == 1)
        or any(isinstance(part, ast.Starred | ast.Tuple) for part in ast.walk(value))
    ):
        return None
    return items, index, value


def _rewrite_expressions(source: str) -> tuple[str, set[str]]:
    """Three rewrites mypyc compiles much faster, with the same meaning; the names of
    `spec._native_support` the module then needs.

    * `(*items[:index], value, *items[index + 1 :])`, the spec's way of replacing one item of a
      tuple: mypyc builds it through a list, extended by two slices, then copied into a tuple
      (callgrind, zk-zombie-controller-fenced: 1,100 instructions a call, 411,000 calls);
      `with_item(items, index, value)` copies the tuple into a list once, sets the item and
      makes the tuple (the display's own way for an index outside the tuple): about 550;

    * `zip(a, b, strict=True)`: mypyc compiles a loop over `zip(a, b)` into an indexed loop,
      but a call with a keyword into a generic call of the builtin, which parses `strict` from
      a dictionary (8% of consumer-two-revocation-rounds' instructions, most of its step
      property): `zip(a, same_length(b, a))` keeps the length check (only when `a` is a name or
      attributes of one, so reading it twice reads the same);
    * a module constant (an UPPER_CASE name bound once, to a literal or a value that is no type)
      is marked `Final`: mypyc then inlines a literal and keeps any other value in a C static,
      where it would otherwise look the name up in the module's dictionary at every use.
    """
    tree = ast.parse(source)
    data = source.encode()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column

    def text(node: ast.expr) -> str:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return data[
            offset(node.lineno, node.col_offset) : offset(node.end_lineno, node.end_col_offset)
        ].decode()

    edits: list[tuple[int, int, str]] = []  # (start, end, new text), byte offsets
    needs: set[str] = set()

    def rewrite(node: ast.expr, new_text: str, need: str) -> None:
        assert node.end_lineno is not None and node.end_col_offset is not None
        edits.append(
            (offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset), new_text)
        )
        needs.add(need)

    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "zip"
            and len(node.args) >= 2
            and not any(isinstance(item, ast.Starred) for item in node.args)
            and [(item.arg, ast.unparse(item.value)) for item in node.keywords] == [("strict", "True")]
            and _simple(node.args[0])
        ):
            first = text(node.args[0])
            rest = "".join(f", _native_same_length({text(item)}, {first})" for item in node.args[1:])
            rewrite(node, f"zip({first}{rest})", "same_length")
        replaced = _replaced_item(node)
        if replaced is not None and isinstance(node, ast.Tuple):
            items, index, value = (text(part) for part in replaced)
            rewrite(node, f"_native_with_item({items}, {index}, {value})", "with_item")
    bound: dict[str, int] = {}
    for statement in tree.body:
        targets: list[ast.expr] = []
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
            targets = [statement.target]
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            for alias in statement.names:
                name = (alias.asname or alias.name).split(".")[0]
                bound[name] = bound.get(name, 0) + 1
        for target in targets:
            for name_node in ast.walk(target):
                if isinstance(name_node, ast.Name):
                    bound[name_node.id] = bound.get(name_node.id, 0) + 1
    rebound = {
        name for node in ast.walk(tree) if isinstance(node, ast.Global | ast.Nonlocal) for name in node.names
    }
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, annotation = statement.targets[0], None
        elif isinstance(statement, ast.AnnAssign) and statement.simple:
            target, annotation = statement.target, statement.annotation
        else:
            continue
        if (
            not isinstance(target, ast.Name)
            or not _CONSTANT.match(target.id)
            or bound.get(target.id) != 1
            or target.id in rebound
            or not _final_candidate(statement.value)
        ):
            continue
        if annotation is None:
            assert target.end_col_offset is not None
            at = offset(target.end_lineno or target.lineno, target.end_col_offset)
            edits.append((at, at, ": _NativeFinal"))
        elif not text(annotation).startswith(("Final", "typing.Final", "ClassVar")):
            assert annotation.end_lineno is not None and annotation.end_col_offset is not None
            start = offset(annotation.lineno, annotation.col_offset)
            end = offset(annotation.end_lineno, annotation.end_col_offset)
            edits.append((start, end, f"_NativeFinal[{text(annotation)}]"))
        else:
            continue
        needs.add("Final")
    for start, end, new in sorted(edits, reverse=True):
        data = data[:start] + new.encode() + data[end:]
    return data.decode(), needs


_PLAIN_OPTIONS = {"frozen", "slots", "order"}
_IMMUTABLE_DEFAULTS = {"tuple()", "frozenset()"}


def _spelled_out(cls: ast.ClassDef, fields: list[_Field], options: Mapping[str | None, object]) -> bool:
    """Whether a frozen `@dataclass` without `@fast_init` gets its methods spelled out as well:
    when it is one the generated methods cover (no base class, no `__post_init__`, only the
    options `frozen`, `slots` and `order`, defaults that may be shared). The requests and
    settings of the controllers are such classes; `@dataclass`'s own methods of the others
    stay interpreted."""
    return (
        options.get("frozen") is True
        and set(options) <= _PLAIN_OPTIONS
        and not cls.bases
        and not any(isinstance(item, ast.FunctionDef) and item.name.startswith("__") for item in cls.body)
        and all(
            item.default is None or "(" not in item.default or item.default in _IMMUTABLE_DEFAULTS
            for item in fields
        )
    )


MEMO = "_native_memo_"
UNCACHED = "_native_uncached_"


def _memo_edits(tree: ast.Module, lines: list[str]) -> list[tuple[int, int, list[str]]]:
    """Each module-level `@memoized` function (`spec._frozen.memoized`, an `lru_cache`) as a
    compiled memo: the function under another name (`UNCACHED`), and under its own name a
    function with the same signature that looks its arguments up in a dictionary of the module
    (`MEMO`, made by `spec._native_support.new_memo`, emptied by `clear_memos`) and calls it
    when they are not there. The same results, and equal arguments give the same object, as
    with `lru_cache`; but a call from compiled code is a C call, the key is the argument itself
    (one argument) or a tuple of them, and a hit touches no linked list. `lru_cache` called
    from compiled code takes a generic call, with the arguments packed into a tuple and then
    into a key (callgrind, consumer-two-revocation-rounds: about 2,000 instructions per hit,
    75,000 calls). Measured with the `with_item` rewrite (callgrind, the check alone, against the
    build before both): consumer-two-revocation-rounds 691 -> 643 M instructions,
    zk-zombie-controller-fenced 4,650 -> 4,378 M. A full memo is emptied
    (`spec._native_support.remember`) where `lru_cache` drops its least recently used entry:
    the same bound, `spec._frozen.MEMO_SIZE`. Functions with `*args` or `**kwargs` keep
    `lru_cache`. (first line, lines replaced, new lines), 0-based."""
    edits: list[tuple[int, int, list[str]]] = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        memo = [item for item in node.decorator_list if isinstance(item, ast.Name) and item.id == "memoized"]
        arguments = node.args
        if len(memo) != 1 or len(node.decorator_list) != 1 or arguments.vararg or arguments.kwarg:
            continue
        if node.returns is None:
            continue
        name = node.name
        positional = [item.arg for item in (*arguments.posonlyargs, *arguments.args)]
        keywords = [item.arg for item in arguments.kwonlyargs]
        names = positional + keywords
        if not names:
            continue
        key = names[0] if len(names) == 1 else "(" + ", ".join(names) + ",)"
        call = ", ".join([*positional, *(f"{item}={item}" for item in keywords)])
        returns = ast.unparse(node.returns)
        decorator = memo[0]
        edits.append((decorator.lineno - 1, 1, [""]))
        line = node.lineno - 1
        edits.append((line, 1, [lines[line].replace(f"def {name}(", f"def {UNCACHED}{name}(", 1)]))
        docstring: list[str] = []
        first = node.body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            docstring = lines[first.lineno - 1 : first.end_lineno]
        end = node.end_lineno or node.lineno
        edits.append(
            (
                end,
                0,
                [
                    "",
                    "",
                    f"{MEMO}{name}: _NativeFinal = _native_new_memo()",
                    "",
                    "",
                    f"def {name}({ast.unparse(arguments)}) -> {returns}:",
                    *docstring,
                    f"    key: object = {key}",
                    f"    found: _NativeAny = {MEMO}{name}.get(key, _native_MISSING)",
                    "    if found is not _native_MISSING:",
                    "        return found  # type: ignore[no-any-return, unused-ignore]",
                    f"    result = {UNCACHED}{name}({call})",
                    f"    _native_remember({MEMO}{name}, key, result)",
                    "    return result",
                ],
            )
        )
    return edits


def transform(source: str, numbers: frozenset[str] = _NUMBERS) -> str:
    """The module `source` with the methods of each `@fast_init` dataclass (and of each plain frozen
    one `_spelled_out` covers) spelled out, the
    classes mypyc cannot compile marked non-native, and the expressions mypyc compiles slowly
    rewritten (`_rewrite_expressions`)."""
    source, needs = _rewrite_expressions(source)
    tree = ast.parse(source)
    lines = source.splitlines()
    edits: list[tuple[int, int, list[str]]] = []  # (first line, lines replaced, new lines), 0-based
    needs_attr = False
    needs_cast = False
    memos = _memo_edits(tree, lines)
    if memos:
        edits += memos
        needs_cast = True
        needs.add("Final")
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        decorators = {_decorator_name(item): item for item in node.decorator_list}
        first = min((item.lineno for item in node.decorator_list), default=node.lineno) - 1
        indent = " " * node.col_offset
        bases = {_segment(lines, base) for base in node.bases}
        generic = any(base.startswith("Generic[") for base in bases)
        if ("dataclass" in decorators and generic) or bases & _BUILTIN_EXCEPTIONS:
            edits.append((first, 0, [indent + _NON_NATIVE]))
            needs_attr = True
            continue
        if "dataclass" not in decorators:
            continue
        dataclass_call = decorators["dataclass"]
        options = {
            item.arg: item.value.value
            for item in (dataclass_call.keywords if isinstance(dataclass_call, ast.Call) else [])
            if isinstance(item.value, ast.Constant)
        }
        fields = _fields(lines, node)
        if "fast_init" not in decorators and not _spelled_out(node, fields, options):
            # pickle (the checker's processes exchange states): a native class has no
            # `__dict__` to restore, and a frozen one refuses `setattr`; rebuild it instead
            if all(item.init or item.default is not None for item in fields):
                end = node.end_lineno or node.lineno
                edits.append((end, 0, _reduce(node.name, fields, indent + "    ")))
            continue
        order = bool(options.get("order", False))
        methods = _methods(
            node,
            fields,
            "cache_hash" in decorators,
            bool(options.get("frozen", False)),
            order,
            indent + "    ",
            numbers,
        )
        if order:
            line = dataclass_call.lineno - 1
            edits.append((line, 1, [lines[line].replace(", order=True", "")]))
        needs_cast = True
        end = node.end_lineno or node.lineno
        edits.append((end, 0, methods))
        # the methods are the class's own now: the run-time decorators must not replace them
        edits += [
            (decorators[name].lineno - 1, 1, [""])
            for name in ("fast_init", "cache_hash")
            if name in decorators
        ]
    for first, count, new in sorted(edits, key=lambda edit: (edit[0], edit[1]), reverse=True):
        lines[first : first + count] = new
    text = "\n".join(lines) + "\n"
    imports = "from mypy_extensions import mypyc_attr\n" if needs_attr else ""
    if needs_cast:
        imports += "from typing import Any as _NativeAny, cast as _native_cast\n"
        imports += "from mypy_extensions import i64 as _native_i64\n"
        imports += "from spec._native_support import KEEP as _native_KEEP\n"
    if memos:
        imports += (
            "from spec._native_support import MISSING as _native_MISSING, new_memo as _native_new_memo, "
            "remember as _native_remember\n"
        )
    if "Final" in needs:
        imports += "from typing import Final as _NativeFinal\n"
    if "same_length" in needs:
        imports += "from spec._native_support import same_length as _native_same_length\n"
    if "with_item" in needs:
        imports += "from spec._native_support import with_item as _native_with_item\n"
    if imports:
        future = "from __future__ import annotations\n"
        text = text.replace(future, future + "\n" + imports, 1)
    return text


def also_compiled_copy(source: str) -> str:
    """`source` (an `ALSO_COMPILED` module) as mypyc compiles it: each frozen dataclass and each
    class with a base other than `Exception` or `NamedTuple` marked non-native
    (`@mypyc_attr(native_class=False)`); nothing else changes. Frozen dataclasses go to worker
    processes and Spark tasks by pickle, which a native frozen class refuses (no `__dict__`, no
    `setattr` to restore its fields), and `dataclasses.replace` copies them: as plain Python
    classes they cost nothing measurable (few, built per part, not per call). mypyc cannot
    compile a class that subclasses a generic ABC (`Sequence[Call]`) or a built-in exception
    other than `Exception`. The plain classes stay native: the checks' working state, built and
    read per call (one that crosses processes says how to rebuild it, `__reduce__`)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    marked = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        frozen = any(
            isinstance(item, ast.Call)
            and _decorator_name(item) == "dataclass"
            and any(
                keyword.arg == "frozen" and isinstance(keyword.value, ast.Constant) and keyword.value.value
                for keyword in item.keywords
            )
            for item in node.decorator_list
        )
        if frozen or {_segment(lines, base) for base in node.bases} - {"Exception", "NamedTuple"}:
            first = min((item.lineno for item in node.decorator_list), default=node.lineno) - 1
            marked.append(first)
            lines[first] = " " * node.col_offset + _NON_NATIVE + "\n" + lines[first]
    if not marked:
        return source
    future = "from __future__ import annotations"
    lines.insert(lines.index(future) + 1, "from mypy_extensions import mypyc_attr")
    return "\n".join(lines) + "\n"


SUPPORT = "_native_support"
SUPPORT_SOURCE = '''"""What the compiled copy of the spec uses beside the source (from `kafkaspec.native`)."""

from __future__ import annotations

from collections.abc import Sized
from typing import Any, Final, TypeVar

from spec._frozen import MEMO_SIZE

KEEP: Final = object()
"""The default of each parameter of a generated `__replace__`: the field keeps its value."""

MISSING: Final = object()
"""What a compiled memo answers for arguments it has not seen."""

_MEMOS: Final[list[dict[Any, Any]]] = []


def new_memo() -> dict[Any, Any]:
    """An empty memo for a compiled `@memoized` function, emptied with the others by `clear_memos`."""
    memo: dict[Any, Any] = {}
    _MEMOS.append(memo)
    return memo


def remember(memo: dict[Any, Any], key: object, result: object) -> None:
    """Keep `result` for `key`; a memo that holds `MEMO_SIZE` results is emptied first."""
    if len(memo) >= MEMO_SIZE:
        memo.clear()
    memo[key] = result


def clear_memos() -> None:
    """Empty every compiled memo (what `cache_clear` does for each `lru_cache` of the source)."""
    for memo in _MEMOS:
        memo.clear()

SizedT = TypeVar("SizedT", bound=Sized)


def with_item(items: tuple[Any, ...], index: int, value: object) -> tuple[Any, ...]:
    """`(*items[:index], value, *items[index + 1 :])`: `items` with the item at `index` replaced."""
    if 0 <= index < len(items):
        changed = list(items)
        changed[index] = value
        return tuple(changed)
    return (*items[:index], value, *items[index + 1 :])


def same_length(items: SizedT, first: Sized) -> SizedT:
    """`items`, checked to be as long as `first` (what `zip(first, items, strict=True)` checks)."""
    if len(items) != len(first):
        raise ValueError("zip() arguments have different lengths")
    return items
'''
"""The module of `SUPPORT` in the copy: a module of its own, so every module shares one `KEEP`."""


def write_sources(target: Path) -> list[Path]:
    """Write the transformed copy of `spec/` under `target`, and `ALSO_COMPILED` (the
    linearizability search) unchanged; the modules to compile (not the packages' `__init__`)."""
    if target.exists():
        shutil.rmtree(target)
    modules = []
    paths = sorted(SPEC.rglob("*.py"))
    numbers = _NUMBERS.union(*(number_aliases(path.read_text()) for path in paths))
    for path in paths:
        relative = path.relative_to(ROOT)
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text()
        destination.write_text(text if path.name == "__init__.py" else transform(text, numbers))
        if path.name not in ("__init__.py", "_compiled.py"):
            modules.append(relative)
    support = target / "spec" / f"{SUPPORT}.py"
    support.write_text(SUPPORT_SOURCE)
    modules.append(support.relative_to(target))
    (target / "spec" / "py.typed").write_text("")
    # `ALSO_COMPILED` with their classes marked for mypyc (`also_compiled_copy`), with the
    # packages they import from, which mypyc reads for their types only: it compiles the modules
    # it is given and calls the others as Python.
    for package in sorted({Path(name).parts[0] for name in ALSO_COMPILED} | {"reference"}):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            text = path.read_text()
            destination.write_text(also_compiled_copy(text) if relative.as_posix() in ALSO_COMPILED else text)
    modules.extend(Path(name) for name in ALSO_COMPILED)
    return modules


_TABLE = re.compile(
    r"static (PyMethodDef|PyTypeObject) (?:CPyType_)?(\w+?)(_methods|_template_)\[?\]? = \{(.*?)\n\};", re.S
)
_METHOD = re.compile(r'\{"(\w+)",(\s*\(PyCFunction\)\w+,\s*[\w |]+,\s*)PyDoc_STR\(("(?:[^"\\]|\\.)*"|NULL)\)')
_TYPE_DOC = re.compile(r'\.tp_doc = PyDoc_STR\(("(?:[^"\\]|\\.)*"|NULL)\)')


def docstrings(source: str) -> dict[str, dict[str, str]]:
    """The docstrings of a module's functions (under "") and of its classes and their methods
    (under the class's name; the class's own under "")."""
    tree = ast.parse(source)
    found: dict[str, dict[str, str]] = {"": {}}
    module_doc = ast.get_docstring(tree, clean=False)
    if module_doc is not None:
        found[""][""] = module_doc
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                found[""][node.name] = doc
        elif isinstance(node, ast.ClassDef):
            members = found.setdefault(node.name, {})
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                members[""] = doc
            for item in node.body:
                if (
                    isinstance(item, ast.FunctionDef)
                    and (doc := ast.get_docstring(item, clean=False)) is not None
                ):
                    members[item.name] = doc
    return found


def _c_string(text: str) -> str:
    escaped = "".join(
        chr(byte) if 32 <= byte < 127 and byte not in (34, 92, 63) else f"\\{byte:03o}"
        for byte in text.encode()
    )
    return f'"{escaped}"'


def _with_doc(literal: str, doc: str | None) -> str:
    """A C docstring initializer (`NULL`, or mypyc's text signature) with `doc` after it."""
    if doc is None:
        return literal
    if literal == "NULL":
        return _c_string(doc)
    return f"{literal} {_c_string(doc)}"


def restore_docstrings(c_source: str, docs: dict[str, dict[str, str]]) -> str:
    """Give the compiled functions and classes of a module the docstrings of its source: mypyc
    keeps only their text signatures, and the spec reads docstrings at run time (invariants
    explain themselves with them; `kafkaspec docs` shows them)."""
    module = re.search(r"static PyMethodDef (\w+)module_methods\[\]", c_source)
    if module is None:
        return c_source
    prefix = module.group(1)

    def table(match: re.Match[str]) -> str:
        kind, name, _, body = match.groups()
        if name == f"{prefix}module":
            members = docs[""]
        elif name.startswith(f"{prefix}___") and name[len(prefix) + 3 :] in docs:
            members = docs[name[len(prefix) + 3 :]]
        else:
            return match.group(0)  # a closure's or generator's class
        if kind == "PyTypeObject":
            body = _TYPE_DOC.sub(
                lambda doc: f".tp_doc = PyDoc_STR({_with_doc(doc.group(1), members.get(''))})", body
            )
        else:
            body = _METHOD.sub(
                lambda entry: (
                    f'{{"{entry.group(1)}",{entry.group(2)}PyDoc_STR('
                    f"{_with_doc(entry.group(3), members.get(entry.group(1)))})"
                ),
                body,
            )
        start, end = match.span(4)
        return match.group(0)[: start - match.start()] + body + match.group(0)[end - match.start() :]

    c_source = re.sub(
        rf'(static struct PyModuleDef {prefix}module = {{\n\s*PyModuleDef_HEAD_INIT,\n\s*"[\w.]+",\n\s*)'
        r"NULL, /\* docstring \*/",
        lambda match: match.group(1) + _with_doc("NULL", docs[""].get("")) + ",",
        c_source,
    )
    return _TABLE.sub(table, c_source)


def _compile_in_parallel(jobs: int) -> None:
    """Make setuptools compile one extension's C files `jobs` at a time: mypyc puts all the
    modules' code in one shared library of one C file per module (`multi_file`), which
    setuptools would compile one after the other."""
    from concurrent.futures import ThreadPoolExecutor

    from setuptools._distutils.ccompiler import CCompiler  # type: ignore[import-untyped]

    compile_one = CCompiler.compile

    def compile_all(self: Any, sources: list[str], *args: Any, **options: Any) -> list[str]:
        with ThreadPoolExecutor(jobs) as pool:
            parts = pool.map(lambda source: compile_one(self, [source], *args, **options), sources)
            return [name for part in parts for name in part]

    CCompiler.compile = compile_all


def _specialize_replace() -> bool:
    """Have mypyc compile `replace(obj, name=value, ...)` (`spec._frozen.replace`) as a direct
    call of the generated `__replace__` of `obj`'s class when the type checker knows that class:
    no dictionary of changes is built, no method looked up, no field tested by name. Other calls
    (a type variable's object, `**changes`) stay calls of `replace`, which finds the same
    `__replace__`. A specializer is mypyc's own way of compiling calls of a named function
    (`mypyc.irbuild.specialize`, as it compiles `len` or `isinstance`); its interface is
    internal, so without it the build goes on with plain calls. False when it is missing."""
    try:
        from mypy.nodes import ARG_NAMED, ARG_POS, CallExpr, RefExpr
        from mypyc.ir.ops import Value
        from mypyc.ir.rtypes import RInstance
        from mypyc.irbuild.builder import IRBuilder
        from mypyc.irbuild.specialize import specializers
    except ImportError:
        return False

    def direct(builder: IRBuilder, expr: CallExpr, callee: RefExpr) -> Value | None:
        if (
            not expr.args
            or expr.arg_kinds[0] != ARG_POS
            or any(kind != ARG_NAMED for kind in expr.arg_kinds[1:])
        ):
            return None
        target = builder.node_type(expr.args[0])
        if not isinstance(target, RInstance) or not target.class_ir.has_method("__replace__"):
            return None
        method = target.class_ir.get_method("__replace__")
        names = {argument.name for argument in method.sig.args} if method is not None else set()
        if not all(name in names for name in expr.arg_names[1:]):
            return None  # an unknown field: the call raises as it would through `replace`
        obj = builder.accept(expr.args[0])
        values = [builder.accept(argument) for argument in expr.args[1:]]
        return builder.gen_method_call(
            obj,
            "__replace__",
            values,
            builder.node_type(expr),
            expr.line,
            list(expr.arg_kinds[1:]),
            list(expr.arg_names[1:]),
        )

    specializers.setdefault(("spec._frozen.replace", None), []).append(direct)
    return True


def _hash_slot_reads_the_word() -> bool:
    """Have the `tp_hash` slot of each compiled class with `HASH_WORD` return that word when it is
    set, without calling the class's `__hash__` (which returns the hash as a Python integer, that
    the slot would convert): a state's parts are hashed again with every state and memo key that
    holds them, 30-40 times per transition on the composed models. A word of 0 (not yet
    computed, or a hash that is 0) goes through `__hash__`. mypyc's slot table is internal
    (`mypyc.codegen.emitclass.SLOT_DEFS`); without it the build goes on with mypyc's own slot.
    False then."""
    try:
        from mypyc.codegen import emitclass
        from mypyc.codegen.emit import Emitter
        from mypyc.ir.class_ir import ClassIR
        from mypyc.ir.func_ir import FuncIR
        from mypyc.ir.rtypes import int64_rprimitive
    except ImportError:
        return False
    slot, generate = emitclass.SLOT_DEFS["__hash__"]

    def reading_the_word(cl: ClassIR, fn: FuncIR, emitter: Emitter) -> str:
        called = generate(cl, fn, emitter)
        if cl.attributes.get(HASH_WORD) != int64_rprimitive:
            return called
        name = f"{called}_word"
        emitter.emit_line(f"static Py_ssize_t {name}(PyObject *self) {{")
        word = f"(({cl.struct_name(emitter.names)} *)self)->{emitter.attr(HASH_WORD)}"
        emitter.emit_line(f"int64_t word = {word};")
        emitter.emit_line("if (word != 0) return (Py_ssize_t)word;")
        emitter.emit_line(f"return {called}(self);")
        emitter.emit_line("}")
        return name

    table = emitclass.SLOT_DEFS
    if not isinstance(table, dict):
        return False
    table["__hash__"] = (slot, reading_the_word)
    return True


def build(jobs: int) -> dict[str, str]:
    """Compile the spec into `build/native/`; the relative path of each extension module."""
    from mypyc.build import mypycify
    from setuptools import setup  # type: ignore[import-untyped]

    source_root = BUILD / "src"
    digest = source_digest(SPEC)  # of the source as this build reads it
    MANIFEST.unlink(missing_ok=True)
    modules = write_sources(source_root)
    _compile_in_parallel(jobs)
    _specialize_replace()
    _hash_slot_reads_the_word()
    previous = Path.cwd()
    os.chdir(source_root)  # mypyc names the modules by their paths from here
    try:
        extensions = mypycify(
            [str(module) for module in modules], opt_level="3", multi_file=True, group_name="spec_native"
        )
        for module in modules:
            c_file = source_root / "build" / f"__native_{'___'.join(module.with_suffix('').parts)}.c"
            source = (source_root / module).read_text()
            c_file.write_text(restore_docstrings(c_file.read_text(), docstrings(source)))
        setup(name="kafkaspec-native", ext_modules=extensions, script_args=["build_ext", "--inplace"])
    finally:
        os.chdir(previous)
    built = {
        ".".join(path.relative_to(source_root).parts).split(".cpython")[0]: path.relative_to(BUILD).as_posix()
        for path in source_root.rglob(f"*{EXTENSION_SUFFIXES[0]}")
        if path.relative_to(source_root).parts[0] != "build"  # setuptools' own copies
    }
    manifest = {"cache_tag": sys.implementation.cache_tag, "digest": digest, "modules": built}
    MANIFEST.write_text(json.dumps(manifest, indent=1))
    return built


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="C files compiled at once")
    parser.add_argument("--if-stale", action="store_true", help="keep a build of the same source")
    arguments = parser.parse_args()
    if arguments.if_stale and compiled_modules() is not None:
        os.utime(MANIFEST)  # newer than the sources again, for `make native`
        record_source_stats()
        print(f"kafkaspec: the compiled spec in {BUILD} matches the source: kept")
        return
    started, cpu = time.perf_counter(), time.process_time()
    built = build(arguments.jobs)
    if not record_source_stats():
        sys.exit(f"kafkaspec: the spec changed while {BUILD} was built: `make native` again")
    print(
        f"kafkaspec: {len(built)} compiled modules in {BUILD} ({time.perf_counter() - started:.0f} s; "
        f"{time.process_time() - cpu:.0f} CPU-s in this process, the C compiler's apart): "
        "the spec runs compiled"
    )


if __name__ == "__main__":
    main()
