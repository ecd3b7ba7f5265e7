"""The optimized replication state machine (`impl.replication`) and its conformance adapter.

Unit tests pin each behaviour of the spec (`spec.partition`) on small hand-built histories;
the differential test drives the adapter and the spec itself with the same random actions
(including ones the guards must refuse) and compares the whole observable state after every
step.
"""

from __future__ import annotations

import random

import pytest

from conformance.impl_partition import ImplPartition
from conformance.partition_sut import (
    PartitionUnderTest,
    PartitionView,
    ProduceOutcome,
    ReplicationSettings,
    ReplicaView,
)
from impl.epoch_cache import LeaderEpochCache
from impl.replication import (
    FetchResponse,
    ProduceResult,
    ReplicatedPartition,
    ReplicationConfig,
    epoch_truncation_offset,
)
from spec import partition as spec
from spec import truncation as spec_truncation
from spec.types import Acks, EpochEntry, ErrorCode, Record, TruncationRule

NONE_ERROR = ErrorCode.NONE


def partition(**overrides: object) -> ReplicatedPartition:
    return ReplicatedPartition(ReplicationConfig(**overrides))  # type: ignore[arg-type]


def replicate(partition: ReplicatedPartition, follower: int) -> None:
    """One full fetch round trip of `follower`."""
    assert partition.leader_handle_fetch(follower)
    assert partition.follower_handle_fetch_response(follower)


def values(partition: ReplicatedPartition, replica: int) -> list[int]:
    return [record.value for record in partition.replicas[replica].log.records()]


def elected(partition: ReplicatedPartition) -> int | None:
    return partition.controller.leader


def epochs(partition: ReplicatedPartition, replica: int) -> tuple[EpochEntry, ...]:
    return partition.replicas[replica].log.epoch_cache.entries


def hw(partition: ReplicatedPartition, replica: int) -> int:
    return partition.replicas[replica].log.high_watermark


def isr(partition: ReplicatedPartition, replica: int = 0) -> set[int]:
    return set(partition.replicas[replica].isr)


# ---------------------------------------------------------------------------------------
# Initial state, produce, HW
# ---------------------------------------------------------------------------------------


def test_initial_state_is_the_specs():
    impl = ImplPartition(ReplicationSettings(replication_factor=3))
    config = spec.PartitionConfig(replication_factor=3)
    assert impl.observe() == spec_view(spec.initial_state(config))
    view = impl.observe()
    assert view.controller_leader == 0 and view.controller_epoch == 0
    assert view.replicas[0].role == "leader" and view.replicas[1].role == "follower"
    assert view.replicas[0].epoch_cache == (EpochEntry(0, 0),)


def test_leader_high_watermark_is_the_minimum_leo_over_the_isr():
    p = partition(replication_factor=3, min_insync_replicas=1)
    for value in range(3):
        p.produce(0, Acks.LEADER, value)
    assert hw(p, 0) == 0  # followers' LEOs are unknown in this epoch: the HW is blocked
    replicate(p, 1)
    assert hw(p, 0) == 0  # follower 2 still unknown
    replicate(p, 2)
    assert hw(p, 0) == 0  # both fetched at 0: min LEO over the ISR is 0
    replicate(p, 1)
    assert hw(p, 0) == 0  # follower 2 is still at 0
    assert p.leader_handle_fetch(2)  # follower 2 now reports LEO 3
    assert hw(p, 0) == 3
    p.produce(0, Acks.LEADER, 3)
    assert hw(p, 0) == 3  # the HW never goes back and never passes the ISR's minimum


def test_follower_high_watermark_is_the_leaders_capped_at_its_own_leo():
    p = partition(replication_factor=2, min_insync_replicas=1)
    for value in range(4):
        p.produce(0, Acks.LEADER, value)
    replicate(p, 1)
    replicate(p, 1)
    assert hw(p, 0) == 4 and hw(p, 1) == 4
    # A response whose HW is past what the follower holds (a hand-made one: in a real run
    # the response brings the follower to the leader's LEO).
    follower = p.replicas[1]
    follower.fetch_in_flight = FetchResponse(follower.leader_epoch, NONE_ERROR, 4, (Record(0, 99),), 9, 0, 9)
    assert p.follower_handle_fetch_response(1)
    assert follower.log.log_end_offset == 5
    assert hw(p, 1) == 5  # min(9, own LEO 5)


