"""Action-level tests of the partition spec (`spec.partition`).

Every state is built by running actions from `initial_state(config)` through `step`, so each
test reads as a protocol trace. `run` asserts that every step is enabled, that every
invariant in INVARIANTS holds in every state along the trace (except those a test names as
expected to break, e.g. under the pre-0.11 `hw` truncation rule) and that every step
property holds on every transition. For each action there is at least one test of its guard
(`step` returns None where Kafka would not allow it) and one of its exact effect.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import replace

import pytest

from spec.log import EMPTY_LOG, ReplicaLog
from spec.partition import (
    INVARIANTS,
    STEP_PROPERTIES,
    Action,
    BrokerCrash,
    BrokerRestart,
    ClockTick,
    ControllerMoveLeadership,
    ControllerState,
    FetchPhase,
    FetchResponse,
    FollowerHandleFetchResponse,
    FollowerProgress,
    FollowerTruncate,
    LeaderAdvanceLogStartOffset,
    LeaderHandleFetch,
    LeaderShrinkIsr,
    PartitionConfig,
    PartitionState,
    ProducerSend,
    Replica,
    ReplicaBecomeLeaderOrFollower,
    Role,
    acknowledged_records_survive,
    acks_all_records_survive,
    candidate_actions,
    committed_records_survive,
    consumed_records_survive,
    initial_state,
    leader_epochs_only_grow,
    step,
    true_leader,
)
from spec.types import UNDEFINED_EPOCH, Acks, EpochEntry, ErrorCode, Record, ReplicaId, TruncationRule

R0, R1, R2 = ReplicaId(0), ReplicaId(1), ReplicaId(2)

# Every setting explicit, so the traces do not depend on the spec's default bounds.
BASE = PartitionConfig(
    replication_factor=2,
    min_insync_replicas=1,
    producer_acks=(Acks.ALL,),
    unclean_leader_election=False,
    truncation=TruncationRule.LEADER_EPOCH,
    replica_lag_ticks=0,  # one tick is the whole replica.lag.time.max.ms
    max_records=2,
    max_leader_moves=2,
    max_crashes=2,
    max_lossy_crashes=0,
    controller_elections=True,
    retention=False,
)
ACKS1 = replace(BASE, producer_acks=(Acks.LEADER,))
HW_RULE = replace(BASE, truncation=TruncationRule.HIGH_WATERMARK)
HW_RULE_3_MOVES = replace(BASE, truncation=TruncationRule.HIGH_WATERMARK, max_leader_moves=3)
MIN_ISR_2 = replace(BASE, min_insync_replicas=2, producer_acks=(Acks.ALL, Acks.LEADER))
UNCLEAN = replace(BASE, unclean_leader_election=True)
LOSSY = replace(BASE, max_lossy_crashes=1)
RETENTION = replace(BASE, retention=True)
RF3 = replace(BASE, replication_factor=3)

# Invariants the pre-0.11 `hw` rule, unclean election and acks=1 are known to break (KIP-101).
DURABILITY = frozenset(
    {
        "committed_records_survive",
        "consumed_records_survive",
        "acknowledged_records_survive",
        "acks_all_records_survive",
    }
)


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------


def assert_invariants(state: PartitionState, allowed_to_fail: Collection[str] = ()) -> None:
    """Every invariant of INVARIANTS not named in `allowed_to_fail` holds in `state`."""
    failing = [name for name, holds in INVARIANTS.items() if name not in allowed_to_fail and not holds(state)]
    assert not failing, f"invariants fail: {failing} in {state}"


def run(
    config: PartitionConfig,
    *actions: Action,
    start: PartitionState | None = None,
    allowed_to_fail: Collection[str] = (),
) -> PartitionState:
    """Apply `actions` in order from `start` (default: the initial state), asserting each is
    enabled, that the invariants hold after every step and the step properties on every
    transition."""
    state = initial_state(config) if start is None else start
    assert_invariants(state, allowed_to_fail)
    for index, action in enumerate(actions):
        after = step(config, state, action)
        assert after is not None, f"step {index} ({action}) is not enabled"
        for name, holds in STEP_PROPERTIES.items():
            assert holds(state, after), f"step property {name} fails on step {index} ({action})"
        assert_invariants(after, allowed_to_fail)
        state = after
    return state


def disabled(config: PartitionConfig, state: PartitionState, action: Action) -> bool:
    """The action's guard refuses it in `state`."""
    return step(config, state, action) is None


def log_of(state: PartitionState, replica: ReplicaId) -> ReplicaLog:
    return state.replicas[replica].log


def progress_of(state: PartitionState, leader: ReplicaId, follower: ReplicaId) -> FollowerProgress | None:
    return state.replicas[leader].progress[follower]


def every_action(config: PartitionConfig, state: PartitionState) -> Iterator[Action]:
    """Brute force: every action with every parameter that could conceivably be enabled."""
    ids = config.replica_ids
    top = max(replica.log.log_end_offset for replica in state.replicas) + 2
    yield ClockTick()
    for replica in ids:
        for acks in Acks:
            yield ProducerSend(replica, acks)
        yield LeaderHandleFetch(replica)
        yield FollowerHandleFetchResponse(replica)
        yield FollowerTruncate(replica)
        yield ControllerMoveLeadership(replica)
        yield BrokerRestart(replica)
        yield ReplicaBecomeLeaderOrFollower(replica)
        for other in ids:
            yield LeaderShrinkIsr(replica, other)
        for offset in range(-1, top + 1):
            yield BrokerCrash(replica, offset)
            yield LeaderAdvanceLogStartOffset(replica, offset)


def reachable(config: PartitionConfig, depth: int) -> list[PartitionState]:
    """Every state reachable in at most `depth` steps (breadth first, via candidate_actions)."""
    seen = {initial_state(config)}
    frontier = list(seen)
    for _ in range(depth):
        following: list[PartitionState] = []
        for state in frontier:
            for action in candidate_actions(config, state):
                after = step(config, state, action)
                if after is not None and after not in seen:
                    seen.add(after)
                    following.append(after)
        frontier = following
    return list(seen)


# A record produced with acks=all, replicated and committed: leader HW 1, follower HW 0.
COMMIT = (
    ProducerSend(R0, Acks.ALL),
    LeaderHandleFetch(R1),
    FollowerHandleFetchResponse(R1),
    LeaderHandleFetch(R1),
)


# ---------------------------------------------------------------------------------------
# Initial state
# ---------------------------------------------------------------------------------------


def test_initial_state_broker_0_leads_epoch_0_with_full_isr():
    state = initial_state(BASE)
    assert state.controller == ControllerState(leader=R0, leader_epoch=0, isr=frozenset({R0, R1}))
    leader, follower = state.replicas
    assert (leader.role, leader.leader, leader.leader_epoch) == (Role.LEADER, R0, 0)
    assert leader.isr == frozenset({R0, R1})
    assert leader.progress == (None, FollowerProgress(None, 0))
    assert leader.log == ReplicaLog(epoch_cache=(EpochEntry(0, 0),))
    assert (follower.role, follower.leader, follower.leader_epoch) == (Role.FOLLOWER, R0, 0)
    assert follower.phase is FetchPhase.FETCHING  # nothing to truncate in an empty log
    assert follower.log == EMPTY_LOG
    assert true_leader(state) == R0
    assert_invariants(state)


@pytest.mark.parametrize(
    "config",
    [BASE, ACKS1, HW_RULE, MIN_ISR_2, UNCLEAN, LOSSY, RETENTION, RF3, replace(BASE, replication_factor=1)],
)
def test_every_invariant_holds_initially(config):
    state = initial_state(config)
    for name, holds in INVARIANTS.items():
        assert holds(state), name


