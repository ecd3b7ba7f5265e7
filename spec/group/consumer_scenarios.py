"""The named questions about the KIP-848 consumer group protocol (`spec.group.consumer`).

Each scenario settles one question with the bounded model checker: a counterexample exists (the
shortest is printed step by step) or none exists within the bound, in which case its witnesses
show that the interesting states (a partition moving, a member fenced while revoking, a zombie's
commit refused) were reached, so the pass is not vacuous.

Four are Kafka bugs or rule changes, each checked under the old and the new rule:

* KAFKA-19233: a consumer fenced with FENCED_MEMBER_EPOCH while the coordinator still has its
  member rejoins with epoch 0 and, before the fix, is refused for as long as its session lasts
  (`kafka-19233-rejoin-refused`, `kafka-19233-rejoin-fixed`);
* KIP-1251 (KAFKA-19779, KAFKA-20066): exact epoch equality refuses a legitimate commit made
  before the consumer heard of its bumped epoch; assignment epoch <= commit epoch <= member epoch
  accepts it and still refuses zombies (`kip-1251-exact-commit-fenced`, `kip-1251-range-commit`);
  and the exact rule lets a zombie's commit through when the consumer retries a commit made
  before a revocation with the epoch it learned since, as Kafka's client stamps every attempt
  (`kip-1251-restamped-retry-exact`, `kip-1251-restamped-retry-range`); even KIP-1251's rule lets
  such a retry through once the partition has come back to the member at a newer assignment
  epoch (`kip-1251-restamped-retry-returned-partition`): the rule trusts the commit's epoch to
  say when its offsets were made;
* KAFKA-19974 (Kafka 4.2) keeps a member's epoch across two revocation rounds; with the exact
  commit rule a commit sent in the first round then lands after the partition went to another
  member (`kafka-19974-exact-zombie-commit`); up to 4.1 the epoch moved on
  (`consumer-two-revocation-rounds`) and KIP-1251's rule closes it again
  (`kafka-19974-range-commit`);
* apache/kafka #23542: a static consumer retrying its join with epoch 0 after a lost response
  gets UNRELEASED_INSTANCE_ID, fatal, for its own instance id (`static-rejoin-unreleased`);
  handled in place it gets its member back (`static-rejoin-in-place`).

There is no symmetry reduction: consumers are not interchangeable (the assignors order members
by id, static consumers come first in `range`, and only some consumers are static).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from spec._frozen import SharedSteps
from spec.checker import Model
from spec.group import consumer
from spec.group.consumer import (
    Action,
    ClientStatus,
    CommitEpochRule,
    ConsumerGroupConfig,
    GroupState,
    RejoinRule,
    RevocationEpochRule,
    ServerAssignor,
    StaticRejoinRule,
)
from spec.group.consumer_reconciliation import LEAVE_GROUP_STATIC_MEMBER_EPOCH
from spec.machines import Diagram, Machine, Scenario, Setting, parse_bool, parse_choice, parse_count

SETTINGS: Mapping[str, Setting] = {
    "members": Setting("members", parse_count(1, 4), "consumers in the group (1-4)"),
    "partitions": Setting("partitions", parse_count(1, 4), "partitions of the subscribed topic (1-4)"),
    "static.members": Setting(
        "static_members", parse_count(0, 4), "how many consumers have a group.instance.id (KIP-345)"
    ),
    "group.consumer.assignors": Setting(
        "assignor", parse_choice(ServerAssignor), "the server-side assignor: uniform or range"
    ),
    "rejoin.rule": Setting(
        "rejoin",
        parse_choice(RejoinRule),
        "epoch-0 rejoin of a known member: old (before KAFKA-19233) or fixed",
    ),
    "commit.epoch.rule": Setting(
        "commit_rule", parse_choice(CommitEpochRule), "OffsetCommit epoch check: exact or range (KIP-1251)"
    ),
    "revocation.epoch.rule": Setting(
        "revocation_epoch",
        parse_choice(RevocationEpochRule),
        "epoch after a revocation when more must be revoked: bump (Kafka <= 4.1) or keep (4.2+, KAFKA-19974)",
    ),
    "static.rejoin.rule": Setting(
        "static_rejoin",
        parse_choice(StaticRejoinRule),
        "epoch-0 join of an active static member: replace (Kafka 4.x) or in-place (apache/kafka #23542)",
    ),
    "commits": Setting("commits", parse_bool, "explore offset commits"),
    "leaves": Setting("leaves", parse_bool, "explore consumers leaving with epoch -1"),
    "static.leaves": Setting("static_leaves", parse_bool, "explore static consumers leaving with epoch -2"),
    "max.static.restarts": Setting(
        "max_static_restarts", parse_count(0, 3), "bound on static consumers coming back"
    ),
    "max.lost.responses": Setting(
        "max_lost_responses", parse_count(0, 3), "bound on heartbeat responses lost"
    ),
    "max.late.heartbeats": Setting(
        "max_late_heartbeats", parse_count(0, 3), "bound on heartbeats handled after the client moved on"
    ),
    "max.late.commits": Setting(
        "max_late_commits", parse_count(0, 3), "bound on offset commits handled after the consumer moved on"
    ),
    "restamped.retries": Setting(
        "restamped_retries", parse_bool, "explore late commits retried with the consumer's newest epoch"
    ),
    "max.session.timeouts": Setting("max_session_timeouts", parse_count(0, 3), "bound on session expiries"),
    "max.rebalance.timeouts": Setting(
        "max_rebalance_timeouts", parse_count(0, 3), "bound on rebalance timeouts fencing a revoking member"
    ),
}
"""The consumer group's `--set` keys."""