def test_follower_learns_the_high_watermark_one_fetch_later():
    p = partition(replication_factor=2, min_insync_replicas=1)
    p.produce(0, Acks.LEADER, 7)
    replicate(p, 1)
    assert (hw(p, 0), hw(p, 1)) == (0, 0)
    replicate(p, 1)  # this fetch tells the leader LEO 1; the response carries HW 1
    assert (hw(p, 0), hw(p, 1)) == (1, 1)


# ---------------------------------------------------------------------------------------
# ISR shrink and expand
# ---------------------------------------------------------------------------------------


def test_isr_shrinks_only_after_the_lag_limit_and_the_hw_then_advances():
    p = partition(replication_factor=3, min_insync_replicas=1, replica_lag_ticks=1)
    replicate(p, 1)
    replicate(p, 2)
    p.produce(0, Acks.ALL, 10)
    replicate(p, 1)
    assert p.leader_handle_fetch(1)  # follower 1 at the LEO; follower 2 never fetched the record
    assert not p.leader_shrink_isr(0, 1)  # caught up
    assert not p.leader_shrink_isr(0, 2)  # behind, but lagging 0 ticks
    assert p.clock_tick()
    assert not p.leader_shrink_isr(0, 2)  # 1 tick: still within replica.lag.time.max.ms
    assert p.clock_tick()
    assert p.acknowledged == []
    assert p.leader_shrink_isr(0, 2)
    assert isr(p) == {0, 1} and p.controller.isr == frozenset({0, 1})
    assert p.controller.leader_epoch == 0  # an ISR change by the leader keeps the epoch
    assert hw(p, 0) == 1 and p.acknowledged == [(0, 10)]
    assert not p.leader_shrink_isr(0, 2)  # already out
    assert not p.leader_shrink_isr(0, 0)  # the leader never removes itself


def test_clock_tick_is_disabled_once_every_isr_follower_reached_the_cap():
    p = partition(replication_factor=2, min_insync_replicas=1, replica_lag_ticks=0)
    assert p.clock_tick()
    assert not p.clock_tick()  # the age is capped at lag + 1: nothing can grow
    replicate(p, 1)  # caught up again: age 0
    assert p.clock_tick()


def test_isr_expands_at_the_hw_and_the_epoch_start():
    p = partition(replication_factor=3, min_insync_replicas=1, replica_lag_ticks=0)
    replicate(p, 1)
    replicate(p, 2)
    for value in range(3):
        p.produce(0, Acks.LEADER, value)
    p.clock_tick()
    p.clock_tick()
    assert p.leader_shrink_isr(0, 2)
    replicate(p, 1)  # follower 1 holds offsets 0..2; the leader's HW is still 0
    assert p.controller_move_leadership(1)
    assert p.become_leader_or_follower(1)
    assert p.replicas[1].log.epoch_cache.entries[-1] == EpochEntry(1, 3)  # KAFKA-7415: at its LEO
    assert p.become_leader_or_follower(2)
    assert p.follower_truncate(2)
    replicate(p, 2)  # fetch at 0: reached the HW (0) but not the epoch start (3)
    assert isr(p, 1) == {0, 1}
    assert p.leader_handle_fetch(2)  # fetch at 3: at the HW and the epoch start
    assert isr(p, 1) == {0, 1, 2} and p.controller.isr == frozenset({0, 1, 2})


