"""KRaft broker registration, heartbeats, broker epochs and fencing.

Kafka classes: `ClusterControlManager`, `BrokerHeartbeatManager`, `BrokerControlState`.

What it is
    A KRaft broker joins the cluster by sending `BrokerRegistration` to the active controller
    (KIP-631). The controller appends a `RegisterBrokerRecord`; the offset of that record in
    the metadata log is the broker's *broker epoch*, so a broker that restarts gets a larger
    one, and every later request that names the broker's epoch (heartbeats, AlterPartition,
    fetches through the leader: KIP-903) is checked against it: a mismatch is
    STALE_BROKER_EPOCH (`ClusterControlManager.checkBrokerEpoch`). A new registration starts
    FENCED; the broker then heartbeats every `broker.heartbeat.interval.ms`, and the
    controller unfences it once the broker has replayed the metadata log up to its own
    registration record.

The control states (`BrokerControlState`, `BrokerHeartbeatManager.calculateNextBrokerState`)
    ================== ========== ============================= =======================
    state              fenced     reached from                  leaves to
    ================== ========== ============================= =======================
    FENCED             yes        registration, session expiry  UNFENCED when caught up;
                                                                SHUTDOWN_NOW on request
    UNFENCED           no         FENCED                        CONTROLLED_SHUTDOWN (wants
                                                                to stop and leads something),
                                                                SHUTDOWN_NOW (leads nothing),
                                                                FENCED (session expiry)
    CONTROLLED_SHUTDOWN no (but   UNFENCED                      SHUTDOWN_NOW once it leads
                       not        nothing and every active broker replayed
                       eligible)  the controlled-shutdown record
    SHUTDOWN_NOW       yes        any                           (the broker stops)
    ================== ========== ============================= =======================

    Entering FENCED or SHUTDOWN_NOW runs `handleBrokerFenced` (the broker leaves every ISR;
    partitions it led elect another leader), UNFENCED runs `handleBrokerUnfenced` (leaderless
    partitions elect), CONTROLLED_SHUTDOWN runs `handleBrokerInControlledShutdown` (leaves
    every ISR, leaderships move away first: the broker is asked to wait until it leads
    nothing). Those partition changes are built by `spec.controller.kraft_partitions`; this
    module says only which state comes next.

Re-registration
    A registration from a new incarnation (a restarted process) while the old registration is
    active (unfenced, not in controlled shutdown) with a valid session is refused with
    DUPLICATE_BROKER_REGISTRATION (`ClusterControlManager.registerBroker`; after a controlled
    shutdown it is allowed at once, KAFKA-19047): the restarted broker retries until the
    controller fences the old session. The new registration gets a new broker epoch and
    starts fenced. When the broker did not shut down cleanly (it cannot send the broker epoch
    of its clean-shutdown file, `previousBrokerEpoch`, KAFKA-15582/KAFKA-18635), the
    controller also removes it from every ISR and ELR (`handleBrokerUncleanShutdown`,
    KAFKA-18106), since its log may have lost unflushed records.

What is abstracted: time. A session expires (the controller fences the broker) when its
heartbeats stop or are lost, nondeterministically; `processExpiredBrokerHeartbeat` (a heartbeat
that waited too long refreshes the session and nothing else) and `wantFence` are not modelled.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from spec._frozen import cache_hash, fast_init
from spec.controller.kraft_errors import KafkaError

BrokerId = int


class BrokerControlState(enum.Enum):
    """`BrokerControlState`: the controller's view of a broker's lifecycle."""

    FENCED = "fenced"
    UNFENCED = "unfenced"
    CONTROLLED_SHUTDOWN = "controlled shutdown"
    SHUTDOWN_NOW = "shutdown now"

    __hash__ = object.__hash__

    @property
    def fenced(self) -> bool:
        """FENCED and SHUTDOWN_NOW are fenced (the registration's `fenced` flag)."""
        return self in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """What the metadata log says about one broker (`BrokerRegistration`), plus the
    controller's soft state for its controlled shutdown (`BrokerHeartbeatManager`)."""

    epoch: int  # the offset of its RegisterBrokerRecord: the broker epoch
    incarnation: int  # the process that registered (Kafka: the incarnation id, a UUID)
    fenced: bool = True
    in_controlled_shutdown: bool = False
    controlled_shutdown_offset: int = -1  # log offset of the record that began the controlled shutdown
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def active(self) -> bool:
        """`ClusterControlManager.isActive`: may lead and join ISRs (not fenced, not shutting down)."""
        return not self.fenced and not self.in_controlled_shutdown

    @property
    def control_state(self) -> BrokerControlState:
        """The heartbeat manager's state for this registration (SHUTDOWN_NOW is fenced and
        the broker stops, so a live registration is one of the other three)."""
        if self.fenced:
            return BrokerControlState.FENCED
        if self.in_controlled_shutdown:
            return BrokerControlState.CONTROLLED_SHUTDOWN
        return BrokerControlState.UNFENCED


def check_broker_epoch(registration: BrokerRegistration | None, broker_epoch: int) -> KafkaError:
    """`ClusterControlManager.checkBrokerEpoch`: STALE_BROKER_EPOCH unless the broker is
    registered with exactly this epoch."""
    if registration is None or registration.epoch != broker_epoch:
        return KafkaError.STALE_BROKER_EPOCH
    return KafkaError.NONE


@fast_init
@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A `BrokerHeartbeatRequest` (the fields the state machine reads)."""

    broker_epoch: int
    current_metadata_offset: int
    want_shut_down: bool


def next_broker_state(
    registration: BrokerRegistration,
    heartbeat: Heartbeat,
    has_leaderships: bool,
    lowest_active_offset: int,
) -> BrokerControlState:
    """`BrokerHeartbeatManager.calculateNextBrokerState` (wantFence is never set here).

    `lowest_active_offset`: the smallest metadata offset reached by an active broker; a
    broker in controlled shutdown may stop once every active broker has replayed the record
    that began its shutdown (they no longer count on it)."""
    state = registration.control_state
    if state is BrokerControlState.FENCED:
        if heartbeat.want_shut_down:
            return BrokerControlState.SHUTDOWN_NOW
        if heartbeat.current_metadata_offset >= registration.epoch:  # caught up to its registration
            return BrokerControlState.UNFENCED
        return BrokerControlState.FENCED
    if state is BrokerControlState.UNFENCED:
        if heartbeat.want_shut_down:
            return (
                BrokerControlState.CONTROLLED_SHUTDOWN if has_leaderships else BrokerControlState.SHUTDOWN_NOW
            )
        return BrokerControlState.UNFENCED
    if has_leaderships or registration.controlled_shutdown_offset > lowest_active_offset:
        return BrokerControlState.CONTROLLED_SHUTDOWN
    return BrokerControlState.SHUTDOWN_NOW


def registration_refusal(existing: BrokerRegistration | None, incarnation: int) -> KafkaError:
    """Why `ClusterControlManager.registerBroker` refuses a registration, or NONE.

    A different incarnation while the old registration is active has a valid session
    (the controller fences a registration when its session expires): refused until then.
    """
    if existing is not None and existing.incarnation != incarnation and existing.active:
        return KafkaError.DUPLICATE_BROKER_REGISTRATION
    return KafkaError.NONE