# ---------------------------------------------------------------------------------------
# ProducerSend
# ---------------------------------------------------------------------------------------


def test_producer_send_acks_all_appends_and_waits_for_the_high_watermark():
    state = run(BASE, ProducerSend(R0, Acks.ALL))
    leader = state.replicas[R0]
    assert leader.log.records == (Record(0, 0),)
    assert leader.log.log_end_offset == 1
    assert leader.log.high_watermark == 0  # the follower's LEO is not known yet
    assert leader.waiting_acks_all == ((0, 0),)
    assert state.history.next_value == 1
    assert state.history.acknowledged == frozenset()
    assert state.history.committed == frozenset()
    assert state.replicas[R1] == initial_state(BASE).replicas[R1]


def test_producer_send_acks_1_is_acknowledged_on_append():
    state = run(ACKS1, ProducerSend(R0, Acks.LEADER))
    assert log_of(state, R0).records == (Record(0, 0),)
    assert state.history.acknowledged == frozenset({(0, 0)})
    assert state.history.acknowledged_all == frozenset()
    assert state.replicas[R0].waiting_acks_all == ()
    assert log_of(state, R0).high_watermark == 0


def test_producer_send_acks_0_is_never_acknowledged():
    config = replace(BASE, producer_acks=(Acks.NONE,))
    state = run(
        config,
        ProducerSend(R0, Acks.NONE),
        LeaderHandleFetch(R1),
        FollowerHandleFetchResponse(R1),
        LeaderHandleFetch(R1),
    )
    assert log_of(state, R0).high_watermark == 1
    assert state.history.committed == frozenset({(0, 0)})
    assert state.history.acknowledged == frozenset()
    assert state.replicas[R0].waiting_acks_all == ()


def test_producer_send_acks_all_with_single_replica_commits_at_once():
    config = replace(BASE, replication_factor=1)
    state = run(config, ProducerSend(R0, Acks.ALL))
    assert log_of(state, R0).high_watermark == 1
    assert state.history.acknowledged_all == frozenset({(0, 0)})
    assert state.history.acknowledged == frozenset({(0, 0)})
    assert state.history.committed == frozenset({(0, 0)})
    assert state.history.consumable == frozenset({(0, 0)})
    assert state.replicas[R0].waiting_acks_all == ()


def test_producer_send_guards():
    state = initial_state(BASE)
    assert disabled(BASE, state, ProducerSend(R1, Acks.ALL))  # a follower is not the leader
    assert disabled(BASE, state, ProducerSend(R0, Acks.LEADER))  # acks=1 is not configured
    full = run(BASE, ProducerSend(R0, Acks.ALL), ProducerSend(R0, Acks.ALL))
    assert full.history.next_value == BASE.max_records
    assert disabled(BASE, full, ProducerSend(R0, Acks.ALL))  # record bound reached
    crashed = run(BASE, BrokerCrash(R0, 0))
    assert disabled(BASE, crashed, ProducerSend(R0, Acks.ALL))  # a dead broker
    # the new leader accepts writes only once it has applied the LeaderAndIsr
    assert disabled(BASE, crashed, ProducerSend(R1, Acks.ALL))
    assert not disabled(
        BASE, run(BASE, ReplicaBecomeLeaderOrFollower(R1), start=crashed), ProducerSend(R1, Acks.ALL)
    )


def test_producer_send_acks_all_refused_with_not_enough_replicas_when_isr_below_min():
    shrunk = run(MIN_ISR_2, ClockTick(), LeaderShrinkIsr(R0, R1))
    assert shrunk.replicas[R0].isr == frozenset({R0})
    refused = run(MIN_ISR_2, ProducerSend(R0, Acks.ALL), start=shrunk)
    assert refused.replicas == shrunk.replicas  # nothing appended
    assert log_of(refused, R0).log_end_offset == 0
    assert refused.history.produce_rejections == 1
    assert refused.history.next_value == 0
    assert refused.history.acknowledged == frozenset()
    # a second rejection teaches nothing new: the bounded model disables it
    assert disabled(MIN_ISR_2, refused, ProducerSend(R0, Acks.ALL))
    # acks=1 does not check min.insync.replicas
    accepted = run(MIN_ISR_2, ProducerSend(R0, Acks.LEADER), start=refused)
    assert log_of(accepted, R0).records == (Record(0, 0),)
    assert accepted.history.acknowledged == frozenset({(0, 0)})


def test_producer_send_acks_all_not_enough_replicas_after_append():
    config = replace(BASE, min_insync_replicas=2)
    appended = run(config, ProducerSend(R0, Acks.ALL), LeaderHandleFetch(R1), FollowerHandleFetchResponse(R1))
    assert appended.replicas[R0].waiting_acks_all == ((0, 0),)
    assert log_of(appended, R0).high_watermark == 0
    state = run(config, ClockTick(), LeaderShrinkIsr(R0, R1), start=appended)
    assert state.controller.isr == frozenset({R0})
    assert log_of(state, R0).high_watermark == 1  # the HW passes the record ...
    assert log_of(state, R0).records == (Record(0, 0),)  # which stays in the log ...
    assert state.history.committed == frozenset({(0, 0)})
    assert state.replicas[R0].waiting_acks_all == ()  # the producer got an answer ...
    assert state.history.acknowledged_all == frozenset()  # NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert state.history.acknowledged == frozenset()
    assert state.history.produce_rejections == 0


def test_zombie_leader_accepts_acks_1_writes_until_it_applies_the_new_epoch():
    moved = run(ACKS1, ControllerMoveLeadership(R1), ReplicaBecomeLeaderOrFollower(R1))
    assert true_leader(moved) == R1
    zombie = run(
        ACKS1, ProducerSend(R0, Acks.LEADER), start=moved, allowed_to_fail={"acknowledged_records_survive"}
    )
    assert log_of(zombie, R0).records == (Record(0, 0),)  # appended in the zombie's old epoch
    assert zombie.history.acknowledged == frozenset({(0, 0)})
    assert not acknowledged_records_survive(zombie)  # acks=1 loss: Kafka makes no promise
    demoted = run(ACKS1, ReplicaBecomeLeaderOrFollower(R0), start=moved)
    assert disabled(ACKS1, demoted, ProducerSend(R0, Acks.LEADER))


def test_zombie_leader_high_watermark_is_consumable_but_not_committed():
    # broker 1 was elected but still follows epoch 0: it keeps fetching from the zombie, whose
    # HW passes the record; consumers reading from the zombie could see it, but only the true
    # leader's HW commits
    state = run(
        BASE,
        ControllerMoveLeadership(R1),
        ProducerSend(R0, Acks.ALL),
        LeaderHandleFetch(R1),
        FollowerHandleFetchResponse(R1),
        LeaderHandleFetch(R1),
    )
    assert true_leader(state) is None
    assert log_of(state, R0).high_watermark == 1
    assert state.history.acknowledged_all == frozenset({(0, 0)})
    assert state.history.consumable == frozenset({(0, 0)})
    assert state.history.committed == frozenset()
    state = run(BASE, ReplicaBecomeLeaderOrFollower(R1), start=state)
    assert true_leader(state) == R1
    assert log_of(state, R1).records == (Record(0, 0),)  # the acknowledged record survives
    assert state.history.committed == frozenset()  # broker 1's own HW is still 0


# ---------------------------------------------------------------------------------------
# LeaderHandleFetch and FollowerHandleFetchResponse
# ---------------------------------------------------------------------------------------