def test_a_zombie_leader_accepts_writes_but_cannot_change_the_isr():
    p = partition(replication_factor=3, min_insync_replicas=1)
    p.produce(0, Acks.LEADER, 1)
    assert p.controller_move_leadership(1)  # broker 0 has not learned it yet: a zombie
    p.clock_tick()
    p.clock_tick()
    assert not p.leader_shrink_isr(0, 2)  # its ZooKeeper write would fail (zkVersion)
    assert p.produce(0, Acks.LEADER, 2) == _outcome(1, completed=True)
    assert values(p, 0) == [1, 2] and p.acknowledged == [(0, 1), (1, 2)]


# ---------------------------------------------------------------------------------------
# acks and min.insync.replicas
# ---------------------------------------------------------------------------------------


def test_acks_all_completes_in_offset_order_when_the_hw_passes():
    p = partition(replication_factor=2, min_insync_replicas=2)
    outcomes = [p.produce(0, Acks.ALL, value) for value in (10, 11, 12)]
    assert [outcome.offset for outcome in outcomes if outcome] == [0, 1, 2]
    assert not any(outcome.completed for outcome in outcomes if outcome)
    assert p.produce(0, Acks.LEADER, 13) == _outcome(3, completed=True)
    assert p.acknowledged == [(3, 13)]  # acks=1: on append
    replicate(p, 1)
    assert p.acknowledged == [(3, 13)]
    p.produce(0, Acks.ALL, 14)
    assert p.leader_handle_fetch(1)  # follower at 4: HW 4 passes offsets 0..2 but not 4
    assert p.acknowledged == [(3, 13), (0, 10), (1, 11), (2, 12)]
    assert list(p.replicas[0].waiting_acks_all) == [(4, 14)]


def test_acks_all_alone_in_the_isr_completes_at_once():
    p = partition(replication_factor=1, min_insync_replicas=1)
    assert p.produce(0, Acks.ALL, 5) == _outcome(0, completed=False)
    assert p.acknowledged == [(0, 5)] and hw(p, 0) == 1  # acknowledged in the same step
    assert p.produce(0, Acks.NONE, 6) == _outcome(1, completed=True)
    assert p.acknowledged == [(0, 5)]  # acks=0 is never acknowledged


def test_not_enough_replicas_refuses_before_appending():
    p = partition(replication_factor=2, min_insync_replicas=2, replica_lag_ticks=0)
    p.produce(0, Acks.LEADER, 1)
    p.clock_tick()
    assert p.leader_shrink_isr(0, 1)
    refused = p.produce(0, Acks.ALL, 2)
    assert refused == ProduceResult(ErrorCode.NOT_ENOUGH_REPLICAS, None, True)
    assert values(p, 0) == [1]  # nothing appended
    assert p.produce(0, Acks.LEADER, 3) == _outcome(1, completed=True)  # acks=1 is not checked


def test_not_enough_replicas_after_append_when_the_isr_shrinks_meanwhile():
    p = partition(replication_factor=3, min_insync_replicas=3, replica_lag_ticks=0)
    replicate(p, 1)
    replicate(p, 2)
    p.produce(0, Acks.ALL, 1)
    replicate(p, 1)
    p.clock_tick()
    assert p.leader_shrink_isr(0, 2)  # the HW passes offset 0 with only 2 in the ISR
    assert hw(p, 0) == 0
    assert p.leader_handle_fetch(1)
    assert hw(p, 0) == 1
    assert p.acknowledged == []  # answered NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert not p.replicas[0].waiting_acks_all
    assert values(p, 0) == [1]  # the record stays


def test_a_demoted_leader_drops_its_waiting_produces_and_a_reelected_one_keeps_them():
    p = partition(replication_factor=3, min_insync_replicas=2)
    p.produce(0, Acks.ALL, 1)
    assert p.broker_crash(2, 0)  # the controller drops 2 from the ISR: epoch 1, leader still 0
    assert p.controller.leader == 0 and p.controller.leader_epoch == 1
    assert p.become_leader_or_follower(0)
    assert list(p.replicas[0].waiting_acks_all) == [(0, 1)]
    assert p.controller_move_leadership(1)
    assert p.become_leader_or_follower(0)
    assert p.replicas[0].role.value == "follower" and not p.replicas[0].waiting_acks_all


