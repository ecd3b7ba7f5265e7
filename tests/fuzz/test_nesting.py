"""`nests_deeper`, the bound on nesting every reader applies before decoding, against the depth
of the decoded value."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_checks.readers._common import MAX_NESTING, nests_deeper


def depth(value: Any) -> int:
    """Containers nested in `value`, itself included (a scalar: 0)."""
    if isinstance(value, list):
        return 1 + max((depth(item) for item in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(item) for item in value.values()), default=0)
    return 0


TRICKY_STRINGS = st.sampled_from(["[", "]", "{", "}", '\\"[', "[[[[", "\\\\", '"'])
values = st.recursive(
    st.one_of(st.integers(), st.none(), st.text(max_size=3), TRICKY_STRINGS),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=2), TRICKY_STRINGS), children),
    ),
    max_leaves=30,
)


@settings(max_examples=100)
@given(values, st.integers(0, 8))
def test_nests_deeper_is_the_depth_of_the_decoded_value(value, levels):
    text = json.dumps(value)
    assert nests_deeper(text, levels) == (depth(value) > levels)
    assert nests_deeper(text.encode(), levels) == (depth(value) > levels)


def test_the_bound_itself():
    for opener, closer in (("[", "]"), ('{"a": ', "}")):
        at_bound = opener * MAX_NESTING + "1" + closer * MAX_NESTING
        assert not nests_deeper(at_bound, MAX_NESTING)
        assert nests_deeper(opener + at_bound + closer, MAX_NESTING)
        assert nests_deeper(opener * 5000, MAX_NESTING)  # unbalanced: a decoder would descend it
    wide = "[" + ",".join(["[1]"] * 1000) + "]"  # many brackets, 2 levels
    assert not nests_deeper(wide, MAX_NESTING)
    assert not nests_deeper('["' + "[" * 500 + '"]', MAX_NESTING)  # brackets in a string


@settings(max_examples=300)
@given(st.text(alphabet='[]{}"\\ a1,:', max_size=40), st.integers(0, 6))
def test_the_quote_split_agrees_with_the_string_pattern(text, levels):
    """Bytes without a backslash cut strings out by splitting at quotes; `str` text, and bytes
    with a backslash, by the regular expression. Any text, balanced or not, gets one answer."""
    assert nests_deeper(text.encode(), levels) == nests_deeper(text, levels)
