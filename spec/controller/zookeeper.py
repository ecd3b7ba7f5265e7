"""ZooKeeper as the ZooKeeper-era Kafka controller uses it: sessions, ephemeral znodes, versions, watches.

What it is
    The part of a ZooKeeper ensemble that Kafka's controller protocol depends on, as a frozen
    value with pure operations. Only the znodes Kafka reads and writes for one partition are
    kept (paths as in `kafka.zk.ZkData`):

    * `/brokers/ids/<id>`: each broker's ephemeral registration (`BrokerIdZNode`). It lives
      as long as the session that created it. Its creation zxid (`czxid`) is the broker's
      *broker epoch* of KIP-380: a broker that bounces registers again with a larger one.
      A broker registers right after opening its session, so the model identifies the
      session with that zxid: `sessions[b]` is both the live session and the broker epoch.
    * `/controller`: the ephemeral node whose creator is the active controller
      (`ControllerZNode`); `/controller_epoch`: the controller epoch, incremented in the same
      multi-op that creates `/controller` (`KafkaZkClient.registerControllerAndIncrementControllerEpoch`).
      Its zkVersion moves with its value, so the value stands for both.
    * `/brokers/topics/<t>/partitions/<p>/state`: `LeaderIsrAndControllerEpoch` with its
      zkVersion (`PartitionZnode`), written by the controller (elections, ISR removals) and by
      the partition leader (its own ISR changes), each write conditional on the zkVersion.
    * `/brokers/topics/<t>`: the replica assignment; `/admin/reassign_partitions`: a
      reassignment asked for by an administrator.

Sessions and expiry
    A session expires when ZooKeeper stops hearing from its client for the session timeout
    (`zookeeper.session.timeout.ms`): the broker crashed, or it is alive but paused or
    partitioned away. Expiry deletes the session's ephemeral znodes at once; the client
    learns of it only when it reconnects. Until then a live broker whose session expired is a
    *zombie*: it still acts on what it believes, but every ZooKeeper operation it tries fails.

Watches fire later than the change
    Kafka's controller registers watches (`ZNodeChildChangeHandler`s on `/brokers/ids`, the ISR
    change notifications and the admin paths; every broker watches `/controller`). ZooKeeper
    sends a notification when a watched znode changes, but the controller handles it later,
    as one event of its single-threaded queue (`ControllerEventManager`), by reading the
    *current* znodes. So two changes can be seen as one, and a broker that disappeared and
    came back before the controller read `/brokers/ids` looks as if nothing happened: the
    fast bounce of KIP-380. Here a watch firing adds an `Event` to the watcher's queue; the
    queue is a set (Kafka's events re-read ZooKeeper, so two pending notifications of the same
    kind mean what one means) handled in any order.

Who watches what
    `watchers` are the brokers whose session registered the controller's watches: the active
    controller registers them in `onControllerFailover`; they die with its session. Every
    broker watches `/controller` (`ControllerChangeHandler`) from its own session.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from spec._frozen import cache_hash, fast_init, replace

NO_LEADER = -1
"""`LeaderAndIsr.NO_LEADER`: the partition has no leader (written when the last live ISR member died)."""

NO_CONTROLLER = -1
"""No broker holds `/controller`."""

NO_SESSION = 0
"""A broker without a live session (and so without a registration)."""


class Event(enum.IntEnum):
    """The kinds of controller events a watch (or a request) puts in a broker's queue
    (`ControllerEvent` subclasses of `KafkaController`)."""

    REELECT = 0  # /controller deleted (or broker startup): `Reelect`, try to become controller
    EXPIRE = 1  # this broker's session expired and was renewed: `Expire`, resign
    BROKER_CHANGE = 2  # /brokers/ids children changed: `BrokerChange`
    ISR_CHANGE = 3  # a leader wrote an ISR change notification: `IsrChangeNotification`
    REASSIGN = 4  # /admin/reassign_partitions created: `ZkPartitionReassignment`
    PREFERRED_ELECTION = 5  # /admin/preferred_replica_election created: `ReplicaLeaderElection`
    CONTROLLED_SHUTDOWN = 6  # a ControlledShutdownRequest arrived: `ControlledShutdown`
    TOPIC_CHANGE = 7  # /brokers/topics children changed (a topic was created): `TopicChange`


@fast_init
@dataclass(frozen=True, slots=True, order=True)
class PendingEvent:
    """One event in a broker's controller queue; `broker` and `broker_epoch` are the
    ControlledShutdownRequest's (unused, -1, for the other kinds)."""

    kind: Event
    broker: int = -1
    broker_epoch: int = -1


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class PartitionZnode:
    """The partition's state znode: `LeaderIsrAndControllerEpoch` and its zkVersion."""

    leader: int  # NO_LEADER when none
    leader_epoch: int
    isr: tuple[int, ...]  # sorted; never empty (the last member stays even when it dies)
    controller_epoch: int  # epoch of the controller that made the leadership decision
    zk_version: int  # the znode's version: every write increments it
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class ZooKeeper:
    """The znodes Kafka's controller protocol uses for one partition."""

    next_zxid: int  # the next transaction id: a new session (and registration) gets it
    sessions: tuple[int, ...]  # per broker: its live session = registration czxid = broker epoch
    controller: int  # /controller: the broker that created it, or NO_CONTROLLER
    controller_epoch: int  # /controller_epoch
    partition: PartitionZnode | None  # the partition's state znode (None before creation)
    assignment: tuple[int, ...]  # /brokers/topics/<t>: the replicas, preferred leader first
    reassignment: tuple[int, ...] = ()  # /admin/reassign_partitions: target replicas, () when none
    original: tuple[int, ...] = ()  # during a reassignment, the replicas before it (KIP-455's
    # assignment znode records adding and removing replicas; ORS is what they are computed from)
    watchers: frozenset[int] = frozenset()  # brokers whose session holds the controller's watches
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def has_live_session(self, broker: int, session: int) -> bool:
        """`session` is `broker`'s live session: ZooKeeper operations made with it succeed."""
        return session != NO_SESSION and self.sessions[broker] == session

    def registered(self) -> tuple[tuple[int, int], ...]:
        """`/brokers/ids` with each broker's epoch (`getAllBrokerAndEpochsInCluster`)."""
        return tuple((broker, epoch) for broker, epoch in enumerate(self.sessions) if epoch != NO_SESSION)