def model_for(
    config: ConsumerGroupConfig, invariants: tuple[str, ...], witnesses: tuple[str, ...] = ()
) -> Model[GroupState, Action]:
    """The checker's view of the consumer group under `config`; a name in `invariants` may also be
    the step property `epochs_only_grow`."""
    plain_step = partial(consumer.step, config)
    steps = SharedSteps(plain_step)  # the stuck check's successors, reused when it runs
    every = consumer.invariants_for(config, steps.remember)
    return Model(
        initial_states=(consumer.initial_state(config),),
        candidate_actions=partial(consumer.candidate_actions, config),
        step=steps.step if "rebalance_completes" in invariants else plain_step,
        invariants={name: every[name] for name in invariants if name in every},
        step_properties={
            name: consumer.STEP_PROPERTIES[name] for name in invariants if name in consumer.STEP_PROPERTIES
        },
        witnesses={name: consumer.WITNESSES[name] for name in witnesses},
    )


def validate(config: ConsumerGroupConfig) -> str | None:
    """Why a consumer-group configuration is inconsistent, or None."""
    if config.static_members > config.members:
        return f"static.members={config.static_members} exceeds members={config.members}"
    if (config.static_leaves or config.max_static_restarts) and not config.static_members:
        return "static leaves and restarts need static.members >= 1"
    return None


def _partitions(partitions: frozenset[int]) -> str:
    return "{" + ",".join(f"p{p}" for p in sorted(partitions)) + "}"


def describe_state(state: GroupState) -> Sequence[str]:
    """The state as text: the group's epochs and target, each member on the coordinator, each
    consumer's view, the partition epochs, and the ghost facts."""
    coordinator = state.coordinator
    targets = " ".join(
        f"m{index}:{_partitions(target)}"
        for index, target in enumerate(coordinator.target)
        if target is not None
    )
    lines = [
        f"group: epoch {coordinator.group_epoch}  assignment epoch {coordinator.assignment_epoch}  "
        f"target {targets or '-'}"
    ]
    for index, member in enumerate(coordinator.members):
        if member is None:
            lines.append(f"member m{index}: -")
            continue
        deadline = (
            "" if member.rebalance_deadline is None else f"  rebalance timer @{member.rebalance_deadline}"
        )
        lines.append(
            f"member m{index}: epoch {member.epoch} (previous {member.previous_epoch})  "
            f"{member.state.value}  assigned {_partitions(member.assigned)}  "
            f"revoking {_partitions(member.pending_revocation)}{deadline}"
        )
    for index, client in enumerate(state.clients):
        flight = ""
        if client.in_flight is not None:
            owned = "-" if client.in_flight.owned is None else _partitions(client.in_flight.owned)
            flight = f"  heartbeat in flight (epoch {client.in_flight.member_epoch}, owned {owned})"
        lines.append(
            f"consumer {index}: {client.status.value}  epoch {client.epoch}  "
            f"assignment {_partitions(client.assignment)}  owns {_partitions(client.owned)}{flight}"
        )
    epochs = " ".join(
        f"p{p}:{'-' if owner is None else f'm{owner[0]}@{owner[1]}'}"
        for p, owner in enumerate(coordinator.owners)
    )
    lines.append(f"partition epochs: {epochs}" + ("  ILLEGAL STATE" if coordinator.illegal_state else ""))
    if state.history.events:
        lines.append("facts: " + "; ".join(sorted(event.value for event in state.history.events)))
    return lines