# ---------------------------------------------------------------------------------------
# Truncation
# ---------------------------------------------------------------------------------------


def test_epoch_truncation_matches_the_spec_on_random_caches():
    rng = random.Random(4)
    for _ in range(2000):
        follower, follower_end = random_cache(rng), 0
        leader, leader_end = random_cache(rng), 0
        follower_end = (follower[-1].start_offset if follower else 0) + rng.randint(0, 3)
        leader_end = (leader[-1].start_offset if leader else 0) + rng.randint(0, 3)
        follower_hw = rng.randint(0, follower_end)
        expected = spec_truncation.epoch_truncation_offset(
            follower, follower_end, follower_hw, leader, leader_end
        )
        got = epoch_truncation_offset(
            follower, follower_end, follower_hw, LeaderEpochCache(leader), leader_end
        )
        assert got == expected, (follower, follower_end, follower_hw, leader, leader_end)


def random_cache(rng: random.Random) -> tuple[EpochEntry, ...]:
    entries: list[EpochEntry] = []
    epoch, offset = -1, 0
    for _ in range(rng.randint(0, 4)):
        epoch += rng.randint(1, 2)
        offset += rng.randint(0 if not entries else 1, 3)
        entries.append(EpochEntry(epoch, offset))
    return tuple(entries)


def test_kip_279_divergence_after_several_leader_changes_takes_several_rounds():
    # The follower wrote in epochs 0, 1 and 3 (it led 1 and 3 without the others seeing
    # them); the leader knows 0, 2 and 4. Asking for 3, the follower hears (2, 5): an epoch
    # it never saw, so it cuts to where its own epoch 1 ends (4), forgets epoch 3 and asks
    # for 1, hears (0, 3) and truncates to 3: the records of its epoch 1 diverge too.
    follower = (EpochEntry(0, 0), EpochEntry(1, 3), EpochEntry(3, 4))
    leader = LeaderEpochCache([EpochEntry(0, 0), EpochEntry(2, 3), EpochEntry(4, 5)])
    assert epoch_truncation_offset(follower, 6, 0, leader, 7) == 3
    assert spec_truncation.epoch_truncation_offset(follower, 6, 0, leader.entries, 7) == 3


def test_epoch_truncation_keeps_committed_records_across_leader_changes():
    p = partition(replication_factor=3, min_insync_replicas=1)
    for value in range(2):
        p.produce(0, Acks.ALL, value)
    replicate(p, 1)
    replicate(p, 2)
    replicate(p, 1)  # leader HW 2 after both followers reported LEO 2
    p.produce(0, Acks.LEADER, 2)  # offset 2 in epoch 0 only on broker 0
    # Leadership moves to 1 (epoch 1), which writes offset 2 in epoch 1; then to 2 (epoch 2).
    assert p.controller_move_leadership(1)
    for replica in (0, 1, 2):
        assert p.become_leader_or_follower(replica)
    p.produce(1, Acks.LEADER, 20)
    assert p.follower_truncate(2)
    replicate(p, 2)
    assert p.controller_move_leadership(2)
    for replica in (0, 1, 2):
        p.become_leader_or_follower(replica)
    assert values(p, 2) == [0, 1, 20]
    # Broker 0 still holds [0, 1, 2]: its epoch-0 offset 2 conflicts with epoch 1's.
    assert p.follower_truncate(0)
    assert values(p, 0) == [0, 1]  # only the uncommitted, conflicting record went
    replicate(p, 0)
    assert values(p, 0) == [0, 1, 20]
    assert p.follower_truncate(1)
    assert values(p, 1) == [0, 1, 20]  # nothing to cut: it wrote epoch 1's records


