"""How the coordinator moves one member towards its target assignment (KIP-848 reconciliation).

Under the consumer protocol the coordinator keeps, for every member, the partitions it has
*assigned* now (the member may process them), those *pending revocation* (still the member's until
its client says it gave them up) and a state, and moves the member towards the group's target
assignment one heartbeat at a time. This is Kafka's `CurrentAssignmentBuilder`
(group-coordinator `modern/consumer`), after KAFKA-16249 redesigned it, and the member record of
`ConsumerGroupMember`:

States (`modern/MemberState.java`):

* `STABLE`: the member holds its whole target at the target epoch, or nothing is left to do;
* `UNREVOKED_PARTITIONS`: the target takes partitions away and the client still reports owning
  some of them; the member stays at its epoch until the client's heartbeat no longer lists any
  partition pending revocation (the coordinator arms the rebalance timeout meanwhile);
* `UNRELEASED_PARTITIONS`: the member moved to the target epoch, but some target partitions are
  still held (pending revocation or assigned) by other members, so they are held back.

Each reconciliation (`computeNextAssignment`) computes, for the one topic:

* assigned' = assigned ∩ target;
* pending revocation = assigned \\ assigned';
* pending assignment = target \\ assigned' without the partitions whose *partition epoch* is set
  (another member still owns them: `ConsumerGroup.currentPartitionEpoch` is not -1);

and then: revocations the client still owns → `UNREVOKED_PARTITIONS` at the epoch given; else the
member takes the **target epoch** (its previous epoch becomes the old one: `updateMemberEpoch`)
with assigned' ∪ pending assignment, `UNRELEASED_PARTITIONS` if something was held back,
`STABLE` otherwise. Pending revocations the client does not report owning are dropped at once
(the client has already let them go).

From `UNREVOKED_PARTITIONS`, once its revocations are done, the member recomputes; if the
target takes still more partitions away it stays in `UNREVOKED_PARTITIONS`, at **epoch + 1** in
Kafka up to 4.1 (`bump_after_revocation`), at its current epoch since Kafka 4.2 (KAFKA-19974,
apache/kafka #21107: "partitions can only be owned by a single member at any given epoch").
The +1 is what made a commit sent before the revocation stale under the exact commit rule.

Not modelled: KAFKA-19449 (Kafka 4.2) no longer counts a partition the member itself is
revoking as unreleased, which saves one heartbeat when the target gives it back at once.

KIP-1251 (Kafka 4.3, KAFKA-20066) adds an *assignment epoch* per assigned partition: the member
epoch at which the partition was added to the member; kept partitions keep theirs, and the
offset-commit rule checks it (`spec.group.consumer`). The spec keeps it under both commit rules.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from spec._frozen import cache_hash, fast_init, replace


class MemberState(enum.Enum):
    """A member's reconciliation state on the coordinator (`MemberState`; Kafka's display
    names). `UNKNOWN`, which only a downgraded coordinator can read from its log, is left out."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"

    __hash__ = object.__hash__  # members are singletons: hashing by identity is cheaper than Enum's


NO_EPOCH = -1
"""`ConsumerGroupMember`'s default previous epoch, and what `currentPartitionEpoch` answers for
a partition nobody owns."""

LEAVE_GROUP_MEMBER_EPOCH = -1
"""`ConsumerGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH`: the member leaves for good."""

LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
"""`ConsumerGroupHeartbeatRequest.LEAVE_GROUP_STATIC_MEMBER_EPOCH`: a static member leaves for now
and keeps its assignment until it returns or its session expires (KIP-345 under KIP-848)."""

JOIN_GROUP_MEMBER_EPOCH = 0
"""The epoch a member (re)joins with; the coordinator answers with its real epoch."""


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class ServerMember:
    """One member as the coordinator records it (`ConsumerGroupMember`, the fields the protocol
    reads). `assignment_epochs` gives (partition, assignment epoch) for every partition in
    `assigned` or `pending_revocation` (KIP-1251). `rebalance_deadline` is the member epoch at
    which the rebalance timeout was armed (`scheduleConsumerGroupRebalanceTimeout`), None when
    no timer runs."""

    epoch: int
    previous_epoch: int
    state: MemberState
    assigned: frozenset[int]
    pending_revocation: frozenset[int]
    assignment_epochs: tuple[tuple[int, int], ...]
    rebalance_deadline: int | None = None
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def holds(self) -> frozenset[int]:
        """Every partition whose partition epoch is this member's: assigned and pending revocation."""
        return self.assigned | self.pending_revocation

    def assignment_epoch(self, partition: int) -> int | None:
        """The epoch at which `partition` was assigned to the member, None if it holds no such partition."""
        for held, epoch in self.assignment_epochs:
            if held == partition:
                return epoch
        return None


