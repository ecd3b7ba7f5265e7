"""What you import to write your own sequential model for ``kafkaspec verify --model MODULE:CLASS``.

    from kafkaspec.model import UNKNOWN, Input

    class Register:
        '''One register: write v, read -> v (Porcupine's registerModel, Knossos's register).'''

        def init(self) -> int:
            return 0

        def step(self, state: int, input: Input, output: object) -> int | None:
            if input.f == "write":
                return input.value
            return state if output is UNKNOWN or output == state else None

`Model` and `NondeterministicModel` are the protocols (structural: no base class needed),
`Input` what a call asked for, `UNKNOWN` the output of an indeterminate call. The contract,
the optional methods (``partition``, ``describe_operation``, ``describe_state``) and how the
search uses them are documented in `spark_checks.user_models`, where they are defined, and in
the README's "Your own model".
"""

from __future__ import annotations

from spark_checks.user_models import UNKNOWN, Input, Model, NondeterministicModel, Unknown

__all__ = ["UNKNOWN", "Input", "Model", "NondeterministicModel", "Unknown"]
