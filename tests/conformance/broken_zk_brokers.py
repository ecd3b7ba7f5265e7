"""Deliberately broken ZooKeeper-era brokers (`--target tests.conformance.broken_zk_brokers:NAME
--suite zk-broker`): each one bug of the kind the zk-broker suites exist to catch."""

from __future__ import annotations

from impl.zk_broker import ZkBroker
from spec.controller.types import KafkaError


class ObeysZombieControllers(ZkBroker):
    """A request from an older controller epoch is obeyed (the zombie controller is not fenced)."""

    def _fenced(self, controller_epoch: int, broker_epoch: int) -> KafkaError:
        if broker_epoch != -1 and broker_epoch < self.broker_epoch:
            return KafkaError.STALE_BROKER_EPOCH
        self.controller_epoch = max(self.controller_epoch, controller_epoch)
        return KafkaError.NONE


class ObeysEarlierIncarnations(ZkBroker):
    """A request addressed to an earlier incarnation of the broker is obeyed (no KIP-380)."""

    def _fenced(self, controller_epoch: int, broker_epoch: int) -> KafkaError:
        return super()._fenced(controller_epoch, -1)


class RestartKeepsControllerEpoch(ZkBroker):
    """A restarted broker remembers the controller epoch of its previous incarnation."""

    def restart(self, broker_epoch: int) -> None:
        kept = self.controller_epoch
        super().restart(broker_epoch)
        self.controller_epoch = kept