def test_fetch_round_trips_commit_an_acks_all_record():
    produced = run(BASE, ProducerSend(R0, Acks.ALL))

    fetched = run(BASE, LeaderHandleFetch(R1), start=produced)
    assert progress_of(fetched, R0, R1) == FollowerProgress(0, 0)
    assert log_of(fetched, R0).high_watermark == 0
    assert fetched.replicas[R1].fetch_in_flight == FetchResponse(
        0, ErrorCode.NONE, 0, (Record(0, 0),), 0, 0, 1
    )
    assert log_of(fetched, R1) == EMPTY_LOG  # nothing applied until the response is handled

    handled = run(BASE, FollowerHandleFetchResponse(R1), start=fetched)
    assert handled.replicas[R1].fetch_in_flight is None
    assert log_of(handled, R1) == ReplicaLog(records=(Record(0, 0),), epoch_cache=(EpochEntry(0, 0),))

    committed = run(BASE, LeaderHandleFetch(R1), start=handled)
    assert progress_of(committed, R0, R1) == FollowerProgress(1, 0)
    assert log_of(committed, R0).high_watermark == 1
    assert committed.replicas[R0].waiting_acks_all == ()
    assert committed.history.acknowledged_all == frozenset({(0, 0)})
    assert committed.history.acknowledged == frozenset({(0, 0)})
    assert committed.history.committed == frozenset({(0, 0)})
    assert committed.history.consumable == frozenset({(0, 0)})
    assert log_of(committed, R1).high_watermark == 0  # one more round trip needed
    assert committed.replicas[R1].fetch_in_flight == FetchResponse(0, ErrorCode.NONE, 1, (), 1, 0, 1)

    final = run(BASE, FollowerHandleFetchResponse(R1), start=committed)
    assert log_of(final, R1).high_watermark == 1
    assert log_of(final, R1).records == log_of(final, R0).records


def test_leader_handle_fetch_guards():
    state = initial_state(BASE)
    assert disabled(BASE, state, LeaderHandleFetch(R0))  # the leader does not fetch
    in_flight = run(BASE, LeaderHandleFetch(R1))
    assert disabled(BASE, in_flight, LeaderHandleFetch(R1))  # one fetch in flight at a time
    follower_dead = run(BASE, BrokerCrash(R1, 0))
    assert disabled(BASE, follower_dead, LeaderHandleFetch(R1))
    # the follower still follows its dead leader (it has not applied the new epoch)
    leader_dead = run(BASE, BrokerCrash(R0, 0))
    assert leader_dead.replicas[R1].leader == R0
    assert disabled(BASE, leader_dead, LeaderHandleFetch(R1))


def test_fetch_fenced_when_follower_is_on_an_older_epoch():
    # 0 -> 1 -> 0: broker 0 leads epoch 2, broker 1 still follows epoch 0 (FENCED_LEADER_EPOCH)
    state = run(
        BASE, ControllerMoveLeadership(R1), ControllerMoveLeadership(R0), ReplicaBecomeLeaderOrFollower(R0)
    )
    assert state.replicas[R0].leader_epoch == 2
    follower = state.replicas[R1]
    assert (follower.leader, follower.leader_epoch, follower.phase) == (R0, 0, FetchPhase.FETCHING)
    assert disabled(BASE, state, LeaderHandleFetch(R1))
    state = run(BASE, ReplicaBecomeLeaderOrFollower(R1), start=state)
    assert disabled(BASE, state, LeaderHandleFetch(R1))  # must truncate first
    state = run(BASE, FollowerTruncate(R1), start=state)
    after = run(BASE, LeaderHandleFetch(R1), start=state)
    response = after.replicas[R1].fetch_in_flight
    assert response is not None
    assert (response.leader_epoch, response.error) == (2, ErrorCode.NONE)


def test_fetch_fenced_when_leader_is_on_an_older_epoch():
    # UNKNOWN_LEADER_EPOCH: the follower applied epoch 2 (hw rule: truncated alone), the leader did not
    state = run(
        HW_RULE,
        ControllerMoveLeadership(R1),
        ControllerMoveLeadership(R0),
        ReplicaBecomeLeaderOrFollower(R1),
        FollowerTruncate(R1),
    )
    assert state.replicas[R1].phase is FetchPhase.FETCHING
    assert (state.replicas[R0].leader_epoch, state.replicas[R1].leader_epoch) == (0, 2)
    assert disabled(HW_RULE, state, LeaderHandleFetch(R1))
    state = run(HW_RULE, ReplicaBecomeLeaderOrFollower(R0), start=state)
    assert not disabled(HW_RULE, state, LeaderHandleFetch(R1))


def test_fetch_below_leader_end_keeps_lag_and_at_end_resets_it():
    state = run(BASE, ClockTick())
    assert progress_of(state, R0, R1) == FollowerProgress(None, 1)
    state = run(BASE, LeaderHandleFetch(R1), start=state)  # at the leader's LEO 0
    assert progress_of(state, R0, R1) == FollowerProgress(0, 0)
    state = run(
        BASE,
        FollowerHandleFetchResponse(R1),
        ClockTick(),
        ProducerSend(R0, Acks.ALL),
        LeaderHandleFetch(R1),
        start=state,
    )
    assert progress_of(state, R0, R1) == FollowerProgress(0, 1)  # below LEO 1: still lagging
    assert not disabled(BASE, state, LeaderShrinkIsr(R0, R1))


def test_follower_out_of_isr_rejoins_at_the_high_watermark():
    state = run(ACKS1, ClockTick(), LeaderShrinkIsr(R0, R1), ProducerSend(R0, Acks.LEADER))
    assert log_of(state, R0).high_watermark == 1
    state = run(ACKS1, LeaderHandleFetch(R1), start=state)  # at 0, below the HW
    assert state.replicas[R0].isr == frozenset({R0})
    assert state.controller.isr == frozenset({R0})
    assert progress_of(state, R0, R1) == FollowerProgress(0, ACKS1.replica_lag_ticks + 1)
    state = run(ACKS1, FollowerHandleFetchResponse(R1), LeaderHandleFetch(R1), start=state)  # at 1 = HW
    assert state.replicas[R0].isr == frozenset({R0, R1})
    assert state.controller.isr == frozenset({R0, R1})
    assert state.controller.leader_epoch == 0  # an ISR change by the leader keeps the epoch
    assert progress_of(state, R0, R1) == FollowerProgress(1, 0)


def test_isr_expansion_waits_for_the_leader_epoch_start_offset():
    # KAFKA-7128: broker 1 leads epoch 1 from offset 1 with HW 0; broker 2, out of the ISR,
    # fetching at 0 >= HW is not enough: it must reach the epoch start offset 1.
    config = replace(BASE, replication_factor=3, producer_acks=(Acks.LEADER,))
    state = run(
        config,
        ProducerSend(R0, Acks.LEADER),
        LeaderHandleFetch(R1),
        FollowerHandleFetchResponse(R1),
        ControllerMoveLeadership(R1),
        ReplicaBecomeLeaderOrFollower(R1),
        ClockTick(),
        LeaderShrinkIsr(R1, R2),
        ReplicaBecomeLeaderOrFollower(R2),
        FollowerTruncate(R2),
    )
    leader = state.replicas[R1]
    assert leader.log.epoch_cache == (EpochEntry(0, 0), EpochEntry(1, 1))
    assert leader.log.high_watermark == 0
    assert state.controller.isr == frozenset({R0, R1})
    state = run(config, LeaderHandleFetch(R2), start=state)
    assert state.controller.isr == frozenset({R0, R1})
    assert state.replicas[R1].isr == frozenset({R0, R1})
    state = run(config, FollowerHandleFetchResponse(R2), LeaderHandleFetch(R2), start=state)
    assert state.controller.isr == frozenset({R0, R1, R2})
    assert state.replicas[R1].isr == frozenset({R0, R1, R2})
    assert progress_of(state, R1, R2) == FollowerProgress(1, 0)