def _owners_of(state: GroupState, partition: int) -> list[int]:
    return [index for index, client in enumerate(state.clients) if partition in client.owned]


def explain(name: str, state: GroupState) -> str:
    """One sentence saying why property `name` fails in `state`."""
    coordinator = state.coordinator
    if name in ("one_owner_per_partition", "no_partition_processed_twice"):
        for p in range(len(coordinator.owners)):
            owners = [c for c in _owners_of(state, p) if state.clients[c].status is ClientStatus.MEMBER]
            if len(owners) > 1:
                return f"partition p{p} is owned by consumers {', '.join(f'{c}' for c in owners)} at once"
    if name == "no_member_holds_reassigned_partition":
        for index, client in enumerate(state.clients):
            for p in sorted(client.owned):
                owner = coordinator.owners[p]
                if owner is not None and owner[0] != index and coordinator.members[index] is not None:
                    return (
                        f"consumer {index} still owns p{p}, which the coordinator gave to m{owner[0]} "
                        f"at epoch {owner[1]}"
                    )
    if name == "rebalance_completes":
        waiting = [
            str(index) for index, client in enumerate(state.clients) if client.status is ClientStatus.JOINING
        ]
        who = f"consumer {', '.join(waiting)} keeps rejoining and is refused" if waiting else "members wait"
        return f"{who}; no heartbeat or revocation can change anything, only a timeout would"
    if name == "no_false_fencing":
        return (
            "a commit for a partition the member holds, at an epoch it had, was refused with "
            "STALE_MEMBER_EPOCH"
        )
    if name == "no_self_fencing":
        stopped = [str(i) for i, client in enumerate(state.clients) if client.status is ClientStatus.STOPPED]
        return (
            f"static consumer {', '.join(stopped)} rejoined with epoch 0 while its own member was active "
            "and got UNRELEASED_INSTANCE_ID, a fatal error"
        )
    if name == "no_zombie_commit":
        return "a commit landed for a partition the committer no longer holds on the coordinator"
    if name == "partition_epochs_consistent":
        return "the partition epoch table disagrees with what the members hold"
    if name == "epochs_are_ordered":
        return "a member epoch is ahead of the assignment epoch, or a consumer ahead of its member"
    if name == "epochs_only_grow":
        return "an epoch went backwards"
    return f"{name} fails"


def member_zero(state: GroupState) -> str:
    """The diagram's node: consumer 0's member on the coordinator (absent, left for now with -2,
    or its reconciliation state) and what consumer 0 itself is doing."""
    member = state.coordinator.members[0]
    if member is None:
        server = "no member"
    elif member.epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        server = "left for now (-2)"
    else:
        server = member.state.value
    return f"{server} / consumer {state.clients[0].status.value}"


