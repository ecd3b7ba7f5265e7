"""The ZooKeeper-era controller's requests to brokers, their channels, and the protocol rules.

Requests (`ControllerChannelManager`, `AbstractControlRequest`)
    The controller tells brokers what to do with three requests, each carrying the
    controller's epoch and (since KIP-380) the broker epoch the controller knows for the
    recipient:

    * `LeaderAndIsr`: for a partition, its leader, leader epoch, ISR, the zkVersion of the
      state znode and the replica assignment; a broker becomes leader or follower.
    * `StopReplica`: stop fetching (and, with `delete`, delete the replica's log). Before
      KIP-570 (Kafka 2.6) it carried no leader epoch; this is that version.
    * `UpdateMetadata`: refresh the broker's metadata cache. Its only effect the properties
      here can see is that the broker learns the controller epoch, which is what fences
      older controllers, so the cache contents are left out. The model sends it where it is
      the first request a broker gets from a controller (failover, a broker starting up); the
      others Kafka sends (after every election and ISR change) would only repeat the same
      controller epoch to the same broker incarnation, and are left out too.

Channels
    Each broker has one channel holding the requests on their way to it, from any
    controller, in the order they were sent. One controller's requests to a broker arrive in
    that order (`ControllerChannelManager` keeps one queue and one connection per broker), but
    two controllers, a zombie and its successor, talk to the same broker at once, so their
    requests interleave in any way. A request may also be duplicated (delivered now and again
    later) or lost, within the scenario's bounds. A request sent to a broker that already has
    the same request in flight is the same message. Requests to a broker the controller
    considers dead are not sent (the channel manager has no connection to it,
    `ControllerChannelManager.removeBroker`) and those in flight stay (Kafka's send thread
    retries them until the broker is removed), so a broker that bounces faster than the
    controller notices receives its previous incarnation's requests: KIP-380's second problem.

Protocol rules (named, so a counterexample can be replayed against the rule it needs)
    `stale-controller-epoch`         a broker refuses a request whose controller epoch is older
                                     than the newest it has seen (STALE_CONTROLLER_EPOCH, since
                                     Kafka 0.8; `ReplicaManager.becomeLeaderOrFollower`,
                                     `stopReplicas`, `maybeUpdateMetadataCache`)
    `controller-epoch-zk-fencing`    every ZooKeeper write of the controller is a multi-op that
                                     also checks `/controller_epoch`'s zkVersion, so a zombie
                                     controller's writes fail with ControllerMovedException
                                     (KAFKA-6082, Kafka 2.2)
    `conditional-isr-writes`         a leader's ISR change is a conditional write on the zkVersion
                                     it learned from LeaderAndIsr (`ReplicationUtils.updateLeaderAndIsr`),
                                     so it cannot overwrite a newer controller decision
    `broker-epochs`                  KIP-380 (Kafka 2.2): control requests carry the recipient's
                                     broker epoch (its registration czxid) and a broker refuses
                                     one older than its own (STALE_BROKER_EPOCH); the controller
                                     detects bounced brokers by a changed epoch and refuses a
                                     ControlledShutdown with a stale one
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from spec._frozen import cache_hash, fast_init
from spec.controller.kraft_errors import KafkaError

UNKNOWN_BROKER_EPOCH = -1
"""`AbstractControlRequest.UNKNOWN_BROKER_EPOCH`: sent by a controller without KIP-380."""


class Rule(enum.Enum):
    """A protocol rule the model can switch off, to show the counterexample it prevents."""

    STALE_CONTROLLER_EPOCH = "stale-controller-epoch"
    CONTROLLER_EPOCH_ZK_FENCING = "controller-epoch-zk-fencing"
    CONDITIONAL_ISR_WRITES = "conditional-isr-writes"
    BROKER_EPOCHS = "broker-epochs"

    __hash__ = object.__hash__


ALL_RULES: frozenset[Rule] = frozenset(Rule)
"""Kafka 2.2 to 3.x in ZooKeeper mode: every rule in force."""

RULE_SETS: dict[str, frozenset[Rule]] = {
    "kafka-2.2": ALL_RULES,
    "before-kip-380": ALL_RULES - {Rule.BROKER_EPOCHS},
    "before-kafka-6082": ALL_RULES - {Rule.CONTROLLER_EPOCH_ZK_FENCING, Rule.BROKER_EPOCHS},
    **{f"without-{rule.value}": ALL_RULES - {rule} for rule in Rule},
}
"""Named rule sets: Kafka's releases, and Kafka 2.2 with one rule switched off."""


def parse_rules(text: str) -> frozenset[Rule]:
    """A rule set's name (`kafka-2.2`, `without-broker-epochs`, ...), `none`, or rule names
    separated by commas."""
    cleaned = text.strip().lower()
    if cleaned in RULE_SETS:
        return RULE_SETS[cleaned]
    if cleaned == "none":
        return frozenset()
    chosen: set[Rule] = set()
    for part in cleaned.split(","):
        for rule in Rule:
            if rule.value == part.strip():
                chosen.add(rule)
                break
        else:
            known = ", ".join([*RULE_SETS, "none", *(rule.value for rule in Rule)])
            raise ValueError(f"unknown rule or rule set {part.strip()!r} (known: {known})")
    return frozenset(chosen)