def test_zombie_leader_cannot_expand_the_isr():
    # broker 0 still leads epoch 0 after the controller moved leadership away: its ISR write
    # would fail the zkVersion check, so a fetch does not add the follower back
    config = replace(BASE, replication_factor=3, producer_acks=(Acks.LEADER,))
    state = run(config, ClockTick(), LeaderShrinkIsr(R0, R2), ControllerMoveLeadership(R1))
    assert true_leader(state) is None
    state = run(config, LeaderHandleFetch(R2), start=state)  # at 0 = HW = epoch start
    assert state.replicas[R0].isr == frozenset({R0, R1})
    assert state.controller.isr == frozenset({R0, R1})


def test_follower_handle_fetch_response_guards():
    state = initial_state(BASE)
    assert disabled(BASE, state, FollowerHandleFetchResponse(R1))  # nothing in flight
    assert disabled(BASE, state, FollowerHandleFetchResponse(R0))
    crashed = run(BASE, LeaderHandleFetch(R1), BrokerCrash(R1, 0))
    assert crashed.replicas[R1].fetch_in_flight is None  # lost with the broker's memory
    assert disabled(BASE, crashed, FollowerHandleFetchResponse(R1))


def test_follower_ahead_of_its_leader_gets_offset_out_of_range_and_truncates_to_leader_end():
    # KIP-101 scenario 1 under the hw rule: broker 1 truncated the committed record to its own
    # HW 0 and then became leader; broker 0 still has it and fetches beyond the leader's end.
    allowed = DURABILITY
    state = run(
        HW_RULE_3_MOVES,
        *COMMIT,
        ControllerMoveLeadership(R1),
        ControllerMoveLeadership(R0),
        ReplicaBecomeLeaderOrFollower(R1),
        FollowerTruncate(R1),
        ReplicaBecomeLeaderOrFollower(R0),
        ControllerMoveLeadership(R1),
        ReplicaBecomeLeaderOrFollower(R1),
        allowed_to_fail=allowed,
    )
    assert state.history.committed == frozenset({(0, 0)})
    assert log_of(state, R1).log_end_offset == 0
    assert not committed_records_survive(state)  # the data loss KIP-101 fixes
    assert not acks_all_records_survive(state)
    state = run(
        HW_RULE_3_MOVES,
        ReplicaBecomeLeaderOrFollower(R0),
        FollowerTruncate(R0),
        start=state,
        allowed_to_fail=allowed,
    )
    assert log_of(state, R0).records == (Record(0, 0),)  # its own HW is 1: nothing truncated
    state = run(HW_RULE_3_MOVES, LeaderHandleFetch(R0), start=state, allowed_to_fail=allowed)
    assert state.replicas[R0].fetch_in_flight == FetchResponse(
        3, ErrorCode.OFFSET_OUT_OF_RANGE, 1, (), 0, 0, 0
    )
    assert progress_of(state, R1, R0) == FollowerProgress(None, 0)  # an error does not update progress
    state = run(HW_RULE_3_MOVES, FollowerHandleFetchResponse(R0), start=state, allowed_to_fail=allowed)
    assert log_of(state, R0) == EMPTY_LOG
    assert state.replicas[R0].fetch_in_flight is None


def test_follower_behind_leader_log_start_restarts_its_log_there():
    config = replace(BASE, retention=True, producer_acks=(Acks.LEADER,))
    state = run(
        config,
        ClockTick(),
        LeaderShrinkIsr(R0, R1),
        ProducerSend(R0, Acks.LEADER),
        ProducerSend(R0, Acks.LEADER),
        LeaderAdvanceLogStartOffset(R0, 2),
    )
    assert log_of(state, R0) == ReplicaLog(
        log_start_offset=2, high_watermark=2, epoch_cache=(EpochEntry(0, 2),)
    )
    before = progress_of(state, R0, R1)
    state = run(config, LeaderHandleFetch(R1), start=state)
    assert state.replicas[R1].fetch_in_flight == FetchResponse(
        0, ErrorCode.OFFSET_OUT_OF_RANGE, 0, (), 2, 2, 2
    )
    assert progress_of(state, R0, R1) == before
    state = run(config, FollowerHandleFetchResponse(R1), start=state)
    assert log_of(state, R1) == ReplicaLog(log_start_offset=2, high_watermark=2)
    state = run(config, LeaderHandleFetch(R1), start=state)  # at 2 = HW = epoch start: back in the ISR
    assert state.controller.isr == frozenset({R0, R1})


# ---------------------------------------------------------------------------------------
# FollowerTruncate
# ---------------------------------------------------------------------------------------

# Broker 1 fetched record 0 (HW 0) and, after 0 -> 1 -> 0, follows epoch 2 but is truncating;
# broker 0 has not applied epoch 2 yet.
UNCOMMITTED_THEN_NEW_EPOCH = (
    ProducerSend(R0, Acks.ALL),
    LeaderHandleFetch(R1),
    FollowerHandleFetchResponse(R1),
    ControllerMoveLeadership(R1),
    ControllerMoveLeadership(R0),
    ReplicaBecomeLeaderOrFollower(R1),
)


def test_follower_truncate_guards():
    state = initial_state(BASE)
    assert disabled(BASE, state, FollowerTruncate(R1))  # already fetching
    assert disabled(BASE, state, FollowerTruncate(R0))  # the leader
    # offline partition: the follower has no leader to truncate against, under either rule
    for config in (BASE, HW_RULE):
        offline = run(
            config,
            ClockTick(),
            LeaderShrinkIsr(R0, R1),
            BrokerCrash(R0, 0),
            ReplicaBecomeLeaderOrFollower(R1),
        )
        follower = offline.replicas[R1]
        assert (follower.role, follower.leader, follower.phase) == (
            Role.FOLLOWER,
            None,
            FetchPhase.TRUNCATING,
        )
        assert disabled(config, offline, FollowerTruncate(R1))
        assert disabled(config, offline, LeaderHandleFetch(R1))


def test_hw_rule_truncates_to_own_high_watermark_without_the_leader():
    state = run(HW_RULE, *UNCOMMITTED_THEN_NEW_EPOCH)
    follower = state.replicas[R1]
    assert (follower.leader, follower.leader_epoch, follower.phase) == (R0, 2, FetchPhase.TRUNCATING)
    assert state.replicas[R0].leader_epoch == 0  # the leader has not applied epoch 2
    state = run(HW_RULE, FollowerTruncate(R1), start=state)
    assert log_of(state, R1) == EMPTY_LOG  # truncated to its HW 0: record 0 is gone
    assert state.replicas[R1].phase is FetchPhase.FETCHING


def test_hw_rule_truncates_even_when_the_leader_is_dead():
    state = run(
        HW_RULE,
        ProducerSend(R0, Acks.ALL),
        LeaderHandleFetch(R1),
        FollowerHandleFetchResponse(R1),
        ControllerMoveLeadership(R1),
        ControllerMoveLeadership(R0),
        ReplicaBecomeLeaderOrFollower(R1),
    )
    state = run(HW_RULE, BrokerCrash(R0, 1), start=state)
    assert state.replicas[R1].leader == R0
    assert not state.replicas[R0].alive
    state = run(HW_RULE, FollowerTruncate(R1), start=state)
    assert log_of(state, R1).log_end_offset == 0
    assert disabled(BASE, run(BASE, *UNCOMMITTED_THEN_NEW_EPOCH, BrokerCrash(R0, 1)), FollowerTruncate(R1))