CONSUMER_GROUP: Machine[ConsumerGroupConfig, GroupState, Action] = Machine(
    name="consumer-group",
    title="a KIP-848 consumer group: heartbeats, epochs, reconciliation, partition epochs, commits",
    settings=SETTINGS,
    model=model_for,
    describe_state=describe_state,
    validate=validate,
    explain=explain,
    modules=(
        "spec.group.consumer",
        "spec.group.consumer_reconciliation",
        "spec.group.server_assignors",
        "spec.group.types",
    ),
    diagram=Diagram(
        title="member m0 on the coordinator / consumer 0",
        project=member_zero,
        # a static consumer 0 that may leave for now and come back, a dynamic consumer 1 that may
        # leave, and one rebalance timeout: every member state and consumer status (5,161 states)
        config=ConsumerGroupConfig(
            static_members=1, static_leaves=True, max_static_restarts=1, max_rebalance_timeouts=1, leaves=True
        ),
        max_depth=40,
    ),
)
MACHINE = CONSUMER_GROUP

_SAFETY = (
    "one_owner_per_partition",
    "partition_epochs_consistent",
    "no_member_holds_reassigned_partition",
    "epochs_are_ordered",
    "epochs_only_grow",
)
_EVERYTHING_SAFE = (*_SAFETY, "no_partition_processed_twice", "no_zombie_commit", "rebalance_completes")

