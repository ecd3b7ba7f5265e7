"""`ZkBrokerUnderTest` over kafkaspec's ZooKeeper-era broker (`impl.zk_broker`).

The adapter the ZooKeeper-era broker suites drive when the target is `impl`: the broker
already speaks the plain types of `spec.controller.types` for one partition, so the adapter
only builds it; `impl/` may not import the conformance suite, which is why the factory lives
here.
"""

from __future__ import annotations

from impl.zk_broker import ZkBroker
from spec.controller.types import ZkBrokerSettings


def ImplZkBroker(settings: ZkBrokerSettings) -> ZkBroker:  # noqa: N802 (a factory, named as the target)
    """A fresh `impl.zk_broker.ZkBroker` with the suite's settings."""
    return ZkBroker(settings)