def test_epoch_rule_needs_the_leader_on_the_same_epoch_and_keeps_what_it_has():
    state = run(BASE, *UNCOMMITTED_THEN_NEW_EPOCH)
    assert disabled(BASE, state, FollowerTruncate(R1))  # KIP-320: leader still on epoch 0
    state = run(BASE, ReplicaBecomeLeaderOrFollower(R0), start=state)
    assert log_of(state, R0).epoch_cache == (EpochEntry(0, 0), EpochEntry(2, 1))
    state = run(BASE, FollowerTruncate(R1), start=state)
    assert log_of(state, R1) == ReplicaLog(records=(Record(0, 0),), epoch_cache=(EpochEntry(0, 0),))
    assert state.replicas[R1].phase is FetchPhase.FETCHING


def test_epoch_rule_removes_records_the_new_leader_does_not_have():
    allowed = {"acknowledged_records_survive"}  # acks=1, not replicated: Kafka's documented loss
    state = run(
        ACKS1,
        ProducerSend(R0, Acks.LEADER),
        ControllerMoveLeadership(R1),
        ReplicaBecomeLeaderOrFollower(R1),
        ReplicaBecomeLeaderOrFollower(R0),
        allowed_to_fail=allowed,
    )
    assert not acknowledged_records_survive(state)
    assert log_of(state, R1).epoch_cache == (EpochEntry(1, 0),)
    assert log_of(state, R0).records == (Record(0, 0),)
    state = run(ACKS1, FollowerTruncate(R0), start=state, allowed_to_fail=allowed)
    assert log_of(state, R0) == EMPTY_LOG
    assert state.replicas[R0].phase is FetchPhase.FETCHING


def test_epoch_rule_follower_keeps_prefix_below_leader_log_start_until_fetch_moves_it():
    # The leader answers an epoch older than its whole (retention-trimmed) cache with
    # (requested epoch, first start offset), as LeaderEpochFileCache.endOffsetFor does, so
    # the follower keeps its own record 0; its next fetch response moves its log start past it.
    config = replace(BASE, retention=True)
    state = run(
        config,
        ProducerSend(R0, Acks.ALL),
        BrokerCrash(R0, 1),
        BrokerRestart(R0),
        ReplicaBecomeLeaderOrFollower(R0),
        ReplicaBecomeLeaderOrFollower(R1),
        ProducerSend(R1, Acks.ALL),
        LeaderAdvanceLogStartOffset(R1, 1),
    )
    assert log_of(state, R1) == ReplicaLog(
        log_start_offset=1, high_watermark=1, epoch_cache=(EpochEntry(1, 1),)
    )
    state = run(config, FollowerTruncate(R0), start=state)
    assert log_of(state, R0).records == (Record(0, 0),)  # not the committed Record(1, 1)
    state = run(config, LeaderHandleFetch(R0), FollowerHandleFetchResponse(R0), start=state)
    assert log_of(state, R0) == ReplicaLog(
        log_start_offset=1, high_watermark=1, epoch_cache=(EpochEntry(0, 1),)
    )


# ---------------------------------------------------------------------------------------
# LeaderShrinkIsr and ClockTick
# ---------------------------------------------------------------------------------------


def test_leader_shrink_isr_only_after_a_tick_makes_the_follower_lag():
    state = initial_state(BASE)
    assert disabled(BASE, state, LeaderShrinkIsr(R0, R1))
    state = run(BASE, ClockTick(), start=state)
    state = run(BASE, LeaderShrinkIsr(R0, R1), start=state)
    assert state.replicas[R0].isr == frozenset({R0})
    assert state.controller == ControllerState(leader=R0, leader_epoch=0, isr=frozenset({R0}))
    assert progress_of(state, R0, R1) == FollowerProgress(None, 1)


def test_leader_shrink_isr_needs_more_ticks_with_a_larger_lag_limit():
    config = replace(BASE, replica_lag_ticks=1)
    state = run(config, ClockTick())
    assert disabled(config, state, LeaderShrinkIsr(R0, R1))
    state = run(config, ClockTick(), start=state)
    assert progress_of(state, R0, R1) == FollowerProgress(None, 2)
    assert disabled(config, state, ClockTick())  # capped at lag limit + 1
    state = run(config, LeaderShrinkIsr(R0, R1), start=state)
    assert state.controller.isr == frozenset({R0})


def test_leader_shrink_isr_keeps_a_follower_at_the_leader_end():
    state = run(BASE, LeaderHandleFetch(R1), FollowerHandleFetchResponse(R1), ClockTick())
    assert progress_of(state, R0, R1) == FollowerProgress(0, 1)
    assert disabled(BASE, state, LeaderShrinkIsr(R0, R1))  # caught up: at the leader's LEO
    state = run(BASE, ProducerSend(R0, Acks.ALL), start=state)
    assert log_of(state, R0).high_watermark == 0
    state = run(BASE, LeaderShrinkIsr(R0, R1), start=state)  # now it lags
    assert log_of(state, R0).high_watermark == 1  # the HW advances with the smaller ISR
    assert state.history.acknowledged_all == frozenset({(0, 0)})  # ISR 1 >= min ISR 1


def test_leader_shrink_isr_guards():
    state = run(RF3, ClockTick())
    assert disabled(RF3, state, LeaderShrinkIsr(R0, R0))  # the leader never removes itself
    assert disabled(RF3, state, LeaderShrinkIsr(R1, R2))  # not the leader
    state = run(RF3, LeaderShrinkIsr(R0, R2), start=state)
    assert disabled(RF3, state, LeaderShrinkIsr(R0, R2))  # not in the ISR any more
    # a zombie leader cannot shrink: broker 1 was elected in epoch 1
    zombie = run(RF3, ControllerMoveLeadership(R1), start=state)
    assert zombie.replicas[R0].role is Role.LEADER
    assert disabled(RF3, zombie, LeaderShrinkIsr(R0, R1))


def test_clock_tick_ages_isr_followers_until_the_cap():
    state = run(RF3, ClockTick())
    assert state.replicas[R0].progress == (None, FollowerProgress(None, 1), FollowerProgress(None, 1))
    assert state.replicas[R1] == initial_state(RF3).replicas[R1]
    assert state.controller == initial_state(RF3).controller
    assert disabled(RF3, state, ClockTick())  # every count is at the cap
    state = run(RF3, LeaderHandleFetch(R1), start=state)  # at the leader's end: lag reset
    state = run(RF3, ClockTick(), start=state)
    assert state.replicas[R0].progress == (None, FollowerProgress(0, 1), FollowerProgress(None, 1))


def test_clock_tick_disabled_without_followers_to_age():
    assert disabled(
        replace(BASE, replication_factor=1),
        initial_state(replace(BASE, replication_factor=1)),
        ClockTick(),
    )
    # a follower outside the ISR does not age (it is kept at the cap)
    state = run(BASE, ClockTick(), LeaderShrinkIsr(R0, R1))
    assert disabled(BASE, state, ClockTick())
    state = run(BASE, LeaderHandleFetch(R1), start=state)  # at LEO 0 = HW: caught up and back in the ISR
    assert state.controller.isr == frozenset({R0, R1})
    assert progress_of(state, R0, R1) == FollowerProgress(0, 0)
    assert not disabled(BASE, state, ClockTick())
    shrunk = run(
        ACKS1, ClockTick(), LeaderShrinkIsr(R0, R1), ProducerSend(R0, Acks.LEADER), LeaderHandleFetch(R1)
    )
    assert shrunk.controller.isr == frozenset({R0})
    assert progress_of(shrunk, R0, R1) == FollowerProgress(0, 1)
    assert disabled(ACKS1, shrunk, ClockTick())
    offline = run(BASE, ClockTick(), LeaderShrinkIsr(R0, R1), BrokerCrash(R0, 0))
    assert disabled(BASE, offline, ClockTick())


