"""The consumer's rules (`AbstractCoordinator`, `ConsumerCoordinator`): what it gives up before
it joins, and what it does with each answer, under the eager and the cooperative protocol."""

from __future__ import annotations

import pytest

from spec._frozen import replace
from spec.group import classic_consumer as client
from spec.group.classic_consumer import ClientPhase, ClientStatus, Consumer, ConsumerRules
from spec.group.types import (
    Assignment,
    Errors,
    HeartbeatResponse,
    JoinGroupResponse,
    JoinGroupResponseMember,
    RebalanceProtocol,
    Subscription,
    SyncGroupResponse,
    TopicPartition,
)

T0, T1, T2 = (TopicPartition("t0", n) for n in range(3))
EAGER = ConsumerRules((("t0", 3),), ("range",), RebalanceProtocol.EAGER)
COOPERATIVE = ConsumerRules((("t0", 3),), ("cooperative-sticky",), RebalanceProtocol.COOPERATIVE)
STABLE = Consumer(
    phase=ClientPhase.STABLE, member_id="m", generation=3, protocol_name="range", owned=(T0, T1)
)


@pytest.mark.parametrize(
    ("rules", "consumer", "owned"),
    [
        (EAGER, STABLE, ()),
        (COOPERATIVE, STABLE, (T0, T1)),
        (COOPERATIVE, replace(STABLE, generation=-1), ()),
        (COOPERATIVE, replace(STABLE, member_id=""), ()),
    ],
)
def test_prepare_join_eager_revokes_cooperative_keeps_a_reset_member_loses(rules, consumer, owned):
    assert client.prepare_join(rules, consumer).owned == owned


def test_the_join_request_reports_owned_partitions_and_generation():
    request = client.join_request(COOPERATIVE, STABLE, "i0")
    assert request.member_id == "m" and request.group_instance_id == "i0"
    assert [protocol.name for protocol in request.protocols] == ["cooperative-sticky"]
    assert request.protocols[0].metadata == Subscription(("t0",), (T0, T1), 3)


def test_join_answers():
    joining = replace(STABLE, phase=ClientPhase.JOINING)
    members = (JoinGroupResponseMember("m", None, Subscription(("t0",))),)
    leader = client.on_join_response(
        joining, JoinGroupResponse(Errors.NONE, 4, "consumer", "range", "m", False, "m", members)
    )
    assert (leader.phase, leader.generation, leader.leader_members) == (ClientPhase.JOINED, 4, members)
    skip = client.on_join_response(
        joining, JoinGroupResponse(Errors.NONE, 4, "consumer", "range", "m", True, "m", members)
    )
    assert skip.leader_members == ()
    new = client.on_join_response(
        Consumer(phase=ClientPhase.JOINING), JoinGroupResponse(Errors.MEMBER_ID_REQUIRED, member_id="c0-5")
    )
    assert (new.phase, new.member_id) == (ClientPhase.UNJOINED, "c0-5")
    unknown = client.on_join_response(joining, JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID))
    assert (unknown.member_id, unknown.generation, unknown.owned) == ("", -1, ())
    fenced = client.on_join_response(joining, JoinGroupResponse(Errors.FENCED_INSTANCE_ID))
    assert (
        fenced.status is ClientStatus.STOPPED
        and fenced.fatal_error is Errors.FENCED_INSTANCE_ID
        and fenced.reading == ()
    )
    retry = client.on_join_response(joining, JoinGroupResponse(Errors.REBALANCE_IN_PROGRESS))
    assert retry.phase is ClientPhase.UNJOINED and retry.owned == (T0, T1)


def test_the_leader_assigns_with_the_selected_assignor_and_followers_send_nothing():
    members = tuple(JoinGroupResponseMember(m, None, Subscription(("t0",))) for m in ("a", "b"))
    leader = Consumer(
        phase=ClientPhase.JOINED, member_id="a", generation=1, protocol_name="range", leader_members=members
    )
    request = client.sync_request(EAGER, leader, None)
    assert [(entry.member_id, entry.assignment.partitions) for entry in request.assignments] == [
        ("a", (T0, T1)),
        ("b", (T2,)),
    ]
    follower = replace(leader, leader_members=())
    assert client.sync_request(EAGER, follower, None).assignments == ()


