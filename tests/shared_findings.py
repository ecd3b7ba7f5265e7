"""The scenarios' findings shared by the whole test run: each named scenario, as defined, is
checked once (`kafkaspec.outcomes.FindingsCache`) and its outcome serves the scenario tests of
its machine, the pinned explanations, `check --all` and the documentation build.

Only outcomes of scenarios as defined, under the unmodified spec, belong here: a test that
mutates the spec (monkeypatch) or changes a scenario's bound or configuration calls
`run_scenario` itself. The cache refuses a redefined scenario (`kafkaspec.outcomes.reusable`);
it cannot see a monkeypatch.
"""

from __future__ import annotations

from kafkaspec.outcomes import FindingsCache

SHARED_FINDINGS = FindingsCache()
"""One per test process, like the memo dictionaries the scenario tests kept before."""