@pytest.mark.parametrize("rule", list(TruncationRule))
def test_a_restarted_follower_truncates_by_its_rule(rule: TruncationRule):
    p = partition(replication_factor=2, min_insync_replicas=1, truncation=rule)
    p.produce(0, Acks.ALL, 1)
    replicate(p, 1)
    assert p.leader_handle_fetch(1)  # leader HW 1: committed and acknowledged
    assert p.acknowledged == [(0, 1)] and hw(p, 1) == 0  # the response with HW 1 is in flight
    assert p.broker_crash(1, 1)  # the follower restarts with its whole log, but HW 0
    assert p.broker_restart(1)
    assert p.become_leader_or_follower(0) and p.become_leader_or_follower(1)
    assert p.follower_truncate(1)
    if rule is TruncationRule.HIGH_WATERMARK:
        assert values(p, 1) == []  # KIP-101 scenario 1: the committed record is cut
    else:
        assert values(p, 1) == [1]  # OffsetsForLeaderEpoch: epoch 0 ends at 1 on the leader too


def test_hw_truncation_needs_no_live_leader():
    p = partition(replication_factor=2, min_insync_replicas=1, truncation=TruncationRule.HIGH_WATERMARK)
    p.produce(0, Acks.LEADER, 1)
    replicate(p, 1)
    assert p.broker_crash(0, 1)  # broker 1 leads epoch 1
    assert p.become_leader_or_follower(1)
    assert p.broker_restart(0)
    assert p.become_leader_or_follower(0)
    assert p.broker_crash(1, 1)  # the leader broker 0 follows is dead now
    assert p.follower_truncate(0)  # the hw rule asks nobody


# ---------------------------------------------------------------------------------------
# Crash, restart, elections, retention
# ---------------------------------------------------------------------------------------


def test_crash_loses_the_unflushed_suffix_and_forgets_memory():
    p = partition(replication_factor=2, min_insync_replicas=1)
    for value in range(4):
        p.produce(0, Acks.ALL, value)
    replicate(p, 1)
    replicate(p, 1)
    assert hw(p, 1) == 4
    assert not p.broker_crash(1, 5)  # past its LEO
    assert not p.broker_crash(1, -1)
    assert p.broker_crash(1, 2)
    replica = p.replicas[1]
    assert not replica.alive and values(p, 1) == [0, 1] and hw(p, 1) == 2
    assert replica.role.value == "unknown" and replica.leader_epoch == -1
    assert p.controller.isr == frozenset({0}) and p.controller.leader_epoch == 1
    assert not p.broker_crash(1, 0)  # already dead
    assert not p.become_leader_or_follower(1)
    assert p.broker_restart(1)
    assert not p.broker_restart(1)
    assert p.become_leader_or_follower(1)
    assert not p.follower_truncate(1)  # KIP-320: leader 0 has not applied epoch 1 yet
    assert p.become_leader_or_follower(0)
    assert p.follower_truncate(1)
    replicate(p, 1)
    assert values(p, 1) == [0, 1, 2, 3]


def test_a_clean_crash_still_forgets_an_epoch_assigned_at_the_log_end():
    p = partition(replication_factor=2, min_insync_replicas=1)
    p.produce(0, Acks.LEADER, 1)
    assert p.controller_move_leadership(1)
    assert p.become_leader_or_follower(1)
    assert epochs(p, 1) == (EpochEntry(1, 0),)
    assert p.broker_crash(1, 0)
    assert epochs(p, 1) == ()


def test_clean_election_leaves_the_partition_offline_and_unclean_loses_committed_data():
    for unclean in (False, True):
        p = partition(replication_factor=2, min_insync_replicas=1, unclean_leader_election=unclean)
        p.produce(0, Acks.ALL, 1)
        p.clock_tick()
        assert p.leader_shrink_isr(0, 1)  # ISR = {0}; the write is committed on the leader alone
        assert p.acknowledged == [(0, 1)]
        assert p.broker_crash(0, 1)
        if not unclean:
            assert elected(p) is None and p.controller.isr == frozenset({0})
            assert p.broker_restart(0) and elected(p) == 0  # it comes back as leader
            continue
        assert elected(p) == 1 and p.controller.isr == frozenset({1})
        assert p.become_leader_or_follower(1)
        assert values(p, 1) == []  # the acknowledged, committed record is lost
        assert p.broker_restart(0)
        assert p.become_leader_or_follower(0)
        assert p.follower_truncate(0)
        assert values(p, 0) == []