Notifications = tuple[tuple[int, PendingEvent], ...]
"""Watches fired by a ZooKeeper change: (watching broker, event put in its queue)."""


def _to_each(brokers: frozenset[int] | tuple[int, ...], event: PendingEvent) -> Notifications:
    return tuple((broker, event) for broker in sorted(brokers))


_REELECT = PendingEvent(Event.REELECT)
_BROKER_CHANGE = PendingEvent(Event.BROKER_CHANGE)


def open_session(zk: ZooKeeper, broker: int) -> tuple[ZooKeeper, Notifications]:
    """`broker` opens a new session and registers `/brokers/ids/<broker>` with it
    (`KafkaZkClient.registerBroker`); its broker epoch is the new zxid. Refused (None is not
    possible here: the caller checks) when the old registration still exists: ZooKeeper
    answers NODEEXISTS until the old session expires."""
    assert zk.sessions[broker] == NO_SESSION, "registration still held by the previous session"
    session = zk.next_zxid
    sessions = (*zk.sessions[:broker], session, *zk.sessions[broker + 1 :])
    updated = replace(zk, next_zxid=session + 1, sessions=sessions)
    return updated, _to_each(zk.watchers, _BROKER_CHANGE)


def end_session(zk: ZooKeeper, broker: int) -> tuple[ZooKeeper, Notifications]:
    """`broker`'s session ends (expired by ZooKeeper, or closed by a broker shutting down):
    its ephemeral znodes go (`/brokers/ids/<broker>`, `/controller` if it held it) and so do
    the watches it registered. Every other broker with a live session is told `/controller`
    went (it then tries to become controller); the controller's watchers are told the broker
    set changed."""
    sessions = (*zk.sessions[:broker], NO_SESSION, *zk.sessions[broker + 1 :])
    watchers = zk.watchers - {broker}
    notifications: Notifications = _to_each(watchers, _BROKER_CHANGE)
    controller = zk.controller
    if controller == broker:
        controller = NO_CONTROLLER
        alive = tuple(other for other, session in enumerate(sessions) if session != NO_SESSION)
        notifications += _to_each(alive, _REELECT)
    return replace(zk, sessions=sessions, watchers=watchers, controller=controller), notifications


def create_controller(zk: ZooKeeper, broker: int) -> ZooKeeper | None:
    """The multi-op of `registerControllerAndIncrementControllerEpoch`: create the ephemeral
    `/controller` with `broker`'s session and increment `/controller_epoch` conditionally on
    its zkVersion. None (NODEEXISTS) when another broker got there first."""
    if zk.controller != NO_CONTROLLER or zk.sessions[broker] == NO_SESSION:
        return None
    return replace(zk, controller=broker, controller_epoch=zk.controller_epoch + 1)


def write_partition(zk: ZooKeeper, expected_version: int | None, znode: PartitionZnode) -> ZooKeeper | None:
    """Set the partition state znode to `znode` (whose version the caller has set to the
    current version + 1); conditional on `expected_version` (`KafkaZkClient.updateLeaderAndIsr`,
    `conditionalUpdatePath`): None (BADVERSION) when the znode changed since. An
    `expected_version` of None writes unconditionally."""
    current = zk.partition
    if current is None:
        return None
    if expected_version is not None and current.zk_version != expected_version:
        return None
    return replace(zk, partition=znode)


def isr_change_notification(zk: ZooKeeper) -> Notifications:
    """A leader that changed the ISR creates a sequential `/isr_change_notification/isr_change_`
    znode (`ReplicaManager.recordIsrChange`, propagated in batches): the controller's watch fires."""
    return _to_each(zk.watchers, PendingEvent(Event.ISR_CHANGE))


def admin_notification(zk: ZooKeeper, event: Event) -> Notifications:
    """An administrator creates a topic, `/admin/reassign_partitions` or
    `/admin/preferred_replica_election`: the controller's watch fires."""
    return _to_each(zk.watchers, PendingEvent(event))