def test_sync_success_eager_takes_the_assignment():
    syncing = replace(STABLE, phase=ClientPhase.SYNCING, owned=())
    done = client.on_sync_response(
        EAGER, syncing, SyncGroupResponse(Errors.NONE, assignment=Assignment((T2,)))
    )
    assert (done.phase, done.owned, done.rejoin_needed) == (ClientPhase.STABLE, (T2,), False)


def test_sync_success_cooperative_revokes_what_it_lost_and_rejoins():
    syncing = replace(STABLE, phase=ClientPhase.SYNCING)
    done = client.on_sync_response(
        COOPERATIVE, syncing, SyncGroupResponse(Errors.NONE, assignment=Assignment((T0,)))
    )
    assert (done.owned, done.rejoin_needed) == ((T0,), True)
    kept = client.on_sync_response(
        COOPERATIVE, syncing, SyncGroupResponse(Errors.NONE, assignment=Assignment((T0, T1, T2)))
    )
    assert (kept.owned, kept.rejoin_needed) == ((T0, T1, T2), False)


@pytest.mark.parametrize(
    "error", [Errors.REBALANCE_IN_PROGRESS, Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION]
)
def test_a_failed_sync_gives_up_partitions_unless_the_old_rule(error):
    syncing = replace(STABLE, phase=ClientPhase.SYNCING)
    fixed = client.on_sync_response(COOPERATIVE, syncing, SyncGroupResponse(error))
    assert (fixed.phase, fixed.owned, fixed.generation) == (ClientPhase.UNJOINED, (), -1)
    assert fixed.member_id == ("" if error is Errors.UNKNOWN_MEMBER_ID else "m")
    old_rules = replace(COOPERATIVE, failed_sync_gives_up_partitions=False)
    old = client.on_sync_response(old_rules, syncing, SyncGroupResponse(error))
    assert (old.phase, old.owned, old.generation, old.member_id) == (ClientPhase.UNJOINED, (T0, T1), 3, "m")


@pytest.mark.parametrize(
    ("error", "phase", "owned", "rejoin", "status"),
    [
        (Errors.NONE, ClientPhase.STABLE, (T0, T1), False, ClientStatus.RUNNING),
        (Errors.REBALANCE_IN_PROGRESS, ClientPhase.STABLE, (T0, T1), True, ClientStatus.RUNNING),
        (Errors.UNKNOWN_MEMBER_ID, ClientPhase.UNJOINED, (), False, ClientStatus.RUNNING),
        (Errors.ILLEGAL_GENERATION, ClientPhase.UNJOINED, (), False, ClientStatus.RUNNING),
        (Errors.FENCED_INSTANCE_ID, ClientPhase.STABLE, (), False, ClientStatus.STOPPED),
    ],
)
def test_heartbeat_answers(error, phase, owned, rejoin, status):
    after = client.on_heartbeat_response(STABLE, HeartbeatResponse(error))
    assert (after.phase, after.owned, after.rejoin_needed, after.status) == (phase, owned, rejoin, status)


def test_heartbeats_run_from_the_join_response_on_and_leave_revokes_everything():
    assert not client.may_heartbeat(replace(STABLE, phase=ClientPhase.JOINING))
    assert client.may_heartbeat(replace(STABLE, phase=ClientPhase.JOINED))
    left = client.leave(STABLE)
    assert left.status is ClientStatus.STOPPED and left.owned == () and left.fatal_error is None
    assert client.commit_request(STABLE, None, 9).offsets == ((T0, 9), (T1, 9))


def test_answers_that_find_the_consumer_elsewhere_are_ignored():
    reset = replace(STABLE, phase=ClientPhase.UNJOINED, member_id="", generation=-1, owned=())
    stale_sync = SyncGroupResponse(Errors.NONE, assignment=Assignment((T2,)))
    assert client.on_sync_response(EAGER, reset, stale_sync) == reset
    assert (
        client.on_join_response(
            reset, JoinGroupResponse(Errors.NONE, 9, "consumer", "range", "x", False, "m")
        )
        == reset
    )