def test_unclean_election_on_restart_of_a_replica_outside_the_isr():
    p = partition(replication_factor=2, min_insync_replicas=1, unclean_leader_election=True)
    assert p.broker_crash(1, 0)
    assert p.broker_crash(0, 0)  # the last ISR member dies: nobody alive to elect
    assert elected(p) is None
    assert p.broker_restart(1)
    assert elected(p) == 1 and p.controller.isr == frozenset({1})


def test_controller_move_leadership_needs_a_live_isr_member():
    p = partition(replication_factor=3, min_insync_replicas=1)
    assert not p.controller_move_leadership(0)  # already leads
    assert p.broker_crash(2, 0)
    assert not p.controller_move_leadership(2)  # out of the ISR (and dead)
    assert p.controller_move_leadership(1)
    assert p.controller.leader_epoch == 2


def test_fetch_is_fenced_by_leader_epoch():
    p = partition(replication_factor=2, min_insync_replicas=1)
    assert p.leader_handle_fetch(1)
    assert not p.leader_handle_fetch(1)  # one fetch in flight at a time
    assert p.controller_move_leadership(1)
    assert p.become_leader_or_follower(0)  # broker 0 follows 1 in epoch 1; 1 has not applied it
    assert not p.follower_truncate(0)  # KIP-320: leader 1 is still on epoch 0
    assert p.follower_handle_fetch_response(1)  # broker 1 still follows 0 in epoch 0
    assert not p.leader_handle_fetch(1)  # its leader left epoch 0: fenced
    assert p.become_leader_or_follower(1)
    assert p.follower_truncate(0)


def test_retention_moves_the_log_start_and_followers_follow():
    p = partition(replication_factor=2, min_insync_replicas=1)
    for value in range(3000):
        p.produce(0, Acks.LEADER, value)
    replicate(p, 1)
    replicate(p, 1)
    assert not p.advance_log_start_offset(0, 0)  # not forward
    assert not p.advance_log_start_offset(0, 3001)  # past the HW
    assert not p.advance_log_start_offset(1, 5)  # not a leader
    assert p.advance_log_start_offset(0, 2500)  # compacts the list underneath
    log = p.replicas[0].log
    assert log.log_start_offset == 2500 and log.record_at(2499) is None
    assert log.record_at(2500) == Record(0, 2500) and len(log.records()) == 500
    assert log.epoch_cache.entries == (EpochEntry(0, 2500),)
    p.produce(0, Acks.LEADER, 3000)
    replicate(p, 1)
    assert p.replicas[1].log.log_start_offset == 2500
    assert p.consumer_fetch(0, 2998) == [Record(0, 2998), Record(0, 2999)]


def test_a_follower_behind_the_leaders_log_start_restarts_its_log_there():
    p = partition(replication_factor=2, min_insync_replicas=1, replica_lag_ticks=0)
    for value in range(5):
        p.produce(0, Acks.LEADER, value)
    p.clock_tick()
    assert p.leader_shrink_isr(0, 1)
    assert p.advance_log_start_offset(0, 4)
    replicate(p, 1)  # fetch at 0 < log start 4: OFFSET_OUT_OF_RANGE
    log = p.replicas[1].log
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (4, 4, 4)
    replicate(p, 1)
    assert values(p, 1) == [4]


# ---------------------------------------------------------------------------------------
# Differential test against the spec itself
# ---------------------------------------------------------------------------------------


def _outcome(offset: int, *, completed: bool) -> ProduceResult:
    return ProduceResult(NONE_ERROR, offset, completed)


