"""The definitional ZooKeeper-era broker: control requests handled by the spec's own action.

What it is
    The broker side of the ZooKeeper-era controller protocol (Kafka's `KafkaApis`
    `handleLeaderAndIsrRequest`, `handleStopReplicaRequest`, `handleUpdateMetadataRequest`
    and `ReplicaManager.becomeLeaderOrFollower` / `stopReplicas` /
    `maybeUpdateMetadataCache`), as the conformance suites' oracle. It holds a state of the
    ZooKeeper-era spec (`spec.controller.zk_controller`) and hands every request to the
    spec's `deliver_request` action through the broker's channel, so what the broker does
    with a request is exactly what the model checker explored. The answer's error codes are
    the spec's `broker_verdict` (KIP-380's broker epoch, then the controller epoch) and
    `partition_verdict` (the leader epoch and the assignment).

    The broker starts as a process that has just registered with the broker epoch it was
    given and has seen no controller (controller epoch 0, Kafka's
    `KafkaController.InitialControllerEpoch`); `restart` is a new incarnation with a new
    broker epoch that keeps only its disk.
"""

from __future__ import annotations

from spec.controller.types import (
    ControlRequest,
    ControlResponse,
    KafkaError,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    ZkBrokerSettings,
    ZkBrokerView,
)
from spec.controller.zk_controller import (
    Broker,
    DeliverRequest,
    Role,
    ZkConfig,
    ZkState,
    deliver_request,
    initial_state,
)
from spec.controller.zk_requests import (
    Request,
    RequestKind,
    Verdict,
    broker_verdict,
    partition_verdict,
)


def spec_request(request: ControlRequest) -> Request:
    """The spec's form of a control request."""
    if isinstance(request, LeaderAndIsrRequest):
        return Request(
            RequestKind.LEADER_AND_ISR,
            request.controller_epoch,
            request.broker_epoch,
            leader=request.leader,
            leader_epoch=request.leader_epoch,
            isr=request.isr,
            zk_version=request.zk_version,
            replicas=request.replicas,
        )
    if isinstance(request, StopReplicaRequest):
        return Request(
            RequestKind.STOP_REPLICA, request.controller_epoch, request.broker_epoch, delete=request.delete
        )
    return Request(RequestKind.UPDATE_METADATA, request.controller_epoch, request.broker_epoch)


class ReferenceZkBroker:
    """A ZooKeeper-era broker whose every step is the spec's (see the module docstring)."""

    def __init__(self, settings: ZkBrokerSettings) -> None:
        self.broker_id = settings.broker_id
        # Only the rules matter to a delivered request; the rest of the cluster is the
        # spec's cluster before any topic exists, which the broker never looks at.
        self.config = ZkConfig(
            brokers=settings.broker_id + 1, assignment=(0,), initial_controller=0, topic_exists=False
        )
        state = initial_state(self.config)
        self.state = self._with_broker(state, Broker(session=settings.broker_epoch))
        self.log_deleted = 0

    def _with_broker(self, state: ZkState, broker: Broker) -> ZkState:
        brokers = (*state.brokers[: self.broker_id], broker, *state.brokers[self.broker_id + 1 :])
        return ZkState(state.zk, brokers, state.channels, state.history)

    @property
    def broker(self) -> Broker:
        """The spec's state of this broker."""
        return self.state.brokers[self.broker_id]

    def handle(self, request: ControlRequest) -> ControlResponse:
        """Deliver `request` to the broker through its channel (`deliver_request`)."""
        sent = spec_request(request)
        broker = self.broker
        verdict = broker_verdict(self.config.rules, sent, broker.session, broker.controller_epoch)
        partition_error = KafkaError.NONE
        if verdict is Verdict.ACCEPT and isinstance(request, LeaderAndIsrRequest):
            partition_error = partition_verdict(sent, self.broker_id, broker.leader_epoch).error
        if verdict is Verdict.ACCEPT and isinstance(request, StopReplicaRequest) and request.delete:
            self.log_deleted += 1
        channels = (
            *self.state.channels[: self.broker_id],
            (sent,),
            *self.state.channels[self.broker_id + 1 :],
        )
        queued = ZkState(self.state.zk, self.state.brokers, channels, self.state.history)
        delivered = deliver_request(self.config, queued, DeliverRequest(self.broker_id, 0))
        assert delivered is not None, "a live broker can always take the only request in its channel"
        self.state = delivered
        return ControlResponse(verdict.error, partition_error)

    def restart(self, broker_epoch: int) -> None:
        """The process stops and starts again, registering with `broker_epoch`: only the disk
        remains (as the spec's `broker_restart` builds the new incarnation)."""
        old = self.broker
        self.state = self._with_broker(
            self.state, Broker(session=broker_epoch, log=old.log, high_watermark=old.high_watermark)
        )

    def observe(self) -> ZkBrokerView:
        """What the broker knows now."""
        broker = self.broker
        return ZkBrokerView(
            broker_epoch=broker.session,
            controller_epoch=broker.controller_epoch,
            role=broker.role.value,
            leader=broker.leader,
            leader_epoch=broker.leader_epoch,
            isr=broker.isr,
            zk_version=broker.zk_version,
            leader_controller_epoch=broker.leader_controller_epoch if broker.role is Role.LEADER else 0,
            log_deleted=self.log_deleted,
        )