# ---------------------------------------------------------------------------------------
# ControllerMoveLeadership
# ---------------------------------------------------------------------------------------


def test_controller_move_leadership_bumps_the_epoch_only_in_the_controller():
    before = run(BASE, *COMMIT)
    state = run(BASE, ControllerMoveLeadership(R1), start=before)
    assert state.controller == ControllerState(
        leader=R1, leader_epoch=1, isr=frozenset({R0, R1}), elections_moved=1
    )
    assert state.replicas == before.replicas  # brokers learn it from LeaderAndIsr
    assert state.history == before.history
    assert true_leader(state) is None


def test_controller_move_leadership_guards():
    state = initial_state(BASE)
    assert disabled(BASE, state, ControllerMoveLeadership(R0))  # already the leader
    shrunk = run(BASE, ClockTick(), LeaderShrinkIsr(R0, R1))
    assert disabled(BASE, shrunk, ControllerMoveLeadership(R1))  # not in the ISR
    no_elections = replace(BASE, controller_elections=False)
    assert disabled(no_elections, initial_state(no_elections), ControllerMoveLeadership(R1))
    # the last ISR member is dead (offline partition): no clean move to it or to anyone
    offline = run(BASE, BrokerCrash(R1, 0), BrokerCrash(R0, 0), BrokerRestart(R1))
    assert offline.controller.leader is None
    assert disabled(BASE, offline, ControllerMoveLeadership(R0))  # dead
    assert disabled(BASE, offline, ControllerMoveLeadership(R1))  # alive, not in the ISR


def test_controller_move_leadership_bounded_by_max_leader_moves():
    state = run(BASE, ControllerMoveLeadership(R1), ControllerMoveLeadership(R0))
    assert state.controller.elections_moved == BASE.max_leader_moves == 2
    assert state.controller.leader_epoch == 2
    assert disabled(BASE, state, ControllerMoveLeadership(R1))
    assert not disabled(replace(BASE, max_leader_moves=3), state, ControllerMoveLeadership(R1))
    one_move = replace(BASE, max_leader_moves=1)
    assert disabled(one_move, run(one_move, ControllerMoveLeadership(R1)), ControllerMoveLeadership(R0))
    # crash elections are not moves and stay possible
    state = run(BASE, BrokerCrash(R0, 0), start=state)
    assert state.controller.leader == R1
    assert state.controller.elections_moved == 2


# ---------------------------------------------------------------------------------------
# BrokerCrash
# ---------------------------------------------------------------------------------------


def test_follower_crash_removes_it_from_isr_with_a_new_epoch():
    before = run(BASE, *COMMIT, FollowerHandleFetchResponse(R1))
    state = run(BASE, BrokerCrash(R1, 1), start=before)
    assert state.replicas[R1] == Replica(alive=False, log=log_of(before, R1))
    assert state.replicas[R1].role is Role.UNKNOWN
    assert state.replicas[R1].leader_epoch == UNDEFINED_EPOCH
    assert state.controller == ControllerState(leader=R0, leader_epoch=1, isr=frozenset({R0}))
    assert state.replicas[R0] == before.replicas[R0]  # the leader learns it from LeaderAndIsr
    assert state.history.crashes == 1
    assert state.history.lossy_crashes == 0


def test_leader_crash_elects_the_other_isr_member():
    before = run(BASE, *COMMIT, FollowerHandleFetchResponse(R1))
    state = run(BASE, BrokerCrash(R0, 1), start=before)
    assert state.controller == ControllerState(leader=R1, leader_epoch=1, isr=frozenset({R1}))
    assert not state.replicas[R0].alive
    assert state.replicas[R0].log == log_of(before, R0)  # nothing lost
    assert true_leader(state) is None
    state = run(BASE, ReplicaBecomeLeaderOrFollower(R1), start=state)
    assert true_leader(state) == R1
    assert log_of(state, R1).records == (Record(0, 0),)
    assert committed_records_survive(state)


def test_last_isr_member_crash_leaves_the_partition_offline():
    state = run(BASE, ClockTick(), LeaderShrinkIsr(R0, R1))
    state = run(BASE, BrokerCrash(R0, 0), start=state)
    assert state.controller == ControllerState(leader=None, leader_epoch=1, isr=frozenset({R0}))
    assert state.replicas[R1].alive  # alive, but not eligible without unclean election
    assert state.history.unclean_elections == 0
    assert true_leader(state) is None


def test_crash_of_a_replica_outside_the_isr_changes_nothing_in_the_controller():
    state = run(BASE, ClockTick(), LeaderShrinkIsr(R0, R1))
    after = run(BASE, BrokerCrash(R1, 0), start=state)
    assert after.controller == state.controller
    assert after.history.crashes == 1


def test_unclean_election_on_crash():
    state = run(UNCLEAN, ClockTick(), LeaderShrinkIsr(R0, R1), ProducerSend(R0, Acks.ALL))
    assert state.history.committed == frozenset({(0, 0)})
    assert state.history.acknowledged_all == frozenset({(0, 0)})
    state = run(UNCLEAN, BrokerCrash(R0, 1), start=state)
    assert state.controller == ControllerState(leader=R1, leader_epoch=1, isr=frozenset({R1}))
    assert state.history.unclean_elections == 1
    state = run(UNCLEAN, ReplicaBecomeLeaderOrFollower(R1), start=state, allowed_to_fail=DURABILITY)
    assert not committed_records_survive(state)  # the price of unclean election
    assert acks_all_records_survive(state)  # Kafka's promise excludes unclean elections


def test_lossy_crash_trims_log_high_watermark_and_epoch_cache():
    state = run(
        LOSSY,
        *COMMIT,
        FollowerHandleFetchResponse(R1),
        ControllerMoveLeadership(R1),
        ControllerMoveLeadership(R0),
        ReplicaBecomeLeaderOrFollower(R0),
        ReplicaBecomeLeaderOrFollower(R1),
        FollowerTruncate(R1),
        ProducerSend(R0, Acks.ALL),
        LeaderHandleFetch(R1),
        FollowerHandleFetchResponse(R1),
        LeaderHandleFetch(R1),
    )
    assert log_of(state, R0) == ReplicaLog(
        records=(Record(0, 0), Record(2, 1)),
        high_watermark=2,
        epoch_cache=(EpochEntry(0, 0), EpochEntry(2, 1)),
    )
    assert disabled(LOSSY, state, BrokerCrash(R0, 3))
    state = run(LOSSY, BrokerCrash(R0, 1), start=state)
    assert log_of(state, R0) == ReplicaLog(
        records=(Record(0, 0),), high_watermark=1, epoch_cache=(EpochEntry(0, 0),)
    )
    assert state.history.lossy_crashes == 1
    assert state.history.crashes == 1
    assert state.controller == ControllerState(
        leader=R1, leader_epoch=3, isr=frozenset({R1}), elections_moved=2
    )


def test_broker_crash_guards():
    state = run(BASE, ProducerSend(R0, Acks.ALL))
    assert disabled(BASE, state, BrokerCrash(R0, 0))  # lossy crashes not allowed (max 0)
    assert disabled(BASE, state, BrokerCrash(R0, 2))  # beyond the log end
    assert disabled(BASE, state, BrokerCrash(R1, -1))
    assert not disabled(LOSSY, state, BrokerCrash(R0, 0))
    crashed = run(BASE, BrokerCrash(R1, 0), start=state)
    assert disabled(BASE, crashed, BrokerCrash(R1, 0))  # already dead
    one_crash = replace(BASE, max_crashes=1)
    assert disabled(one_crash, run(one_crash, BrokerCrash(R1, 0)), BrokerCrash(R0, 0))
    lossy_once = run(
        LOSSY, *COMMIT, FollowerHandleFetchResponse(R1), BrokerCrash(R0, 0), allowed_to_fail=DURABILITY
    )
    assert lossy_once.history.lossy_crashes == 1
    assert disabled(LOSSY, lossy_once, BrokerCrash(R1, 0))  # the lossy crash bound is used up
    assert not disabled(LOSSY, lossy_once, BrokerCrash(R1, 1))