def rules_name(rules: frozenset[Rule]) -> str:
    """The name of a rule set, or its rules separated by commas."""
    for name, members in RULE_SETS.items():
        if members == rules:
            return name
    return ",".join(sorted(rule.value for rule in rules)) or "none"


class RequestKind(enum.IntEnum):
    """The three control requests."""

    LEADER_AND_ISR = 0
    STOP_REPLICA = 1
    UPDATE_METADATA = 2


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True, order=True)
class Request:
    """One control request on its way to a broker (fields a kind does not use keep their defaults)."""

    kind: RequestKind
    controller_epoch: int
    broker_epoch: int  # the recipient's epoch as the controller knows it, or UNKNOWN_BROKER_EPOCH
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    zk_version: int = -1
    replicas: tuple[int, ...] = ()  # the assignment (LeaderAndIsr)
    delete: bool = False  # StopReplica: delete the log too
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


def with_request(channel: tuple[Request, ...], request: Request) -> tuple[Request, ...]:
    """`channel` with `request` sent last (a request already in flight is the same message)."""
    if request in channel:
        return channel
    return (*channel, request)


def deliverable(channel: tuple[Request, ...], index: int) -> bool:
    """The `index`-th request can arrive now: no request of the same controller (epoch) was
    sent before it. One controller's requests to a broker travel in order on one connection;
    two controllers' requests (a zombie's and its successor's) interleave freely."""
    epoch = channel[index].controller_epoch
    return all(earlier.controller_epoch != epoch for earlier in channel[:index])


def without_request(channel: tuple[Request, ...], index: int) -> tuple[Request, ...]:
    """`channel` once its `index`-th request was delivered or lost."""
    return (*channel[:index], *channel[index + 1 :])


class Verdict(enum.Enum):
    """What a broker does with a control request (the top-level error of its response)."""

    ACCEPT = "accepted"
    STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
    STALE_CONTROLLER_EPOCH = "STALE_CONTROLLER_EPOCH"

    __hash__ = object.__hash__

    @property
    def error(self) -> KafkaError:
        """The response's top-level error code."""
        if self is Verdict.STALE_BROKER_EPOCH:
            return KafkaError.STALE_BROKER_EPOCH
        if self is Verdict.STALE_CONTROLLER_EPOCH:
            return KafkaError.STALE_CONTROLLER_EPOCH
        return KafkaError.NONE


def broker_verdict(
    rules: frozenset[Rule], request: Request, own_broker_epoch: int, known_controller_epoch: int
) -> Verdict:
    """The checks every control request passes before a broker looks at its partitions:
    KIP-380's broker epoch (`KafkaApis.isBrokerEpochStale`: older than the broker's own epoch
    is stale; newer is possible, KAFKA-9839) and the controller epoch."""
    if (
        Rule.BROKER_EPOCHS in rules
        and request.broker_epoch != UNKNOWN_BROKER_EPOCH
        and request.broker_epoch < own_broker_epoch
    ):
        return Verdict.STALE_BROKER_EPOCH
    if Rule.STALE_CONTROLLER_EPOCH in rules and request.controller_epoch < known_controller_epoch:
        return Verdict.STALE_CONTROLLER_EPOCH
    return Verdict.ACCEPT


class PartitionVerdict(enum.Enum):
    """What a broker does with the partition of an accepted LeaderAndIsr
    (`ReplicaManager.becomeLeaderOrFollower`, ZooKeeper mode); `error` is the partition's
    error code in the response."""

    APPLIED = "applied"  # a newer leader epoch, and the broker is a replica: it leads or follows
    SAME_EPOCH = "same-epoch"  # the leader epoch it has: nothing changes, no error
    OLDER_LEADER_EPOCH = "older-leader-epoch"  # ignored; Kafka answers STALE_CONTROLLER_EPOCH
    NOT_A_REPLICA = "not-a-replica"  # newer, but the assignment leaves the broker out

    __hash__ = object.__hash__

    @property
    def error(self) -> KafkaError:
        """The partition's error code in the LeaderAndIsr response."""
        if self is PartitionVerdict.OLDER_LEADER_EPOCH:
            return KafkaError.STALE_CONTROLLER_EPOCH
        if self is PartitionVerdict.NOT_A_REPLICA:
            return KafkaError.UNKNOWN_TOPIC_OR_PARTITION
        return KafkaError.NONE


def accepts_leader_epoch(request_epoch: int, current_epoch: int) -> bool:
    """`becomeLeaderOrFollower`'s per-partition check: only a newer leader epoch is applied
    (an equal one is ignored too in ZooKeeper mode; KRaft's controller re-sends equal epochs,
    ZooKeeper's never does)."""
    return request_epoch > current_epoch


def partition_verdict(request: Request, broker_id: int, current_epoch: int) -> PartitionVerdict:
    """The per-partition check of an accepted LeaderAndIsr (`accepts_leader_epoch`), and
    whether the broker is a replica of the assignment: only then does it lead or follow."""
    if accepts_leader_epoch(request.leader_epoch, current_epoch):
        return PartitionVerdict.APPLIED if broker_id in request.replicas else PartitionVerdict.NOT_A_REPLICA
    if request.leader_epoch == current_epoch:
        return PartitionVerdict.SAME_EPOCH
    return PartitionVerdict.OLDER_LEADER_EPOCH