def new_member() -> ServerMember:
    """A member as `ConsumerGroup.getOrMaybeCreateMember` creates it: epoch 0, previous epoch -1,
    STABLE, nothing assigned."""
    return ServerMember(0, NO_EPOCH, MemberState.STABLE, frozenset(), frozenset(), ())


def is_reconciled_to(member: ServerMember, target_epoch: int) -> bool:
    """`ModernGroupMember.isReconciledTo`: STABLE at the target epoch (nothing left to do)."""
    return member.state is MemberState.STABLE and member.epoch == target_epoch


def owns_revoked_partitions(owned: frozenset[int] | None, pending_revocation: frozenset[int]) -> bool:
    """`CurrentAssignmentBuilder.ownsRevokedPartitions`: the client's heartbeat still lists a
    partition pending revocation. A heartbeat without the owned list (None) counts as owning."""
    if owned is None:
        return True
    return not owned.isdisjoint(pending_revocation)


def _epochs_for(
    member: ServerMember, partitions: frozenset[int], new_epoch: int
) -> tuple[tuple[int, int], ...]:
    """Assignment epochs of `partitions`: a partition the member already held keeps its epoch,
    a new one takes `new_epoch` (KIP-1251)."""
    known = dict(member.assignment_epochs)
    return tuple(sorted((p, known.get(p, new_epoch)) for p in partitions))


def compute_next_assignment(
    member: ServerMember,
    member_epoch: int,
    target_epoch: int,
    target: frozenset[int],
    partition_epoch: Callable[[int], int],
    owned: frozenset[int] | None,
) -> ServerMember:
    """`CurrentAssignmentBuilder.computeNextAssignment` for one topic (see the module docstring).

    `member_epoch` is the epoch the member keeps if it must wait for revocations; otherwise it
    moves to `target_epoch`. `partition_epoch(p)` is the epoch of p's current owner, -1 when p is
    free. The rebalance deadline is left as it was; `reconcile` sets it.
    """
    kept = member.assigned & target
    revoking = member.assigned - kept
    wanted = target - kept
    unreleased = frozenset(p for p in wanted if partition_epoch(p) != NO_EPOCH)
    newly_assigned = wanted - unreleased
    if revoking and owns_revoked_partitions(owned, revoking):
        return replace(
            member,
            epoch=member_epoch,
            previous_epoch=member.epoch,
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned=kept,
            pending_revocation=revoking,
            assignment_epochs=_epochs_for(member, kept | revoking, member_epoch),
        )
    assigned = kept | newly_assigned
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(
        member,
        epoch=target_epoch,
        previous_epoch=member.epoch,
        state=state,
        assigned=assigned,
        pending_revocation=frozenset(),
        assignment_epochs=_epochs_for(member, assigned, target_epoch),
    )


def build(
    member: ServerMember,
    target_epoch: int,
    target: frozenset[int],
    partition_epoch: Callable[[int], int],
    owned: frozenset[int] | None,
    bump_after_revocation: bool = True,
) -> ServerMember:
    """`CurrentAssignmentBuilder.build`: the member's next record, or `member` itself when it
    cannot move on (STABLE at the target epoch, or revocations still owned). A member that has
    revoked recomputes at epoch + 1 (`bump_after_revocation`, Kafka up to 4.1) or at its epoch
    (Kafka 4.2+, KAFKA-19974)."""
    if member.state is MemberState.STABLE:
        if member.epoch == target_epoch:
            return member
        return compute_next_assignment(member, member.epoch, target_epoch, target, partition_epoch, owned)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owns_revoked_partitions(owned, member.pending_revocation):
            return member
        epoch = member.epoch + 1 if bump_after_revocation else member.epoch
        return compute_next_assignment(member, epoch, target_epoch, target, partition_epoch, owned)
    return compute_next_assignment(member, member.epoch, target_epoch, target, partition_epoch, owned)


def reconcile(
    member: ServerMember,
    target_epoch: int,
    target: frozenset[int],
    partition_epoch: Callable[[int], int],
    owned: frozenset[int] | None,
    bump_after_revocation: bool = True,
) -> ServerMember:
    """`GroupMetadataManager.maybeReconcile`: nothing when the member is reconciled to the target
    epoch; otherwise `build`, and when the member changed, arm the rebalance timeout at its epoch
    if it now waits for revocations, cancel it otherwise."""
    if is_reconciled_to(member, target_epoch):
        return member
    updated = build(member, target_epoch, target, partition_epoch, owned, bump_after_revocation)
    if updated == member:
        return member
    deadline = updated.epoch if updated.state is MemberState.UNREVOKED_PARTITIONS else None
    return replace(updated, rebalance_deadline=deadline)


__all__ = [
    "JOIN_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "NO_EPOCH",
    "MemberState",
    "ServerMember",
    "build",
    "compute_next_assignment",
    "is_reconciled_to",
    "new_member",
    "owns_revoked_partitions",
    "reconcile",
]