def test_broker_crash_cannot_keep_less_than_the_log_start():
    config = replace(BASE, retention=True, max_lossy_crashes=1)
    state = run(config, *COMMIT, ProducerSend(R0, Acks.ALL), LeaderAdvanceLogStartOffset(R0, 1))
    assert log_of(state, R0).log_start_offset == 1
    assert disabled(config, state, BrokerCrash(R0, 0))
    assert not disabled(config, state, BrokerCrash(R0, 1))


# ---------------------------------------------------------------------------------------
# BrokerRestart
# ---------------------------------------------------------------------------------------


def test_broker_restart_of_online_partition_only_revives_the_broker():
    crashed = run(BASE, *COMMIT, FollowerHandleFetchResponse(R1), BrokerCrash(R1, 1))
    state = run(BASE, BrokerRestart(R1), start=crashed)
    assert state.replicas[R1] == Replica(alive=True, log=log_of(crashed, R1))
    assert state.controller == crashed.controller
    assert disabled(BASE, state, BrokerRestart(R1))  # alive
    assert disabled(BASE, state, BrokerRestart(R0))
    state = run(BASE, ReplicaBecomeLeaderOrFollower(R1), start=state)
    follower = state.replicas[R1]
    assert (follower.role, follower.leader, follower.leader_epoch) == (Role.FOLLOWER, R0, 1)
    assert follower.phase is FetchPhase.TRUNCATING


def test_broker_restart_elects_the_isr_member_of_an_offline_partition():
    offline = run(BASE, *COMMIT, BrokerCrash(R1, 1), BrokerCrash(R0, 1))
    assert offline.controller == ControllerState(leader=None, leader_epoch=2, isr=frozenset({R0}))
    state = run(BASE, BrokerRestart(R1), start=offline)  # not in the ISR: stays offline
    assert state.controller == offline.controller
    assert state.history.unclean_elections == 0
    state = run(BASE, BrokerRestart(R0), start=state)
    assert state.controller == ControllerState(leader=R0, leader_epoch=3, isr=frozenset({R0}))
    state = run(BASE, ReplicaBecomeLeaderOrFollower(R0), start=state)
    assert true_leader(state) == R0
    assert log_of(state, R0).records == (Record(0, 0),)
    assert log_of(state, R0).epoch_cache == (EpochEntry(0, 0), EpochEntry(3, 1))


def test_broker_restart_unclean_election_of_an_offline_partition():
    offline = run(UNCLEAN, BrokerCrash(R1, 0), BrokerCrash(R0, 0))
    assert offline.controller == ControllerState(leader=None, leader_epoch=2, isr=frozenset({R0}))
    state = run(UNCLEAN, BrokerRestart(R1), start=offline)
    assert state.controller == ControllerState(leader=R1, leader_epoch=3, isr=frozenset({R1}))
    assert state.history.unclean_elections == 1


def test_broker_restart_never_elects_while_the_partition_has_a_leader():
    # even with unclean election enabled, a returning non-ISR replica only becomes a follower
    crashed = run(UNCLEAN, BrokerCrash(R1, 0))
    assert crashed.controller == ControllerState(leader=R0, leader_epoch=1, isr=frozenset({R0}))
    state = run(UNCLEAN, BrokerRestart(R1), start=crashed)
    assert state.controller == crashed.controller
    assert state.history.unclean_elections == 0


# ---------------------------------------------------------------------------------------
# ReplicaBecomeLeaderOrFollower
# ---------------------------------------------------------------------------------------


def test_become_leader_assigns_epoch_at_leo_and_forgets_follower_progress():
    # broker 1 fetched record 0 and has a response with HW 1 in flight when it is elected
    before = run(
        BASE,
        ProducerSend(R0, Acks.ALL),
        LeaderHandleFetch(R1),
        FollowerHandleFetchResponse(R1),
        LeaderHandleFetch(R1),
        ControllerMoveLeadership(R1),
    )
    assert before.replicas[R1].fetch_in_flight is not None
    state = run(BASE, ReplicaBecomeLeaderOrFollower(R1), start=before)
    leader = state.replicas[R1]
    assert (leader.role, leader.leader, leader.leader_epoch) == (Role.LEADER, R1, 1)
    assert leader.isr == frozenset({R0, R1})
    assert leader.phase is FetchPhase.FETCHING
    assert leader.fetch_in_flight is None
    assert leader.progress == (FollowerProgress(None, 0), None)
    assert leader.log == ReplicaLog(
        records=(Record(0, 0),), high_watermark=0, epoch_cache=(EpochEntry(0, 0), EpochEntry(1, 1))
    )
    assert true_leader(state) == R1
    # the unknown follower LEO blocks the HW until broker 0 fetches in epoch 1
    assert disabled(BASE, state, ReplicaBecomeLeaderOrFollower(R1))  # already on the newest epoch


def test_become_follower_drops_fetch_in_flight_and_starts_truncating():
    state = run(
        BASE,
        ProducerSend(R0, Acks.ALL),
        LeaderHandleFetch(R1),
        ControllerMoveLeadership(R1),
        ControllerMoveLeadership(R0),
    )
    assert state.replicas[R1].fetch_in_flight is not None
    state = run(BASE, ReplicaBecomeLeaderOrFollower(R1), start=state)
    assert state.replicas[R1] == Replica(
        alive=True, log=EMPTY_LOG, leader_epoch=2, role=Role.FOLLOWER, leader=R0, phase=FetchPhase.TRUNCATING
    )
    assert disabled(BASE, state, FollowerHandleFetchResponse(R1))


def test_demoted_leader_drops_waiting_acks_all_requests():
    state = run(
        BASE, ProducerSend(R0, Acks.ALL), ControllerMoveLeadership(R1), ReplicaBecomeLeaderOrFollower(R0)
    )
    demoted = state.replicas[R0]
    assert (demoted.role, demoted.leader, demoted.leader_epoch) == (Role.FOLLOWER, R1, 1)
    assert demoted.phase is FetchPhase.TRUNCATING
    assert demoted.waiting_acks_all == ()
    assert demoted.isr == frozenset()
    assert demoted.progress == ()
    assert demoted.log.records == (Record(0, 0),)  # its log is untouched until it truncates
    assert state.history.acknowledged == frozenset()


def test_re_elected_leader_keeps_waiting_requests_and_caps_non_isr_progress():
    state = run(RF3, ProducerSend(R0, Acks.ALL), BrokerCrash(R2, 0))
    assert state.controller == ControllerState(leader=R0, leader_epoch=1, isr=frozenset({R0, R1}))
    state = run(RF3, ReplicaBecomeLeaderOrFollower(R0), start=state)
    leader = state.replicas[R0]
    assert leader.leader_epoch == 1
    assert leader.waiting_acks_all == ((0, 0),)
    assert leader.isr == frozenset({R0, R1})
    assert leader.progress == (
        None,
        FollowerProgress(None, 0),
        FollowerProgress(None, RF3.replica_lag_ticks + 1),
    )
    assert leader.log.epoch_cache == (EpochEntry(0, 0), EpochEntry(1, 1))
    state = run(RF3, ReplicaBecomeLeaderOrFollower(R1), start=state)
    follower = state.replicas[R1]
    assert (follower.role, follower.leader, follower.leader_epoch) == (Role.FOLLOWER, R0, 1)
    assert follower.phase is FetchPhase.TRUNCATING