SCENARIOS: tuple[Scenario[ConsumerGroupConfig], ...] = (
    Scenario(
        machine=CONSUMER_GROUP,
        name="consumer-join",
        summary="two consumers join a group on two partitions (uniform assignor) in any order, heartbeats "
        "interleaved: a partition moves only after its owner revoked it, and the group always converges",
        config=ConsumerGroupConfig(),
        invariants=_EVERYTHING_SAFE,
        expect_violation=False,
        witnesses=("member_joined", "partition_moved", "group_stable"),
        reference="KIP-848",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="consumer-join-range",
        summary="the same with the range assignor, which is not sticky: members' ranges shift as others join",
        config=ConsumerGroupConfig(assignor=ServerAssignor.RANGE),
        invariants=_EVERYTHING_SAFE,
        expect_violation=False,
        witnesses=("partition_moved", "group_stable"),
        reference="KIP-848 (RangeAssignor)",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="consumer-leave",
        summary="a consumer leaves with epoch -1: its partitions go to the other, which never owns them "
        "early",
        config=ConsumerGroupConfig(leaves=True, commits=True),
        invariants=(*_EVERYTHING_SAFE, "no_false_fencing"),
        expect_violation=False,
        witnesses=("member_left", "partition_moved", "commit_accepted"),
        reference="KIP-848 (LEAVE_GROUP_MEMBER_EPOCH)",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="consumer-static-leave-return",
        summary="static consumer 0 leaves with epoch -2 and its partitions wait for it; it returns with the "
        "same group.instance.id and gets them back, or its session expires and they move",
        config=ConsumerGroupConfig(
            static_members=1, static_leaves=True, max_static_restarts=1, max_session_timeouts=1
        ),
        invariants=(*_SAFETY, "rebalance_completes"),
        expect_violation=False,
        witnesses=("static_member_left", "static_member_returned", "partition_moved"),
        reference="KIP-848, KIP-345 (LEAVE_GROUP_STATIC_MEMBER_EPOCH)",
        max_depth=28,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="static-rejoin-unreleased",
        summary="a static consumer's join response is lost; it retries with epoch 0 and the coordinator, "
        "which cannot tell it from a second instance, answers UNRELEASED_INSTANCE_ID (fatal)",
        config=ConsumerGroupConfig(static_members=1, max_lost_responses=1),
        invariants=("no_self_fencing",),
        expect_violation=True,
        reference="apache/kafka #23542",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="static-rejoin-in-place",
        summary="in-place rule: the static consumer's epoch-0 rejoin gets its active member back, after a "
        "lost response or FENCED_MEMBER_EPOCH; leaving with -2 and returning still replaces the member",
        config=ConsumerGroupConfig(
            static_members=1,
            static_rejoin=StaticRejoinRule.IN_PLACE,
            static_leaves=True,
            max_static_restarts=1,
            max_lost_responses=2,
        ),
        invariants=(*_SAFETY, "no_self_fencing", "rebalance_completes"),
        expect_violation=False,
        witnesses=("static_rejoined_in_place", "static_member_returned", "client_fenced"),
        reference="apache/kafka #23542, KIP-345",
        max_depth=30,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="consumer-more-members-than-partitions",
        summary="three consumers, two partitions: one member stays stable with nothing, the group converges",
        config=ConsumerGroupConfig(members=3),
        invariants=_EVERYTHING_SAFE,
        expect_violation=False,
        witnesses=("idle_member", "group_stable", "partition_moved"),
        reference="KIP-848 (UniformAssignor)",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="consumer-rebalance-timeout",
        summary="a member revoking too slowly is fenced by the rebalance timeout; its partitions move to a "
        "member that the coordinator keeps apart from every member, and the fenced consumer rejoins",
        config=ConsumerGroupConfig(max_rebalance_timeouts=1),
        invariants=(*_SAFETY, "rebalance_completes"),
        expect_violation=False,
        witnesses=("fenced_while_revoking", "zombie_holds_partition", "fenced_member_rejoined"),
        reference="KIP-848 (rebalance timeout)",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="consumer-zombie-processing",
        summary="the same timeout: until its next heartbeat the fenced consumer still processes the "
        "partition the coordinator gave away, so two consumers process it at once (only commit fencing "
        "protects the offsets)",
        config=ConsumerGroupConfig(max_rebalance_timeouts=1),
        invariants=("no_partition_processed_twice",),
        expect_violation=True,
        reference="KIP-848 (rebalance timeout)",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="consumer-zombie-commit",
        summary="exact rule: a consumer fenced while revoking still commits for its old partition, and a "
        "commit sent before a revocation arrives after the partition moved: neither lands",
        config=ConsumerGroupConfig(commits=True, max_late_commits=1, max_rebalance_timeouts=1),
        invariants=(*_SAFETY, "no_zombie_commit"),
        expect_violation=False,
        witnesses=("zombie_commit_refused", "zombie_holds_partition", "commit_accepted"),
        reference="KIP-848; KIP-1251 (zombie commits)",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="kafka-19233-rejoin-refused",
        summary="old rule: a joining consumer loses two responses while the group epoch moves on, so its "
        "member is two bumps past epoch 0; its epoch-0 rejoin is refused with FENCED_MEMBER_EPOCH for as "
        "long as its session lasts: stuck",
        config=ConsumerGroupConfig(rejoin=RejoinRule.OLD, leaves=True, max_lost_responses=2),
        invariants=("rebalance_completes",),
        expect_violation=True,
        reference="KAFKA-19233",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="kafka-19233-rejoin-fixed",
        summary="fixed rule (apache/kafka #21305): the fenced consumer's epoch-0 rejoin is accepted and it "
        "gets its assignment back at once",
        config=ConsumerGroupConfig(rejoin=RejoinRule.FIXED, leaves=True, max_lost_responses=2),
        invariants=(*_SAFETY, "rebalance_completes"),
        expect_violation=False,
        witnesses=("client_fenced", "fenced_member_rejoined"),
        reference="KAFKA-19233",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="kip-1251-exact-commit-fenced",
        summary="exact rule: the coordinator bumps a member's epoch (it keeps its partition), the response "
        "is lost, and the consumer's commit at its old epoch is refused with STALE_MEMBER_EPOCH",
        config=ConsumerGroupConfig(commits=True, max_lost_responses=1),
        invariants=("no_false_fencing",),
        expect_violation=True,
        reference="KIP-1251, KAFKA-19779",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="kip-1251-range-commit",
        summary="range rule (assignment epoch <= commit epoch <= member epoch): the same commit is accepted, "
        "and no zombie's commit ever lands (late commits, a rebalance timeout)",
        config=ConsumerGroupConfig(
            commit_rule=CommitEpochRule.RANGE,
            commits=True,
            max_lost_responses=1,
            max_late_commits=1,
            max_rebalance_timeouts=1,
        ),
        invariants=(*_SAFETY, "no_zombie_commit", "no_false_fencing"),
        expect_violation=False,
        witnesses=("stale_commit_accepted", "zombie_commit_refused"),
        reference="KIP-1251, KAFKA-20066",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="consumer-two-revocation-rounds",
        summary="three consumers, two partitions, late commits, exact rule, epoch bumped after a revocation "
        "(Kafka up to 4.1): a member revokes in two rounds, and no commit from the first round lands",
        config=ConsumerGroupConfig(members=3, commits=True, max_late_commits=1),
        invariants=(*_SAFETY, "no_zombie_commit", "rebalance_completes"),
        expect_violation=False,
        witnesses=("revoked_again", "zombie_commit_refused", "group_stable"),
        reference="KIP-848 (CurrentAssignmentBuilder), KAFKA-19974",
        max_depth=30,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="kip-1251-restamped-retry-exact",
        summary="exact rule (epoch bumped after a revocation): a commit made before a revocation is retried "
        "with the epoch the consumer learned since, and lands after the partition went to another member",
        config=ConsumerGroupConfig(commits=True, max_late_commits=1, restamped_retries=True),
        invariants=("no_zombie_commit",),
        expect_violation=True,
        reference="KIP-1251 (zombie commits)",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="kip-1251-restamped-retry-range",
        summary="range rule: the restamped retry is refused, the partition being no longer the member's",
        config=ConsumerGroupConfig(
            commit_rule=CommitEpochRule.RANGE, commits=True, max_late_commits=1, restamped_retries=True
        ),
        invariants=(*_SAFETY, "no_zombie_commit", "no_false_fencing"),
        expect_violation=False,
        witnesses=("zombie_commit_refused", "commit_accepted", "partition_moved"),
        reference="KIP-1251, KAFKA-20066",
        max_depth=30,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="kip-1251-restamped-retry-returned-partition",
        summary="range rule: a commit made before a revocation is retried, restamped, after the partition "
        "went to another member and came back (that member's session expired): it lands over the offsets "
        "the other member committed, since the partition's new assignment epoch <= the restamped epoch",
        config=ConsumerGroupConfig(
            commit_rule=CommitEpochRule.RANGE,
            commits=True,
            max_late_commits=1,
            restamped_retries=True,
            max_session_timeouts=1,
        ),
        invariants=("no_zombie_commit",),
        expect_violation=True,
        reference="KIP-1251 (zombie commits)",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="kafka-19974-exact-zombie-commit",
        summary="epoch kept after a revocation (Kafka 4.2) with the exact commit rule: a member revokes in "
        "two rounds at one epoch, and a commit it sent before the first lands after the partition went "
        "to another member",
        config=ConsumerGroupConfig(
            members=3,
            revocation_epoch=RevocationEpochRule.KEEP,
            commits=True,
            max_late_commits=1,
        ),
        invariants=("no_zombie_commit",),
        expect_violation=True,
        reference="KAFKA-19974, KIP-1251",
        max_depth=20,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="kafka-19974-range-commit",
        summary="the same with KIP-1251's range rule: the late commit is refused, the partition being no "
        "longer the member's",
        config=ConsumerGroupConfig(
            members=3,
            revocation_epoch=RevocationEpochRule.KEEP,
            commit_rule=CommitEpochRule.RANGE,
            commits=True,
            max_late_commits=1,
        ),
        invariants=(*_SAFETY, "no_zombie_commit"),
        expect_violation=False,
        witnesses=("zombie_commit_refused", "commit_accepted"),
        reference="KAFKA-19974, KIP-1251",
        max_depth=30,
    ),
    Scenario(
        machine=CONSUMER_GROUP,
        name="consumer-late-heartbeat",
        summary="heartbeats handled after the consumer moved on, and lost responses: the previous-epoch rule "
        "lets the consumer go on, and no partition ever has two owners",
        config=ConsumerGroupConfig(max_late_heartbeats=1, max_lost_responses=1, leaves=True),
        invariants=(*_SAFETY, "rebalance_completes"),
        expect_violation=False,
        witnesses=("previous_epoch_accepted", "partition_moved", "group_stable"),
        reference="KIP-848 (previous member epoch)",
        max_depth=20,
    ),
)
"""The consumer group's named scenarios."""


__all__ = [
    "CONSUMER_GROUP",
    "MACHINE",
    "SCENARIOS",
    "SETTINGS",
    "describe_state",
    "explain",
    "member_zero",
    "model_for",
]