def spec_view(state: spec.PartitionState) -> PartitionView:
    """The spec state as the observable view."""
    replicas = tuple(
        ReplicaView(
            alive=replica.alive,
            role=replica.role.value,
            leader_epoch=replica.leader_epoch,
            leader=replica.leader,
            log_start_offset=replica.log.log_start_offset,
            records=replica.log.records,
            high_watermark=replica.log.high_watermark,
            epoch_cache=replica.log.epoch_cache,
            isr=replica.isr,
        )
        for replica in state.replicas
    )
    controller = state.controller
    return PartitionView(
        replicas, controller.leader, controller.leader_epoch, controller.isr, state.history.acknowledged
    )


HUGE = 10**9


def spec_config(settings: ReplicationSettings) -> spec.PartitionConfig:
    return spec.PartitionConfig(
        replication_factor=settings.replication_factor,
        min_insync_replicas=settings.min_insync_replicas,
        producer_acks=(Acks.NONE, Acks.LEADER, Acks.ALL),
        unclean_leader_election=settings.unclean_leader_election,
        truncation=settings.truncation,
        replica_lag_ticks=settings.replica_lag_ticks,
        max_records=HUGE,
        max_leader_moves=HUGE,
        max_crashes=HUGE,
        max_lossy_crashes=HUGE,
        controller_elections=True,
        retention=True,
    )


WEIGHTS = {
    "produce": 8,
    "fetch": 8,
    "response": 8,
    "truncate": 4,
    "shrink": 2,
    "tick": 3,
    "move": 1,
    "crash": 1,
    "restart": 2,
    "become": 5,
    "retention": 1,
}


def random_action(
    rng: random.Random, config: spec.PartitionConfig, state: spec.PartitionState
) -> spec.Action:
    """Mostly an action the spec proposes (of a random kind, so crashes do not dominate),
    sometimes an arbitrary one, to check that both refuse the same things."""
    if rng.random() < 0.75:
        by_kind: dict[type, list[spec.Action]] = {}
        for candidate in spec.candidate_actions(config, state):
            by_kind.setdefault(type(candidate), []).append(candidate)
        kinds = list(by_kind)
        kind = rng.choices(kinds, weights=[CANDIDATE_WEIGHTS.get(kind.__name__, 1) for kind in kinds])[0]
        return rng.choice(by_kind[kind])
    return arbitrary_action(rng, state, config.replication_factor)


CANDIDATE_WEIGHTS = {"ProducerSend": 3, "LeaderHandleFetch": 3, "FollowerHandleFetchResponse": 3}


def arbitrary_action(rng: random.Random, state: spec.PartitionState, replicas: int) -> spec.Action:
    kind = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
    replica = rng.randrange(replicas)
    log = state.replicas[replica].log
    if kind == "produce":
        return spec.ProducerSend(replica, rng.choice([Acks.NONE, Acks.LEADER, Acks.ALL, Acks.ALL]))
    if kind == "fetch":
        return spec.LeaderHandleFetch(replica)
    if kind == "response":
        return spec.FollowerHandleFetchResponse(replica)
    if kind == "truncate":
        return spec.FollowerTruncate(replica)
    if kind == "shrink":
        return spec.LeaderShrinkIsr(replica, rng.randrange(replicas))
    if kind == "tick":
        return spec.ClockTick()
    if kind == "move":
        return spec.ControllerMoveLeadership(replica)
    if kind == "crash":
        end = rng.randint(log.log_start_offset - 1, log.log_end_offset + 1)
        return spec.BrokerCrash(replica, end)
    if kind == "restart":
        return spec.BrokerRestart(replica)
    if kind == "become":
        return spec.ReplicaBecomeLeaderOrFollower(replica)
    return spec.LeaderAdvanceLogStartOffset(
        replica, rng.randint(log.log_start_offset, log.high_watermark + 1)
    )