def test_new_leader_alone_in_isr_commits_its_log_at_once():
    # broker 1 holds record 0 (HW 0) when broker 0 dies with the acks=all request waiting
    state = run(
        BASE,
        ProducerSend(R0, Acks.ALL),
        LeaderHandleFetch(R1),
        FollowerHandleFetchResponse(R1),
        BrokerCrash(R0, 1),
    )
    assert state.controller.isr == frozenset({R1})
    assert state.history.committed == frozenset()
    state = run(BASE, ReplicaBecomeLeaderOrFollower(R1), start=state)
    assert log_of(state, R1).high_watermark == 1
    assert state.history.committed == frozenset({(0, 0)})
    assert state.history.acknowledged_all == frozenset()  # the waiting request died with broker 0


def test_become_guards():
    state = initial_state(BASE)
    assert disabled(BASE, state, ReplicaBecomeLeaderOrFollower(R0))
    assert disabled(BASE, state, ReplicaBecomeLeaderOrFollower(R1))
    dead = run(BASE, BrokerCrash(R1, 0))
    assert disabled(BASE, dead, ReplicaBecomeLeaderOrFollower(R1))


# ---------------------------------------------------------------------------------------
# LeaderAdvanceLogStartOffset
# ---------------------------------------------------------------------------------------

TWO_RECORDS_PARTLY_COMMITTED = (
    ProducerSend(R0, Acks.ALL),
    LeaderHandleFetch(R1),
    FollowerHandleFetchResponse(R1),
    ProducerSend(R0, Acks.ALL),
    LeaderHandleFetch(R1),
)


def test_retention_moves_log_start_only_up_to_the_high_watermark():
    state = run(RETENTION, *TWO_RECORDS_PARTLY_COMMITTED)
    assert (log_of(state, R0).high_watermark, log_of(state, R0).log_end_offset) == (1, 2)
    assert disabled(RETENTION, state, LeaderAdvanceLogStartOffset(R0, 2))  # above the HW
    assert disabled(RETENTION, state, LeaderAdvanceLogStartOffset(R0, 0))  # not forward
    assert disabled(RETENTION, state, LeaderAdvanceLogStartOffset(R1, 1))  # not a leader
    assert disabled(BASE, run(BASE, *TWO_RECORDS_PARTLY_COMMITTED), LeaderAdvanceLogStartOffset(R0, 1))
    after = run(RETENTION, LeaderAdvanceLogStartOffset(R0, 1), start=state)
    assert log_of(after, R0) == ReplicaLog(
        log_start_offset=1, records=(Record(0, 1),), high_watermark=1, epoch_cache=(EpochEntry(0, 1),)
    )
    assert after.replicas[R1] == state.replicas[R1]


def test_followers_follow_the_leader_log_start_on_fetch():
    state = run(
        RETENTION,
        *TWO_RECORDS_PARTLY_COMMITTED,
        FollowerHandleFetchResponse(R1),
        LeaderHandleFetch(R1),
        FollowerHandleFetchResponse(R1),
    )
    assert log_of(state, R0).high_watermark == 2
    state = run(RETENTION, LeaderAdvanceLogStartOffset(R0, 2), start=state)
    assert log_of(state, R1).log_start_offset == 0
    state = run(RETENTION, LeaderHandleFetch(R1), start=state)
    response = state.replicas[R1].fetch_in_flight
    assert response is not None
    assert response.leader_log_start_offset == 2
    state = run(RETENTION, FollowerHandleFetchResponse(R1), start=state)
    assert log_of(state, R1) == ReplicaLog(
        log_start_offset=2, high_watermark=2, epoch_cache=(EpochEntry(0, 2),)
    )


# ---------------------------------------------------------------------------------------
# candidate_actions, invariants and step properties over reachable states
# ---------------------------------------------------------------------------------------

EXPLORED = [
    pytest.param(BASE, 5, id="base"),
    pytest.param(
        replace(
            BASE,
            retention=True,
            max_lossy_crashes=1,
            unclean_leader_election=True,
            producer_acks=(Acks.NONE, Acks.LEADER, Acks.ALL),
        ),
        4,
        id="everything",
    ),
    pytest.param(replace(BASE, replication_factor=3, min_insync_replicas=2, max_records=1), 3, id="rf3"),
    pytest.param(replace(BASE, truncation=TruncationRule.HIGH_WATERMARK, replica_lag_ticks=1), 4, id="hw"),
]


@pytest.mark.parametrize(("config", "depth"), EXPLORED)
def test_candidate_actions_contain_every_enabled_action(config, depth):
    for state in reachable(config, depth):
        candidates = set(candidate_actions(config, state))
        enabled = {
            action for action in every_action(config, state) if step(config, state, action) is not None
        }
        assert enabled <= candidates, (enabled - candidates, state)
        assert {action for action in candidates if step(config, state, action) is not None} == enabled


def test_candidate_actions_along_a_trace():
    config = replace(BASE, retention=True, max_lossy_crashes=1, producer_acks=(Acks.LEADER, Acks.ALL))
    state = initial_state(config)
    trace = (
        *TWO_RECORDS_PARTLY_COMMITTED,
        LeaderAdvanceLogStartOffset(R0, 1),
        BrokerCrash(R0, 1),
        ReplicaBecomeLeaderOrFollower(R1),
        BrokerRestart(R0),
        ReplicaBecomeLeaderOrFollower(R0),
    )
    for action in trace:
        assert action in set(candidate_actions(config, state)), action
        state = run(config, action, start=state)


def test_invariants_and_epoch_growth_hold_in_every_reachable_state_of_a_clean_configuration():
    for state in reachable(BASE, 5):
        assert_invariants(state)
        for action in candidate_actions(BASE, state):
            after = step(BASE, state, action)
            if after is not None:
                assert leader_epochs_only_grow(state, after), action


def test_leader_epochs_only_grow_detects_a_step_back():
    before = run(BASE, ControllerMoveLeadership(R1), ReplicaBecomeLeaderOrFollower(R1))
    assert leader_epochs_only_grow(initial_state(BASE), before)
    assert not leader_epochs_only_grow(before, initial_state(BASE))  # controller epoch 1 -> 0
    # a broker that stays up going back from epoch 1 to 0 (the controller unchanged)
    back = PartitionState(initial_state(BASE).replicas, before.controller, before.history)
    assert not leader_epochs_only_grow(before, back)
    # a crash resets the broker's epoch, which is not a step back
    crashed = run(BASE, BrokerCrash(R1, 0), start=before)
    assert crashed.replicas[R1].leader_epoch == UNDEFINED_EPOCH
    assert leader_epochs_only_grow(before, crashed)


def test_consumed_records_survive_is_broken_by_the_hw_rule_trace():
    # the committed record of the KIP-101 scenario was also read by consumers
    state = run(
        HW_RULE_3_MOVES,
        *COMMIT,
        ControllerMoveLeadership(R1),
        ControllerMoveLeadership(R0),
        ReplicaBecomeLeaderOrFollower(R1),
        FollowerTruncate(R1),
        ReplicaBecomeLeaderOrFollower(R0),
        ControllerMoveLeadership(R1),
        allowed_to_fail=DURABILITY,
    )
    assert consumed_records_survive(state)  # no true leader yet
    state = run(HW_RULE_3_MOVES, ReplicaBecomeLeaderOrFollower(R1), start=state, allowed_to_fail=DURABILITY)
    assert not consumed_records_survive(state)