def apply_to_target(target: PartitionUnderTest, action: spec.Action, value: int) -> object:
    match action:
        case spec.ProducerSend(leader, acks):
            return target.produce(leader, acks, value)
        case spec.LeaderHandleFetch(follower):
            return target.leader_handle_fetch(follower)
        case spec.FollowerHandleFetchResponse(follower):
            return target.follower_handle_fetch_response(follower)
        case spec.FollowerTruncate(follower):
            return target.follower_truncate(follower)
        case spec.LeaderShrinkIsr(leader, follower):
            return target.leader_shrink_isr(leader, follower)
        case spec.ClockTick():
            return target.clock_tick()
        case spec.ControllerMoveLeadership(new_leader):
            return target.controller_move_leadership(new_leader)
        case spec.BrokerCrash(replica, surviving_end):
            return target.broker_crash(replica, surviving_end)
        case spec.BrokerRestart(replica):
            return target.broker_restart(replica)
        case spec.ReplicaBecomeLeaderOrFollower(replica):
            return target.become_leader_or_follower(replica)
        case spec.LeaderAdvanceLogStartOffset(leader, new_start):
            return target.advance_log_start_offset(leader, new_start)
    raise AssertionError(f"unknown action {action!r}")


def expected_produce(
    before: spec.PartitionState, after: spec.PartitionState | None, action: spec.ProducerSend
) -> ProduceOutcome | None:
    """What the producer is told, read off the spec's transition."""
    leader = before.replicas[action.leader]
    if not spec.acts_as_leader(before, action.leader):
        return None
    if after is None or after.history.next_value == before.history.next_value:
        # Refused: NOT_ENOUGH_REPLICAS (the spec disables the second refusal, which only
        # bounds its state space; Kafka answers it every time).
        return ProduceOutcome(ErrorCode.NOT_ENOUGH_REPLICAS, None, True)
    return ProduceOutcome(NONE_ERROR, leader.log.log_end_offset, action.acks is not Acks.ALL)


def run_differential(settings: ReplicationSettings, seed: int, steps: int) -> int:
    """Drive the spec and the adapter in lockstep; returns how many actions were enabled."""
    rng = random.Random(seed)
    config = spec_config(settings)
    state = spec.initial_state(config)
    target = ImplPartition(settings)
    enabled = 0
    trace: list[str] = []
    for _ in range(steps):
        action = random_action(rng, config, state)
        trace.append(repr(action))
        after = spec.step(config, state, action)
        answer = apply_to_target(target, action, state.history.next_value)
        if isinstance(action, spec.ProducerSend):
            expected: object = expected_produce(state, after, action)
        else:
            expected = after is not None
        context = f"settings {settings}, seed {seed}, trace:\n  " + "\n  ".join(trace)
        assert answer == expected, f"{action}: target {answer!r}, spec {expected!r}\n{context}"
        if after is not None:
            state = after
            enabled += 1
        assert target.observe() == spec_view(state), context
    return enabled


SETTINGS = [
    ReplicationSettings(3, 2, False, TruncationRule.LEADER_EPOCH, 0),
    ReplicationSettings(3, 1, True, TruncationRule.LEADER_EPOCH, 1),
    ReplicationSettings(3, 3, False, TruncationRule.HIGH_WATERMARK, 0),
    ReplicationSettings(2, 1, True, TruncationRule.HIGH_WATERMARK, 2),
    ReplicationSettings(2, 2, True, TruncationRule.LEADER_EPOCH, 0),
    ReplicationSettings(1, 1, False, TruncationRule.LEADER_EPOCH, 0),
]


@pytest.mark.parametrize(
    "settings",
    SETTINGS,
    ids=lambda s: (
        f"r{s.replication_factor}-min{s.min_insync_replicas}-"
        f"{'unclean' if s.unclean_leader_election else 'clean'}-{s.truncation.value}-lag{s.replica_lag_ticks}"
    ),
)
def test_impl_matches_the_spec_action_for_action(settings: ReplicationSettings):
    enabled = 0
    for seed in range(40):
        enabled += run_differential(settings, seed, steps=80)
    assert enabled > 40 * 80 // 2  # the random actions are not mostly refused
